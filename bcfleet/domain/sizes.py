"""The instance sizes of doc 004 and their credits; used by compute settings, spares and metering.

Each size names two different computes: what a service replica gets (vCPU is a
limit) and what an index pod gets (the "+" after its vCPU means it can burst
above it when CPU is free; memory is a hard limit). Names are the stable
`small | medium | large | xlarge` of the CLI and JSON; labels are what people
read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from bcfleet.domain.bounds import INT32_MAX
from bcfleet.errors import InvalidInputError

SizeName = Literal["small", "medium", "large", "xlarge"]
SIZE_NAMES: tuple[SizeName, ...] = ("small", "medium", "large", "xlarge")

SPARES_MAX = 10
"""The most spare instances kept per size; a higher request is kept as this."""

SPARES_ASKED_MAX = INT32_MAX
"""The most spares a request may name (CLI, HTTP, FleetConfig): up to it, a count above
SPARES_MAX is kept as SPARES_MAX with a notice; above it, INVALID_INPUT (a whole-number
bound every edge and schema shares, so no edge refuses what another keeps as 10)."""

CREDITS_PER_INSTANCE_HOUR = 1
"""Every size currently uses 1 credit per instance per hour."""

HOURS_PER_MONTH = 720
"""A month of always-on spares: 30 days of 24 hours."""

DEFAULT_SIZE = "medium"
"""What everything runs on until a tenant sets a default; clearing the default returns to it."""

API_DEFAULT_SIZE = "medium"
"""The size of a service created through the API without one, regardless of the tenant's default."""

LEGACY_SERVICE_SIZE = "large"
"""Services deployed before sizes existed ran with 8 GiB of memory, which matches Large."""


@dataclass(frozen=True)
class ServiceCompute:
    """The compute of one service replica: both numbers are limits."""

    vcpu: int
    memory_gib: int

    def describe(self) -> str:
        return f"{self.vcpu} vCPU, {self.memory_gib} GiB memory"


@dataclass(frozen=True)
class IndexCompute:
    """The compute of one index pod: vCPU is a floor it may burst above, memory a hard limit."""

    vcpu: Decimal
    memory_gib: int
    burstable: bool = True

    def describe(self) -> str:
        plus = "+" if self.burstable else ""
        return f"{self.vcpu}{plus} vCPU, {self.memory_gib} GiB memory"


@dataclass(frozen=True)
class InstanceSize:
    name: str
    label: str
    service: ServiceCompute
    index: IndexCompute
    credits_per_instance_hour: int = CREDITS_PER_INSTANCE_HOUR


SIZES: Mapping[str, InstanceSize] = {
    size.name: size
    for size in (
        InstanceSize("small", "Small", ServiceCompute(1, 2), IndexCompute(Decimal("0.4"), 4)),
        InstanceSize("medium", "Medium", ServiceCompute(1, 4), IndexCompute(Decimal("0.9"), 8)),
        InstanceSize("large", "Large", ServiceCompute(2, 8), IndexCompute(Decimal("1.7"), 16)),
        InstanceSize(
            "xlarge", "Extra large", ServiceCompute(4, 16), IndexCompute(Decimal("3.5"), 32)
        ),
    )
}


def parse_size(raw: object, *, field: str = "size") -> str:
    """A size name from user input (case and surrounding blanks ignored), else INVALID_INPUT."""
    name = raw.strip().lower() if isinstance(raw, str) else ""
    if name in SIZES:
        return name
    valid = ", ".join(SIZE_NAMES)
    raise InvalidInputError(
        f"Unknown instance size {raw!r}: valid sizes are {valid}",
        {"field": field, "value": raw if isinstance(raw, str) else repr(raw), "valid": SIZE_NAMES},
    )


def get_size(name: str) -> InstanceSize:
    """The catalogue entry of a size name (parsed like user input)."""
    return SIZES[parse_size(name)]


def label(name: str) -> str:
    """The label people read: 'xlarge' → 'Extra large'."""
    return get_size(name).label


def label_with_shape(name: str) -> str:
    """A size with its service compute, as the Default size list shows it.

    'medium' → 'Medium (1 vCPU, 4 GiB memory)'.
    """
    size = get_size(name)
    return f"{size.label} ({size.service.describe()})"


def describe_both(name: str) -> str:
    """Both computes of a size, as the Compute tab lists them."""
    size = get_size(name)
    return f"{size.label}: Services {size.service.describe()}. Indexes {size.index.describe()}."


def size_for_api_service(requested: object | None) -> str:
    """The size of a service created through the API: the one asked for, else Medium."""
    if requested is None:
        return API_DEFAULT_SIZE
    return parse_size(requested)


def size_of_legacy_service(size: str | None) -> str:
    """A service's own size; one deployed before sizes existed (no size) is Large."""
    return LEGACY_SERVICE_SIZE if size is None else parse_size(size)


def kept_spares(requested: int) -> int:
    """The spares actually kept for a request: at most SPARES_MAX (15 keeps 10).

    Every edge calls this (through compute_settings.draft_change): negative, non-integer
    or above SPARES_ASKED_MAX is INVALID_INPUT.
    """
    if isinstance(requested, bool) or not isinstance(requested, int):
        raise InvalidInputError(
            f"Spare instances must be a whole number, not {requested!r}",
            {"field": "spares", "value": repr(requested)},
        )
    if requested < 0:
        raise InvalidInputError(
            f"Spare instances can't be negative (got {requested}); use 0 to keep none ready",
            {"field": "spares", "value": requested, "min": 0, "max": SPARES_MAX},
        )
    if requested > SPARES_ASKED_MAX:
        raise InvalidInputError(
            f"Spare instances must be at most {SPARES_ASKED_MAX:,} (got a larger number); "
            f"above {SPARES_MAX} we keep {SPARES_MAX}",
            {"field": "spares", "min": 0, "max": SPARES_ASKED_MAX},
        )
    return min(requested, SPARES_MAX)


def credits_per_month(spares: int) -> int:
    """Credits the spares of one size use in a month: kept spares × 720 h × 1 credit (2 → 1,440).

    A request above the maximum costs what is actually kept (10 spares), so the
    column never shows credits for instances that will not run.
    """
    return kept_spares(spares) * HOURS_PER_MONTH * CREDITS_PER_INSTANCE_HOUR


def total_credits_per_month(spares_by_size: Mapping[str, int], enabled: Iterable[str]) -> int:
    """The Total: the sum of Credits per month over the enabled sizes only."""
    on = {parse_size(name) for name in enabled}
    return sum(
        credits_per_month(spares)
        for name, spares in spares_by_size.items()
        if parse_size(name) in on
    )


def format_credits(credits: int) -> str:
    """Credits as people read them: 1440 → '1,440' (credits only, never money)."""
    return f"{credits:,}"

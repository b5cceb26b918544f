"""A tenant's compute settings and the rules for changing them (doc 004); the settings API calls it.

Defaults, for a tenant that never saved anything: every size enabled, 0 spare
instances each (no credits spent until an admin asks for spares), no default
size chosen, so the effective default is Medium. Enabling all sizes keeps
services deployed before sizes existed (Large) and any index pod size usable
from the start; spares, not enabled sizes, are what cost credits.

`apply_change(current, change, users)` is the whole save: it validates the
input, applies the change, enforces the default-size rules and the in-use rule,
and returns the new settings with the success message, or raises. The caller
runs it inside the transaction that writes the result, with `users` loaded in
that same transaction, so something that started using a size after the form
was opened still blocks the save.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Literal

from bcfleet.domain.sizes import (
    DEFAULT_SIZE,
    SIZE_NAMES,
    SPARES_MAX,
    credits_per_month,
    kept_spares,
    label,
    label_with_shape,
    parse_size,
    size_of_legacy_service,
)
from bcfleet.domain.states import PoolKind
from bcfleet.errors import InvalidInputError, SizeInUseError

SAVED_MESSAGE = "Your compute settings are saved."


@dataclass(frozen=True)
class SizeSetting:
    size: str
    enabled: bool = True
    spares: int = 0


def default_sizes() -> tuple[SizeSetting, ...]:
    """Every size of the catalogue, on, with no spares: a tenant that never saved."""
    return tuple(SizeSetting(name) for name in SIZE_NAMES)


@dataclass(frozen=True)
class ComputeSettings:
    """One tenant's settings: one SizeSetting per catalogue size, in catalogue order."""

    sizes: tuple[SizeSetting, ...] = field(default_factory=default_sizes)
    default_size: str | None = None
    serverless_pool: str | None = None

    def __post_init__(self) -> None:
        names = tuple(s.size for s in self.sizes)
        if names != SIZE_NAMES:
            raise InvalidInputError(
                f"Compute settings need one entry per size in order {SIZE_NAMES}, got {names}",
                {"field": "sizes"},
            )
        for s in self.sizes:
            if kept_spares(s.spares) != s.spares:
                raise InvalidInputError(
                    f"Spare instances of {label(s.size)} must be 0 to {SPARES_MAX}",
                    {"field": "spares", "size": s.size, "value": s.spares},
                )
        if self.default_size is not None:
            parse_size(self.default_size, field="defaultSize")

    def setting(self, size: str) -> SizeSetting:
        name = parse_size(size)
        return next(s for s in self.sizes if s.size == name)

    def is_enabled(self, size: str) -> bool:
        return self.setting(size).enabled

    def enabled_sizes(self) -> tuple[str, ...]:
        return tuple(s.size for s in self.sizes if s.enabled)

    def with_size(
        self, size: str, *, enabled: bool | None = None, spares: int | None = None
    ) -> ComputeSettings:
        """A copy with one size's switch or spare count replaced."""
        name = parse_size(size)
        updated = tuple(
            replace(
                s,
                enabled=s.enabled if enabled is None else enabled,
                spares=s.spares if spares is None else spares,
            )
            if s.size == name
            else s
            for s in self.sizes
        )
        return replace(self, sizes=updated)


def serverless_pool_problem(pool_name: str, pool_kind: str) -> str | None:
    """Why a pool cannot hold a tenant's spare instances, or None: they run on vps-host pools."""
    if pool_kind == PoolKind.VPS_HOST:
        return None
    return f"pool {pool_name!r} is a {pool_kind} pool; spare instances run on a vps-host pool"


NO_SERVERLESS_POOL = "- (no spare instances are kept)"
"""How a tenant without a serverless pool reads, in the CLI and the console alike."""


def keeps_spares(settings: ComputeSettings) -> bool:
    """Whether any spare instances are kept at all: only in a serverless pool, so not without one."""
    return settings.serverless_pool is not None


def serverless_pool_text(pool_name: str | None) -> str:
    """The Serverless pool line's value: the pool's name, or that no spare instances are kept."""
    return pool_name or NO_SERVERLESS_POOL


def effective_default(settings: ComputeSettings) -> str:
    """The size the UI preselects and Studio runs use: the chosen default, else Medium."""
    return settings.default_size or DEFAULT_SIZE


def default_size_choices(settings: ComputeSettings) -> tuple[tuple[str, str], ...]:
    """The Default size list: (name, 'Medium (1 vCPU, 4 GiB memory)') for each enabled size."""
    return tuple((name, label_with_shape(name)) for name in settings.enabled_sizes())


def is_default_locked(settings: ComputeSettings, size: str) -> bool:
    """Whether a size's Enabled switch is locked: it is the chosen default size."""
    return settings.default_size == parse_size(size)


def can_use_size(settings: ComputeSettings, size: str, current: str | None = None) -> bool:
    """Whether a service or index may take a size: it is enabled, or the user already has it."""
    name = parse_size(size)
    return settings.is_enabled(name) or name == current


# ---------------------------------------------------------------------------
# Users of sizes


@dataclass(frozen=True)
class ServiceUse:
    """A service as the in-use check sees it; size None is a service from before sizes (Large)."""

    id: str
    workspace: str
    name: str
    hosting: Literal["serverless", "managed"]
    deployed: bool
    size: str | None = None
    environment: str | None = None


@dataclass(frozen=True)
class IndexUse:
    """A pipeline index; pod_size None means the default pod size, which never blocks a size."""

    id: str
    workspace: str
    name: str
    pod_size: str | None
    deployed: bool


@dataclass(frozen=True)
class EnvironmentUse:
    """A fleet environment; its services run on its size."""

    id: str
    name: str
    size: str


@dataclass(frozen=True)
class SizeUsers:
    """Everything of one tenant that can hold a size, loaded in the saving transaction."""

    services: tuple[ServiceUse, ...] = ()
    indexes: tuple[IndexUse, ...] = ()
    environments: tuple[EnvironmentUse, ...] = ()


def effective_service_size(service: ServiceUse, environments: Iterable[EnvironmentUse]) -> str:
    """The size a service runs on: its environment's size (matched by id), else its own size.

    A service whose environment is not among `environments` falls back to its own size.
    """
    if service.environment is not None:
        for env in environments:
            if env.id == service.environment:
                return parse_size(env.size)
    return size_of_legacy_service(service.size)


@dataclass(frozen=True)
class SizeUser:
    """One thing that keeps a size from being turned off."""

    kind: Literal["service", "environment", "index"]
    id: str
    name: str
    workspace: str | None = None

    def describe(self) -> str:
        where = f" (workspace {self.workspace})" if self.workspace is not None else ""
        return f"{self.kind} {self.name}{where}"

    def to_json(self) -> dict[str, str]:
        out = {"kind": self.kind, "id": self.id, "name": self.name}
        if self.workspace is not None:
            out["workspace"] = self.workspace
        return out


def users_of_size(size: str, users: SizeUsers) -> tuple[SizeUser, ...]:
    """What blocks turning a size off: services, then environments, then indexes, each sorted.

    Deployed serverless services running on the size (undeployed or managed ones
    don't count), environments set to it even if empty, and indexes with that
    pod size whether deployed or not.
    """
    name = parse_size(size)
    services = sorted(
        (s for s in users.services if s.deployed and s.hosting == "serverless"),
        key=lambda s: (s.workspace, s.name, s.id),
    )
    envs = sorted(users.environments, key=lambda e: (e.name, e.id))
    indexes = sorted(users.indexes, key=lambda i: (i.workspace, i.name, i.id))
    return (
        *(
            SizeUser("service", s.id, s.name, s.workspace)
            for s in services
            if effective_service_size(s, users.environments) == name
        ),
        *(SizeUser("environment", e.id, e.name) for e in envs if parse_size(e.size) == name),
        *(
            SizeUser("index", i.id, i.name, i.workspace)
            for i in indexes
            if i.pod_size is not None and parse_size(i.pod_size) == name
        ),
    )


def in_use_message(size: str, holders: Iterable[SizeUser]) -> str:
    """'Size Large is in use: service web (workspace prod), environment staging, …'."""
    named = ", ".join(h.describe() for h in holders)
    return f"Size {label(size)} is in use: {named}"


# ---------------------------------------------------------------------------
# Changes


@dataclass(frozen=True)
class SizeChange:
    """What a save asks of one size; None keeps the current value."""

    enabled: bool | None = None
    spares: int | None = None


@dataclass(frozen=True)
class ComputeChange:
    """One save of the Compute tab, the CLI's `settings compute set`, or a FleetConfig apply.

    `sizes` maps size names (as typed) to what changes; `default_size` chooses
    a default, `clear_default` clears it (back to Medium); both at once is
    INVALID_INPUT. `serverless_pool` None keeps the current pool.
    """

    sizes: Mapping[str, SizeChange] = field(default_factory=dict)
    default_size: str | None = None
    clear_default: bool = False
    serverless_pool: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "sizes", MappingProxyType(dict(self.sizes)))

    @classmethod
    def from_flags(
        cls,
        *,
        enable: Iterable[str] = (),
        disable: Iterable[str] = (),
        spares: Mapping[str, int] | None = None,
        default_size: str | None = None,
        clear_default: bool = False,
        serverless_pool: str | None = None,
    ) -> ComputeChange:
        """A change from `--enable/--disable/--spares SIZE=N/--default/--clear-default` flags."""
        on = {parse_size(n) for n in enable}
        off = {parse_size(n) for n in disable}
        both = sorted(on & off, key=SIZE_NAMES.index)
        if both:
            raise InvalidInputError(
                f"Can't both enable and disable {', '.join(label(n) for n in both)}",
                {"field": "sizes", "sizes": both},
            )
        counts = {parse_size(n): v for n, v in (spares or {}).items()}
        sizes: dict[str, SizeChange] = {
            name: SizeChange(
                enabled=True if name in on else False if name in off else None,
                spares=counts.get(name),
            )
            for name in SIZE_NAMES
            if name in on or name in off or name in counts
        }
        return cls(sizes, default_size, clear_default, serverless_pool)


def change_towards(current: ComputeSettings, desired: ComputeSettings) -> ComputeChange:
    """The change that turns `current` into `desired` (a submitted form, a FleetConfig section).

    A desired `serverless_pool` of None keeps the current pool. Input that may
    ask for more than 10 spares can't be a ComputeSettings; build a
    ComputeChange naming every size instead, so the save gives the cap's notice.
    """
    sizes = {
        d.size: SizeChange(
            enabled=None if d.enabled == c.enabled else d.enabled,
            spares=None if d.spares == c.spares else d.spares,
        )
        for c, d in zip(current.sizes, desired.sizes, strict=True)
        if c != d
    }
    moved = desired.default_size != current.default_size
    return ComputeChange(
        sizes=sizes,
        default_size=desired.default_size if moved else None,
        clear_default=moved and desired.default_size is None,
        serverless_pool=desired.serverless_pool,
    )


@dataclass(frozen=True)
class Notice:
    """Something the save did that the answer must say, such as keeping 10 spares instead of 15."""

    code: str
    size: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"code": self.code, "size": self.size, "message": self.message}


@dataclass(frozen=True)
class ChangeResult:
    settings: ComputeSettings
    notices: tuple[Notice, ...] = ()
    message: str = SAVED_MESSAGE


def capped_spares_message(size: str, requested: int) -> str:
    """What a save says when it keeps fewer spares than asked for."""
    return (
        f"Maximum is {SPARES_MAX} spare instances per size: you entered {requested} "
        f"for {label(size)}, so we keep {SPARES_MAX} instances ready."
    )


def _capped_notice(size: str, requested: int) -> Notice:
    return Notice(code="SPARES_CAPPED", size=size, message=capped_spares_message(size, requested))


def draft_change(current: ComputeSettings, change: ComputeChange) -> ChangeResult:
    """The settings a change would give, input-checked but without the save rules.

    This is what the form shows while editing (credits included); only
    `apply_change` decides whether it can be saved.
    """
    settings = current
    notices: list[Notice] = []
    for raw_name, size_change in change.sizes.items():
        name = parse_size(raw_name, field="sizes")
        spares = None
        if size_change.spares is not None:
            spares = kept_spares(size_change.spares)
            if spares != size_change.spares:
                notices.append(_capped_notice(name, size_change.spares))
        settings = settings.with_size(name, enabled=size_change.enabled, spares=spares)
    return ChangeResult(_with_default(settings, change), tuple(notices))


def _with_default(settings: ComputeSettings, change: ComputeChange) -> ComputeSettings:
    if change.clear_default and change.default_size is not None:
        raise InvalidInputError(
            "Choose a default size or clear it, not both",
            {"field": "defaultSize"},
        )
    default = settings.default_size
    if change.clear_default:
        default = None
    elif change.default_size is not None:
        default = parse_size(change.default_size, field="defaultSize")
    pool = settings.serverless_pool if change.serverless_pool is None else change.serverless_pool
    return replace(settings, default_size=default, serverless_pool=pool)


def check_default(current: ComputeSettings, proposed: ComputeSettings) -> None:
    """The default-size rules of document 004; INVALID_INPUT with the rule's words when broken."""
    default = proposed.default_size
    old = current.default_size
    if old is not None and default == old and not proposed.is_enabled(old):
        raise InvalidInputError(
            f"The Enabled switch for the default size {label(old)} is locked. "
            f"To turn {label(old)} off, first choose a different default size.",
            {"field": "defaultSize", "size": old},
        )
    if default is not None and not proposed.is_enabled(default):
        raise InvalidInputError(
            f"Only enabled sizes can be the default size: turn {label(default)} on first.",
            {"field": "defaultSize", "size": default},
        )
    if default is None and not proposed.is_enabled(DEFAULT_SIZE):
        raise InvalidInputError(
            f"{label(DEFAULT_SIZE)} is turned off and no default size is chosen: "
            "choose a default size.",
            {"field": "defaultSize", "size": DEFAULT_SIZE},
        )


def check_in_use(current: ComputeSettings, proposed: ComputeSettings, users: SizeUsers) -> None:
    """SIZE_IN_USE when a size this change turns off is in use; sizes already off never block."""
    blocked: list[tuple[str, tuple[SizeUser, ...]]] = []
    for before, after in zip(current.sizes, proposed.sizes, strict=True):
        if before.enabled and not after.enabled:
            holders = users_of_size(after.size, users)
            if holders:
                blocked.append((after.size, holders))
    if not blocked:
        return
    raise SizeInUseError(
        "; ".join(in_use_message(size, holders) for size, holders in blocked),
        {
            "sizes": [
                {"size": size, "label": label(size), "users": [h.to_json() for h in holders]}
                for size, holders in blocked
            ]
        },
    )


def apply_change(current: ComputeSettings, change: ComputeChange, users: SizeUsers) -> ChangeResult:
    """Decide one save: the new settings with "Your compute settings are saved.", or an error.

    INVALID_INPUT for unknown sizes, negative or non-integer spares, both a
    default and a clear, and the default-size rules; SIZE_IN_USE naming each
    user of a size this change turns off. Spares above 10 are kept as 10 and
    the result carries a notice saying so. On any error nothing changes.
    """
    drafted = draft_change(current, change)
    check_default(current, drafted.settings)
    check_in_use(current, drafted.settings, users)
    return drafted


# ---------------------------------------------------------------------------
# Credits


@dataclass(frozen=True)
class CreditsRow:
    size: str
    label: str
    enabled: bool
    spares: int
    credits_per_month: int


@dataclass(frozen=True)
class CreditsTable:
    """The Credits per month column and its Total (enabled sizes only)."""

    rows: tuple[CreditsRow, ...]
    total: int

    def to_json(self) -> dict[str, object]:
        return {
            "sizes": {
                r.size: {
                    "enabled": r.enabled,
                    "spares": r.spares,
                    "creditsPerMonth": r.credits_per_month,
                }
                for r in self.rows
            },
            "totalCreditsPerMonth": self.total,
        }


def credits_table(settings: ComputeSettings) -> CreditsTable:
    """Credits per month per size and the Total over enabled sizes, for saved or draft settings."""
    rows = tuple(
        CreditsRow(s.size, label(s.size), s.enabled, s.spares, credits_per_month(s.spares))
        for s in settings.sizes
    )
    return CreditsTable(rows, sum(r.credits_per_month for r in rows if r.enabled))

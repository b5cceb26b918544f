"""The Plan as data: ordered actions with before, after and reason, plus warnings and errors.

The planner builds it, the renderers print it, apply executes it. Everything is
frozen: attribute maps are read-only views (``freeze``), ``thaw`` makes JSON of them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from bcfleet.errors import (
    ConflictError,
    FleetError,
    InvalidInputError,
    SizeInUseError,
    UnsupportedError,
)

ActionKind = Literal["create", "update", "delete", "archive", "adopt", "no-op"]
Attrs = Mapping[str, Any]

# Creation order; deletions run in reverse.
RESOURCE_TYPES: tuple[str, ...] = (
    "tenant",
    "providerAccount",
    "pool",
    "offer",
    "host",
    "flavor",
    "quota",
    "compute",
)

_ERROR_CLASSES: dict[str, type[FleetError]] = {
    cls.code: cls for cls in (InvalidInputError, ConflictError, SizeInUseError, UnsupportedError)
}


def freeze(value: Any) -> Any:
    """A read-only copy: mappings become MappingProxyType, lists become tuples."""
    kind = type(value)  # exact types first: ABC checks are slow over tens of thousands of objects
    if (
        kind is dict
        or kind is MappingProxyType
        or (kind not in _PLAIN and isinstance(value, Mapping))
    ):
        return MappingProxyType(
            {
                key if type(key) is str else str(key): item
                if type(item) in _SCALARS
                else freeze(item)
                for key, item in value.items()
            }
        )
    if kind is list or kind is tuple:
        return tuple(freeze(item) for item in value)
    return value


def thaw(value: Any) -> Any:
    """JSON-ready plain data from frozen attributes."""
    kind = type(value)
    if (
        kind is dict
        or kind is MappingProxyType
        or (kind not in _PLAIN and isinstance(value, Mapping))
    ):
        return {str(k): thaw(v) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [thaw(item) for item in value]
    return value


_SCALARS = frozenset({str, int, float, bool, type(None)})
_PLAIN = _SCALARS | {list, tuple}


@dataclass(frozen=True)
class FieldChange:
    """One changed leaf of an object: ``policy.overcommit.vcpu`` 1 → 2."""

    path: str
    before: Any
    after: Any


@dataclass(frozen=True)
class CapacityChange:
    """A pool's capacity for one resource, summed over its hosts: floor(allocatable × ratio)."""

    resource: str
    before: int
    after: int


@dataclass(frozen=True)
class CreditsLine:
    size: str
    before: int
    after: int


@dataclass(frozen=True)
class Credits:
    """Credits per month of spare instances (document 004), per size and in total."""

    sizes: tuple[CreditsLine, ...]
    total_before: int
    total_after: int


@dataclass(frozen=True)
class Action:
    address: str
    type: str
    actions: tuple[ActionKind, ...]
    before: Attrs | None
    after: Attrs | None
    reason: str = ""
    changes: tuple[FieldChange, ...] = ()
    capacity: tuple[CapacityChange, ...] = ()
    credits: Credits | None = None

    @property
    def is_change(self) -> bool:
        return self.actions != ("no-op",)

    @property
    def is_removal(self) -> bool:
        return "delete" in self.actions or "archive" in self.actions


@dataclass(frozen=True)
class PlanMessage:
    """A warning or an error of a plan; errors carry a FleetError code."""

    code: str
    message: str
    address: str | None = None
    details: Attrs = field(default_factory=lambda: MappingProxyType({}))

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "address": self.address,
            "details": thaw(self.details),
        }


@dataclass(frozen=True)
class Summary:
    adopt: int = 0
    add: int = 0
    change: int = 0
    delete: int = 0
    archive: int = 0

    @property
    def total(self) -> int:
        return self.adopt + self.add + self.change + self.delete + self.archive


@dataclass(frozen=True)
class Plan:
    actions: tuple[Action, ...] = ()
    warnings: tuple[PlanMessage, ...] = ()
    errors: tuple[PlanMessage, ...] = ()
    state_revision: int = 0
    config_digest: str = ""

    @property
    def changes(self) -> tuple[Action, ...]:
        return tuple(action for action in self.actions if action.is_change)

    @property
    def has_changes(self) -> bool:
        return any(action.is_change for action in self.actions)

    @property
    def applyable(self) -> bool:
        return not self.errors and self.has_changes

    @property
    def summary(self) -> Summary:
        counts = dict.fromkeys(("adopt", "create", "update", "delete", "archive"), 0)
        for action in self.actions:
            for kind in action.actions:
                if kind in counts:
                    counts[kind] += 1
        return Summary(
            adopt=counts["adopt"],
            add=counts["create"],
            change=counts["update"],
            delete=counts["delete"],
            archive=counts["archive"],
        )

    def raise_for_errors(self) -> None:
        """Raise the first error's FleetError (SIZE_IN_USE, CONFLICT, …) listing every error."""
        if not self.errors:
            return
        first = self.errors[0]
        cls = _ERROR_CLASSES.get(first.code, InvalidInputError)
        message = "\n".join(error.message for error in self.errors)
        raise cls(message, {"errors": [error.to_json() for error in self.errors]})

"""What the `spares` job does for one tenant, decided from a snapshot: which spares to delete, how many to place.

For every enabled size the tenant keeps `spares` placed, unassigned instances
in its serverless pool. Spares of a size turned off, spares in another pool
than the serverless pool (it changed), and spares above the count (it was
lowered) are deleted: those that found no host yet first, then those still
booting, then the newest. A spare someone stopped is deleted and replaced. A spare that found no host counts as kept: it is
pending, and hosted placement places it when a host frees up. Without a
serverless pool nothing is kept.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType

from bcfleet.domain.compute_settings import ComputeSettings, keeps_spares
from bcfleet.domain.sizes import SIZE_NAMES


@dataclass(frozen=True)
class SpareView:
    """One live spare as the planner sees it; `order` sorts oldest first (creation time, id)."""

    id: str
    size: str | None
    pool_id: str
    placed: bool
    ready: bool
    order: str
    stopped: bool = False  # stopped by hand through the instances API: never taken, so replaced


@dataclass(frozen=True)
class SparesPlan:
    """Delete these (with a reason each), then place this many of each size."""

    release: tuple[tuple[str, str], ...] = ()
    place: Mapping[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "place", MappingProxyType(dict(self.place)))


def wanted(settings: ComputeSettings, size: str) -> int:
    """Spares to keep of a size: its count when enabled and a serverless pool is set, else 0."""
    setting = settings.setting(size)
    if not keeps_spares(settings) or not setting.enabled:
        return 0
    return setting.spares


def _surplus(kept: Sequence[SpareView], keep: int) -> list[SpareView]:
    """Which spares to delete: unplaced, then booting, then ready ones; newest first in each."""
    ranked = sorted(kept, key=lambda s: s.order, reverse=True)
    ranked.sort(key=lambda s: (s.placed, s.ready))  # stable: each group stays newest first
    return ranked[: max(0, len(kept) - keep)]


def plan_spares(settings: ComputeSettings, spares: Sequence[SpareView]) -> SparesPlan:
    """The plan for one tenant's spares (see the module docstring)."""
    release: list[tuple[str, str]] = []
    place: dict[str, int] = {}
    for spare in spares:
        if spare.size not in SIZE_NAMES:
            release.append((spare.id, "not a known size"))
        elif spare.pool_id != settings.serverless_pool:
            release.append((spare.id, "serverless pool changed"))
        elif spare.stopped:
            release.append((spare.id, "stopped"))
    for size in SIZE_NAMES:
        mine = [
            s
            for s in spares
            if s.size == size and s.pool_id == settings.serverless_pool and not s.stopped
        ]
        keep = wanted(settings, size)
        if not settings.is_enabled(size):
            release.extend((s.id, "size turned off") for s in mine)
            continue
        release.extend((s.id, "spares lowered") for s in _surplus(mine, keep))
        missing = keep - len(mine)
        if missing > 0:
            place[size] = missing
    return SparesPlan(tuple(release), place)

"""The libvirt driver's memory hooks: balloons and huge-page admission; runner.Agent builds them.

HostPolicy joins the pure deciders (bcfleet.domain.balloon, bcfleet.domain.hugepage_admission)
to what the host says below ``root`` (bcfleet.agent.host_memory; ``/`` on a real host, a fake
tree in tests and in `fleet agent run --host-root DIR`):

- balloon(): once per round, with the running guests. It reads /proc/meminfo and
  /proc/pressure/memory, keeps each guest's previous memoryStats() sample (the last one taken
  at another ``last_update``) to tell whether it is idle, and returns the targets decide_balloons() changes, in KiB. The floor is the spec's
  ``balloon.floorPercent`` (the server fills it from ``balloon_floor_percent``), else
  ``floor_percent``. Each change is logged (logger bcfleet.agent) and kept in ``balloons``.
- admit(): before each start. The huge page pools are read once per round (at the round's
  first start) and every start admitted earlier in the round counts against them, so two
  starts never take the same free pages. A refusal is the StartRefused condition's message.

The driver calls balloon() at the top of every round, before any start: that call opens a new
admission round.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from bcfleet.agent.host_memory import read_host_memory, read_hugepage_pools
from bcfleet.domain.balloon import (
    DEFAULT_FLOOR_PERCENT,
    KIB,
    GuestBalloon,
    decide_balloons,
    guest_is_idle,
    guest_use_bytes,
)
from bcfleet.domain.hugepage_admission import (
    REFUSED_REASON,
    REFUSED_TYPE,
    Admission,
    HostPools,
    HugepageRequest,
    admit_hugepages,
)
from bcfleet.domain.shapes import Shape
from bcfleet.errors import FleetError

log = logging.getLogger("bcfleet.agent")


class GuestMemoryView(Protocol):
    """What HostPolicy reads of a running guest (the driver's GuestMemory)."""

    @property
    def instance_id(self) -> str: ...
    @property
    def spec(self) -> Mapping[str, Any]: ...
    @property
    def balloon_kib(self) -> int: ...
    @property
    def stats(self) -> Mapping[str, int]: ...


def guest_balloon(
    guest: GuestMemoryView, before: Mapping[str, int] | None, floor_percent: int
) -> GuestBalloon:
    """The balloon decider's view of one running guest, from its spec and memory statistics."""
    spec = guest.spec
    placement = spec.get("placement") or {}
    balloon = spec.get("balloon") or {}
    stats = guest.stats
    return GuestBalloon(
        guest_id=guest.instance_id,
        memory_bytes=Shape.from_json(spec["shape"]).memory_gib * KIB**3,
        target_bytes=int(stats.get("actual", guest.balloon_kib)) * KIB,
        used_bytes=guest_use_bytes(stats),
        idle=before is not None and guest_is_idle(before, stats),
        huge_pages=placement.get("hugepageSizeBytes") is not None,
        vfio=bool(spec.get("gpus")),
        balloon=bool(balloon.get("enabled")),
        floor_percent=int(balloon.get("floorPercent") or floor_percent),
    )


def refusal_message(admission: Admission) -> str | None:
    """The condition a refused start carries (None when admitted)."""
    if admission.shortfall is None:
        return None
    condition = admission.shortfall.condition()
    return f"{REFUSED_TYPE} ({REFUSED_REASON}): {condition['message']}"


@dataclass
class HostPolicy:
    """The balloon and admit hooks of one host's libvirt driver."""

    root: str | os.PathLike[str] = "/"
    floor_percent: int = DEFAULT_FLOOR_PERCENT
    samples: dict[str, Mapping[str, int]] = field(default_factory=dict)  # the last, per guest
    earlier: dict[str, Mapping[str, int]] = field(default_factory=dict)  # the one before, in time
    balloons: dict[str, int] = field(default_factory=dict)  # guest → its last target set, KiB
    pools: HostPools | None = None  # read at the round's first start
    admitted: list[Admission] = field(default_factory=list)

    def balloon(self, guests: Sequence[GuestMemoryView]) -> dict[str, int]:
        """A new round: the balloon targets (KiB) that change, from the host's memory now."""
        self.pools, self.admitted = None, []
        views = [guest_balloon(g, self._before(g), self.floor_percent) for g in guests]
        self.samples = {g.instance_id: dict(g.stats) for g in guests}
        self.earlier = {g.instance_id: self.earlier[g.instance_id] for g in guests
                        if g.instance_id in self.earlier}  # fmt: skip
        if not any(view.ballooned for view in views):
            return {}
        try:
            host = read_host_memory(self.root)
        except FleetError as error:  # no /proc/meminfo: balloons stay where they are
            log.warning("balloons left alone: %s", error.message)
            return {}
        decision = decide_balloons(host, views)
        targets = {}
        for change in decision.changes:
            targets[change.guest_id] = change.target_kib
            self.balloons[change.guest_id] = change.target_kib
            log.info(
                "%s: balloon target %d KiB (%s, host %s)",
                change.guest_id,
                change.target_kib,
                change.reason,
                decision.state,
            )
        return targets

    def _before(self, guest: GuestMemoryView) -> Mapping[str, int] | None:
        """The guest's last sample taken at another time than this one (QEMU refreshes the
        statistics every 10 s, the rounds come every second or so)."""
        latest = self.samples.get(guest.instance_id)
        if latest is not None and latest.get("last_update") != guest.stats.get("last_update"):
            self.earlier[guest.instance_id] = latest
        return self.earlier.get(guest.instance_id)

    def admit(self, spec: Mapping[str, Any]) -> str | None:
        """Why this start must wait (the free huge pages cannot back it), or None."""
        request = HugepageRequest.from_spec(spec)
        if request is None:
            return None
        if self.pools is None:
            try:
                self.pools = read_hugepage_pools(self.root)
            except FleetError as error:  # admission never guesses: the start waits
                return f"{REFUSED_TYPE}: {error.message}"
        admission = admit_hugepages(request, self.pools, self.admitted)
        self.admitted.append(admission)
        return refusal_message(admission)

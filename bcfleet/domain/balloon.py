"""The balloon decider: which guests' balloon targets change this round; the host agent calls it.

Pure: the agent reads the host's memory (bcfleet.agent.host_memory) and each owned guest's
balloon target and memory statistics, calls decide_balloons(), and applies each change with
libvirt's setMemory (KiB). Document 000's rules, and the readings chosen where it leaves room:

- The host is **short** while MemAvailable is under 10 % of MemTotal, or the memory pressure
  ``some avg10`` of /proc/pressure/memory is 10 % or more. It is **free** once more than 20 % is
  available and it is not short. In between (10 % to 20 %, no pressure) nothing is inflated or
  deflated: the hysteresis band that keeps balloons from swinging every round.
- Short: balloons inflate by as much as brings MemAvailable back to 10 % of MemTotal plus a
  step of 1 % of MemTotal (landing inside the band, not on its edge); a host short by pressure
  alone, already above that, reclaims the step. Idle guests give first, then busy ones; within
  each, the guest with the most room above its floor first, then by id.
- A guest's **floor** is the larger of ``floor_percent`` of its memory and its use plus 10 %
  of that use (document 000: "never below a guest's floor (balloon_floor_percent, default 50,
  or its use plus 10 %)", read as: below neither). Its use is what it cannot give back
  without swapping (guest_use_bytes). A guest whose use is unknown is never inflated. A guest
  whose target is under its floor (its use grew) is raised to the floor whatever the host's
  state, and what that takes is added to what the other balloons reclaim.
- Free: balloons deflate (busy guests first, then the most inflated) by at most what keeps
  20 % of MemTotal available if the guests used all they got back, up to their full memory.
- Never touched: huge-page-backed and VFIO (GPU) guests, whose memory is pinned, and guests
  without a balloon device.
- Targets are whole KiB (setMemory's unit): rounded up when inflating (never under a floor),
  down when deflating (never over what was given).

Host admission is not this module's business: it still charges each guest its full memory,
however far its balloon is inflated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from bcfleet.errors import InvalidInputError

KIB = 1024
SHORT_BELOW_PERCENT = 10  # MemAvailable under this share of MemTotal: short of memory
PRESSURE_SHORT_AVG10 = 10.0  # /proc/pressure/memory some avg10 at or above this: short
FREE_ABOVE_PERCENT = 20  # MemAvailable above this share (and no pressure): deflate
STEP_PERCENT = 1  # reclaim this share of MemTotal beyond the 10 % threshold
USE_HEADROOM_PERCENT = 10  # a guest keeps its use plus this share of it
IDLE_MAJOR_FAULTS_PER_SECOND = 1.0  # fewer major faults than this a second, no swap-in: idle
DEFAULT_FLOOR_PERCENT = 50


class HostState(StrEnum):
    """Where the host's memory stands against document 000's thresholds."""

    SHORT = "short"
    HOLD = "hold"
    FREE = "free"


class Reason(StrEnum):
    """Why a guest's balloon target changes."""

    INFLATE = "inflate"  # the host is short: the guest gives memory back
    DEFLATE = "deflate"  # the host is free again: the guest gets memory back
    FLOOR = "floor"  # the target was under the guest's floor: raised to it


@dataclass(frozen=True)
class HostMemory:
    """The host's memory: MemTotal and MemAvailable in bytes, and PSI some avg10 (None: no PSI)."""

    total_bytes: int
    available_bytes: int
    pressure_some_avg10: float | None = None

    def __post_init__(self) -> None:
        if self.total_bytes <= 0 or self.available_bytes < 0:
            raise InvalidInputError(
                f"host memory must have MemTotal > 0 and MemAvailable >= 0, got "
                f"{self.total_bytes} and {self.available_bytes}",
                {"totalBytes": self.total_bytes, "availableBytes": self.available_bytes},
            )


@dataclass(frozen=True)
class GuestBalloon:
    """One owned guest as the decider sees it; bytes throughout.

    memory_bytes is what admission charged (the guest's full memory); target_bytes its balloon
    target now (libvirt's current memory); used_bytes what it cannot give back (None: no
    statistics yet); idle whether its memory is not in demand (guest_is_idle).
    """

    guest_id: str
    memory_bytes: int
    target_bytes: int
    used_bytes: int | None = None
    idle: bool = False
    huge_pages: bool = False
    vfio: bool = False
    balloon: bool = True
    floor_percent: int = DEFAULT_FLOOR_PERCENT

    @property
    def ballooned(self) -> bool:
        """Whether the decider may move this guest's balloon at all."""
        return self.balloon and not self.huge_pages and not self.vfio and self.memory_bytes > 0

    @property
    def target(self) -> int:
        """The current target, within 0 and the guest's memory."""
        return min(max(self.target_bytes, 0), self.memory_bytes)

    def floor_bytes(self) -> int | None:
        """The least target allowed, in whole KiB; None while the guest's use is unknown."""
        if self.used_bytes is None:
            return None
        by_percent = _ceil_div(self.memory_bytes * self.floor_percent, 100)
        by_use = _ceil_div(max(self.used_bytes, 0) * (100 + USE_HEADROOM_PERCENT), 100)
        return min(_round_up_kib(max(by_percent, by_use)), self.memory_bytes)


@dataclass(frozen=True)
class BalloonChange:
    """A guest's new balloon target: bytes, and KiB for libvirt's setMemory."""

    guest_id: str
    target_bytes: int
    reason: Reason

    @property
    def target_kib(self) -> int:
        return self.target_bytes // KIB


@dataclass(frozen=True)
class BalloonDecision:
    """The host's state and the targets that change, in the order to apply them."""

    state: HostState
    changes: tuple[BalloonChange, ...]


def _ceil_div(numerator: int, denominator: int) -> int:
    return -(-numerator // denominator)


def _round_up_kib(amount: int) -> int:
    return _ceil_div(amount, KIB) * KIB


def _round_down_kib(amount: int) -> int:
    return amount // KIB * KIB


def host_state(host: HostMemory) -> HostState:
    """Short (under 10 % available, or pressure 10 % or more), free (over 20 %), else hold."""
    pressure = host.pressure_some_avg10
    if host.available_bytes * 100 < host.total_bytes * SHORT_BELOW_PERCENT or (
        pressure is not None and pressure >= PRESSURE_SHORT_AVG10
    ):
        return HostState.SHORT
    if host.available_bytes * 100 > host.total_bytes * FREE_ABOVE_PERCENT:
        return HostState.FREE
    return HostState.HOLD


def reclaim_bytes(host: HostMemory) -> int:
    """What a short host takes back: up to 10 % + the step available, at least the step."""
    step = _ceil_div(host.total_bytes * STEP_PERCENT, 100)
    goal = _ceil_div(host.total_bytes * (SHORT_BELOW_PERCENT + STEP_PERCENT), 100)
    return max(goal - host.available_bytes, step)


def deflate_budget(host: HostMemory) -> int:
    """What a free host may give back and still have 20 % of MemTotal available."""
    keep = _ceil_div(host.total_bytes * FREE_ABOVE_PERCENT, 100)
    return max(host.available_bytes - keep, 0)


def _raise_to_floors(guests: Sequence[GuestBalloon]) -> list[BalloonChange]:
    """Guests whose target is under their floor, raised to it."""
    raised = []
    for guest in guests:
        floor = guest.floor_bytes()
        if floor is not None and guest.target < floor:
            raised.append(BalloonChange(guest.guest_id, floor, Reason.FLOOR))
    return raised


def _room(guest: GuestBalloon) -> int:
    floor = guest.floor_bytes()
    return 0 if floor is None else max(guest.target - floor, 0)


def _inflate(guests: Sequence[GuestBalloon], need: int) -> list[BalloonChange]:
    """Take ``need`` bytes from the guests above their floors: idle first, most room first."""
    order = sorted(guests, key=lambda g: (not g.idle, -_room(g), g.guest_id))
    changes = []
    for guest in order:
        floor = guest.floor_bytes()
        if need <= 0 or floor is None or _room(guest) == 0:
            continue
        target = max(floor, _round_up_kib(guest.target - need))
        if target < guest.target:
            changes.append(BalloonChange(guest.guest_id, target, Reason.INFLATE))
            need -= guest.target - target
    return changes


def _deflate(guests: Sequence[GuestBalloon], budget: int) -> list[BalloonChange]:
    """Give ``budget`` bytes back: busy guests first, then the most inflated, then by id."""
    order = sorted(guests, key=lambda g: (g.idle, -(g.memory_bytes - g.target), g.guest_id))
    changes = []
    for guest in order:
        missing = guest.memory_bytes - guest.target
        if budget <= 0 or missing <= 0:
            continue
        give = (
            missing if missing <= budget else _round_down_kib(guest.target + budget) - guest.target
        )
        if give > 0:
            changes.append(BalloonChange(guest.guest_id, guest.target + give, Reason.DEFLATE))
            budget -= give
    return changes


def decide_balloons(host: HostMemory, guests: Sequence[GuestBalloon]) -> BalloonDecision:
    """The balloon targets that change this round on one host (rules in the module docstring)."""
    movable = [g for g in guests if g.ballooned]
    raised = _raise_to_floors(movable)
    raised_ids = {c.guest_id for c in raised}
    owed = sum(c.target_bytes for c in raised) - sum(
        g.target for g in movable if g.guest_id in raised_ids
    )
    others = [g for g in movable if g.guest_id not in raised_ids]
    state = host_state(host)
    moved: list[BalloonChange] = []
    if state is HostState.SHORT:
        moved = _inflate(others, reclaim_bytes(host) + owed)
    elif state is HostState.FREE:
        moved = _deflate(others, deflate_budget(host) - owed)
    return BalloonDecision(state, (*raised, *moved))


def guest_use_bytes(stats: Mapping[str, int]) -> int | None:
    """What a guest cannot give back without swapping, from libvirt's memoryStats() (KiB).

    ``available`` (the guest's MemTotal) less ``usable`` (its MemAvailable); without ``usable``
    (an older guest driver), less ``unused`` (its MemFree); None without the statistics.
    """
    total = stats.get("available")
    spare = stats.get("usable", stats.get("unused"))
    if total is None or spare is None:
        return None
    return max(total - spare, 0) * KIB


def guest_is_idle(before: Mapping[str, int], after: Mapping[str, int]) -> bool:
    """Whether a guest's memory is not in demand between two memoryStats() samples.

    Idle: fewer than IDLE_MAJOR_FAULTS_PER_SECOND major faults a second (pages read back from
    disk) and no swap-in, over the seconds between the samples' ``last_update``. Without both
    samples' figures, or with no time between them, the guest counts as busy.
    """
    keys = ("major_fault", "swap_in", "last_update")
    if any(key not in before or key not in after for key in keys):
        return False
    seconds = after["last_update"] - before["last_update"]
    if seconds <= 0:
        return False
    faults = after["major_fault"] - before["major_fault"]
    swapped_in = after["swap_in"] - before["swap_in"]
    return faults < IDLE_MAJOR_FAULTS_PER_SECOND * seconds and swapped_in <= 0

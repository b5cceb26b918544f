"""The spot preemption planner of document 003 and capacity.preview, pure over a GpuSnapshot.

The placement layer calls plan_preemption when a regular request would go
pending, then locks the victims and books the plan inside one savepoint.

1. deadline = max(request start, now + notice).
2. The request is planned for [deadline, deadline + its duration) as if the
   bookings of every live spot reservation overlapping that window were free.
3. Nodes are examined in id order and the search stops at the first `limit`
   nodes that would fit (`limit + nodes - 1` for a gang, which then compares at
   most `limit` whole candidate gangs, one grown from each of the best-ranked
   nodes). The plan preempting the fewest distinct spot reservations wins, then
   the lowest score (idle GPUs left on its nodes, as in gpu_plan), then the
   lowest node ids. Like kube-scheduler's DefaultPreemption, a bounded search
   may miss a cheaper node further down the pool; that is the price of a
   planner that stays fast on thousands of nodes.

Callers try plan_placement first: a plan without victims (spot work ending
before the deadline) is still a plan, starting at the deadline.

On a node, the victims are the smallest set of spot reservations whose
eviction frees enough atoms (exact search up to EXACT_HOLDERS reservations on
the node, largest-first greedy beyond), preferring the set that frees the
fewest atoms. A gang is grown from each candidate node by adding the node that
brings the fewest new victims, reusing victims already chosen on other nodes.

Spot requests and node leases never preempt; regular bookings and instances
are never victims. A victim that has started or starts before the deadline is
cut back to end at the deadline; one that starts at or after it is requeued.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import combinations
from typing import Literal

from bcfleet.domain.gpu_plan import (
    GpuRequest,
    GpuSnapshot,
    NodeIndex,
    NodePick,
    as_utc,
    lowest_bits,
    pick,
    plan_placement,
    spot_holders,
    window_masks,
)
from bcfleet.domain.preview_document import PreviewCandidateJson, PreviewJson

DEFAULT_NOTICE = timedelta(minutes=2)
DEFAULT_LIMIT = 64
EXACT_HOLDERS = 8
Action = Literal["cut-back", "requeue"]
CUT_BACK: Action = "cut-back"
REQUEUE: Action = "requeue"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def deadline(request_start: datetime, now: datetime, notice: timedelta) -> datetime:
    """The later of the request's start and now plus the notice (document 003, step 1)."""
    return max(as_utc(request_start), as_utc(now) + notice)


def epoch_ms(value: datetime) -> int:
    """Milliseconds since the epoch, exact: capacity.preview's startsAt."""
    return (as_utc(value) - _EPOCH) // timedelta(milliseconds=1)


@dataclass(frozen=True, slots=True)
class Victim:
    """A spot reservation the plan preempts, and what happens to it."""

    reservation_id: str
    action: Action
    start: datetime
    new_end: datetime | None  # the deadline when cut back; None when requeued


@dataclass(frozen=True, slots=True)
class PreemptionPlan:
    """Where the request goes from the deadline, and whom it preempts."""

    start: datetime
    end: datetime
    picks: tuple[NodePick, ...]
    victims: tuple[Victim, ...]
    score: int
    compared: int

    @property
    def victim_ids(self) -> tuple[str, ...]:
        return tuple(victim.reservation_id for victim in self.victims)


@dataclass(frozen=True, slots=True)
class _Candidate:
    """A node that takes its share once `victims` are evicted."""

    index: NodeIndex
    available: int
    holders: dict[str, tuple[int, datetime]]
    mask: int
    victims: frozenset[str]
    leftover: int

    def rank(self) -> tuple[int, int, int]:
        return len(self.victims), self.leftover, self.index.position


def _choose(available: int, masks: dict[str, int], count: int) -> tuple[int, int] | None:
    """The atoms usable after evicting the fewest holders: (usable mask, popcount), or None."""
    names = sorted(masks, key=lambda name: (-masks[name].bit_count(), name))
    if len(names) > EXACT_HOLDERS:
        return _greedy(available, masks, names, count)
    blocked = 0
    for name in names:
        blocked |= masks[name]
    base = (available & ~blocked).bit_count()
    sizes = [masks[name].bit_count() for name in names]
    for size in range(len(names) + 1):
        if base + sum(sizes[:size]) < count:
            continue
        best: tuple[int, int] | None = None
        for combo in combinations(range(len(names)), size):
            outside = 0
            for position, name in enumerate(names):
                if position not in combo:
                    outside |= masks[name]
            usable = available & ~outside
            usable_count = usable.bit_count()
            if usable_count >= count and (best is None or usable_count < best[1]):
                best = (usable, usable_count)
        if best is not None:
            return best
    return None


def _greedy(
    available: int, masks: dict[str, int], names: list[str], count: int
) -> tuple[int, int] | None:
    for size in range(len(names) + 1):
        outside = 0
        for name in names[size:]:
            outside |= masks[name]
        usable = available & ~outside
        if usable.bit_count() >= count:
            return usable, usable.bit_count()
    return None


def _candidate(
    index: NodeIndex,
    available: int,
    holders: dict[str, tuple[int, datetime]],
    count: int,
    prefreed: frozenset[str] = frozenset(),
) -> _Candidate | None:
    """The node's cheapest way to free `count` atoms, victims in `prefreed` costing nothing."""
    masks = {
        name: held[0] & available
        for name, held in holders.items()
        if name not in prefreed and held[0] & available
    }
    chosen = _choose(available, masks, count)
    if chosen is None:
        return None
    usable, usable_count = chosen
    blocked = 0
    for held in holders.values():
        blocked |= held[0]
    free = usable & ~blocked
    taken = lowest_bits(free, count)
    taken |= lowest_bits(usable & ~free, count - taken.bit_count())
    victims = frozenset(name for name, held in holders.items() if held[0] & taken)
    return _Candidate(index, available, holders, taken, victims, usable_count - count)


def _gather(
    snapshot: GpuSnapshot, request: GpuRequest, start: float, end: float, wanted: int
) -> list[_Candidate]:
    """The first `wanted` nodes, in id order, that take their share once spot work is evicted."""
    found: list[_Candidate] = []
    count = request.count
    for index in snapshot.indexes():
        if index.node.draining or len(index.node.atoms) < count:
            continue
        hard, soft = window_masks(index, start, end)
        available = index.full & ~hard
        if available.bit_count() < count:
            continue
        holders = spot_holders(index, start, end) if soft & available else {}
        candidate = _candidate(index, available, holders, count)
        if candidate is not None:
            found.append(candidate)
            if len(found) >= wanted:
                break
    return found


def _next_member(
    pool: list[_Candidate], used: set[int], victims: frozenset[str], count: int
) -> _Candidate | None:
    """The node adding the fewest new victims to a growing gang (then leftover, then id)."""
    best: _Candidate | None = None
    best_key: tuple[int, int, int] | None = None
    for candidate in pool:
        if candidate.index.position in used:
            continue
        if victims and not victims.isdisjoint(candidate.holders):
            revised = _candidate(
                candidate.index, candidate.available, candidate.holders, count, victims
            )
            candidate = revised if revised is not None else candidate
        key = (len(candidate.victims - victims), candidate.leftover, candidate.index.position)
        if best_key is None or key < best_key:
            best, best_key = candidate, key
            if key[:2] == (0, 0):
                break
    return best


def _grow(seed: _Candidate, pool: list[_Candidate], size: int, count: int) -> list[_Candidate]:
    gang = [seed]
    used = {seed.index.position}
    victims = seed.victims
    while len(gang) < size:
        member = _next_member(pool, used, victims, count)
        if member is None:
            break
        gang.append(member)
        used.add(member.index.position)
        victims = victims | member.victims
    return gang


def _gang_key(gang: list[_Candidate]) -> tuple[int, int, tuple[int, ...]]:
    victims: set[str] = set()
    for member in gang:
        victims |= member.victims
    positions = tuple(sorted(member.index.position for member in gang))
    return len(victims), sum(member.leftover for member in gang), positions


def _best_gang(
    found: list[_Candidate], size: int, count: int, limit: int
) -> tuple[list[_Candidate], int] | None:
    """The best of at most `limit` candidate gangs grown from the best-ranked nodes."""
    pool = sorted(found, key=_Candidate.rank)
    if size == 1:
        return ([pool[0]], len(pool)) if pool else None
    seen: set[tuple[int, ...]] = set()
    best: list[_Candidate] | None = None
    best_key: tuple[int, int, tuple[int, ...]] | None = None
    for seed in pool:
        if len(seen) >= limit:
            break
        gang = _grow(seed, pool, size, count)
        key = _gang_key(gang)
        if len(gang) < size:
            continue
        seen.add(key[2])  # the same nodes grown from another seed may share victims better
        if best_key is None or key < best_key:
            best, best_key = gang, key
    return (best, len(seen)) if best is not None else None


def _victims(gang: list[_Candidate], start: datetime) -> tuple[Victim, ...]:
    starts: dict[str, datetime] = {}
    for member in gang:
        for name in member.victims:
            held_start = member.holders[name][1]
            starts[name] = min(held_start, starts.get(name, held_start))
    victims = []
    for name in sorted(starts):
        if starts[name] < start:
            victims.append(Victim(name, CUT_BACK, starts[name], start))
        else:
            victims.append(Victim(name, REQUEUE, starts[name], None))
    return tuple(victims)


def _window(request: GpuRequest, now: datetime, notice: timedelta) -> tuple[datetime, datetime]:
    """Where a preempting request would run: from the deadline, for its own duration."""
    start = deadline(request.start, now, notice)
    return start, start + (as_utc(request.end) - as_utc(request.start))


def why_no_preemption(
    snapshot: GpuSnapshot, request: GpuRequest, now: datetime, notice: timedelta = DEFAULT_NOTICE
) -> str:
    """Why preempting spot work would not make a request fit (the preview's preemptReason).

    Called when plan_preemption found no plan: the request never preempts, no spot
    reservation overlaps its window from the deadline, or even preempting all of them
    leaves too few GPUs.
    """
    if request.spot:
        return "a spot request never preempts"
    if request.binding != "pool":
        return "a node lease never preempts"
    start, end = _window(request, now, notice)
    holders: set[str] = set()
    for index in snapshot.indexes():
        holders.update(spot_holders(index, start.timestamp(), end.timestamp()))
    if not holders:
        return "no spot reservation in the pool overlaps the request's window: nothing to preempt"
    if len(holders) == 1:
        return "preempting the only spot reservation in its window still would not make it fit"
    return (
        f"preempting all {len(holders)} spot reservations in its window still would not make it fit"
    )


def plan_preemption(
    snapshot: GpuSnapshot,
    request: GpuRequest,
    now: datetime,
    notice: timedelta = DEFAULT_NOTICE,
    limit: int = DEFAULT_LIMIT,
) -> PreemptionPlan | None:
    """Document 003's steps 1–3: the plan from the deadline with the fewest victims, or None."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if request.spot or request.binding != "pool":
        return None
    start, end = _window(request, now, notice)
    found = _gather(
        snapshot, request, start.timestamp(), end.timestamp(), limit + request.nodes - 1
    )
    chosen = _best_gang(found, request.nodes, request.count, limit)
    if chosen is None:
        return None
    gang, compared = chosen
    gang.sort(key=lambda member: member.index.position)
    picks = tuple(pick(member.index, member.mask) for member in gang)
    score = sum(member.leftover for member in gang)
    return PreemptionPlan(start, end, picks, _victims(gang, start), score, compared)


def preview(
    snapshot: GpuSnapshot,
    request: GpuRequest,
    now: datetime,
    notice: timedelta = DEFAULT_NOTICE,
    limit: int = DEFAULT_LIMIT,
) -> PreviewJson:
    """capacity.preview: {fits, candidates, reason, preemptible?, preemptReason?}; never ids.

    A request that does not fit has either preemptible (how many spot reservations
    and when it would start) or preemptReason (why preempting would not help).
    """
    result = plan_placement(snapshot, request, free_spot=False, limit=limit)
    seen: dict[str, PreviewCandidateJson] = {}
    for plan in result.plans:
        for node in plan.picks:
            seen.setdefault(node.node_id, {"id": node.node_id, "name": node.node_name})
    body: PreviewJson = {
        "fits": result.fits,
        "candidates": list(seen.values()),
        "reason": result.reason,
    }
    if not result.fits:
        preempting = plan_preemption(snapshot, request, now, notice, limit)
        if preempting is not None:
            body["preemptible"] = {
                "reservations": len(preempting.victims),
                "startsAt": epoch_ms(preempting.start),
            }
        else:
            body["preemptReason"] = why_no_preemption(snapshot, request, now, notice)
    return body

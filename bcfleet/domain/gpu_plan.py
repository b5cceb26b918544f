"""GPU atom planning over a snapshot: which atoms of which nodes a reservation may book, or why not.

The placement layer loads a GpuSnapshot (a pool's nodes and the GPU bookings
that may overlap the request), calls plan_placement, and books the first plan
whose guarded write succeeds. The preemption planner reuses the same index.

Rules:
- An atom is free for a window [start, end) when no booking of it overlaps the
  window; with free_spot, bookings of live spot reservations (placed, binding,
  active) do not count. Open-ended bookings (end None) overlap everything after
  their start. Bookings of atoms the snapshot does not know are ignored.
- binding 'pool' takes `count` free atoms on each of `nodes` distinct nodes
  (a gang: all or nothing); binding 'node' takes every atom of `nodes` whole
  nodes that have at least `count` atoms, all free. Draining nodes take nothing.
- Score: the GPUs a plan leaves idle on its nodes (free atoms not taken for
  'pool', atoms beyond `count` for 'node'); lower is better, so the planner
  packs. Ties go to the lowest node id; inside a node the first atoms in its
  atom order are taken. A gang's score is the sum over its nodes; alternative
  gangs are disjoint chunks of the ranked nodes.
- Every "no" is explained as a count of identical per-node reasons, most
  frequent first: `no node fits (2 nodes): 2 × fits: 0 of 4 gpu free`, and for
  gangs `only 1 of 2 nodes fit (3 nodes): 2 × fits: 0 of 4 gpu free`.

Speed: bookings are indexed by node once, atoms as bits of an integer mask,
spans sorted by end with prefix masks (see NodeIndex), so a window costs one
bisection per node unless a booking starts after the window ends; a plan is
one pass over the nodes.
"""

from __future__ import annotations

import heapq
import math
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from bcfleet.domain.states import RESERVATION_LIVE, ReservationState
from bcfleet.errors import InvalidInputError

BINDINGS = ("pool", "node")


def as_utc(value: datetime) -> datetime:
    """An aware UTC datetime; naive values are taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _ts(value: datetime) -> float:
    return as_utc(value).timestamp()


def _ts_end(value: datetime | None) -> float:
    return math.inf if value is None else _ts(value)


@dataclass(frozen=True, slots=True)
class GpuNode:
    """A node of the pool and its GPU atoms, in the order the node reports them."""

    id: str
    name: str
    atoms: tuple[str, ...]
    draining: bool = False


@dataclass(frozen=True, slots=True)
class AtomBooking:
    """One atom booked for [start, end) by a reservation or instance (end None: open-ended)."""

    atom_id: str
    holder_id: str
    start: datetime
    end: datetime | None
    spot: bool = False
    state: str = ReservationState.ACTIVE

    @property
    def freeable(self) -> bool:
        """True for a booking of a live spot reservation: the only kind preemption may free."""
        return self.spot and self.state in RESERVATION_LIVE


@dataclass(frozen=True, slots=True)
class GpuRequest:
    """What a reservation asks for: `count` GPUs on each of `nodes` nodes for [start, end)."""

    count: int
    start: datetime
    end: datetime
    nodes: int = 1
    binding: str = "pool"
    spot: bool = False

    def __post_init__(self) -> None:
        if self.binding not in BINDINGS:
            raise InvalidInputError(
                f"binding must be 'pool' or 'node', not {self.binding!r}", {"field": "binding"}
            )
        if self.binding == "node" and self.spot:
            raise InvalidInputError(
                "binding: 'node' leases cannot be spot", {"field": "spot", "binding": "node"}
            )
        if self.count < 1:
            raise InvalidInputError("devices: gpu count must be at least 1", {"field": "count"})
        if self.nodes < 1:
            raise InvalidInputError("nodes must be at least 1", {"field": "nodes"})
        if as_utc(self.end) <= as_utc(self.start):
            raise InvalidInputError("the window must end after it starts", {"field": "duration"})


@dataclass(frozen=True, slots=True)
class NodePick:
    """The atoms a plan takes on one node."""

    node_id: str
    node_name: str
    atom_ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PlacementOption:
    """One way to place a request: a pick per node (one for a single node, K for a gang)."""

    picks: tuple[NodePick, ...]
    score: int


@dataclass(frozen=True, slots=True)
class PlanResult:
    """Plans best first (at most `limit`), and the counted reason when nothing fits."""

    fits: bool
    plans: tuple[PlacementOption, ...]
    reason: str | None
    nodes_fit: int = 0

    @property
    def best(self) -> PlacementOption | None:
        return self.plans[0] if self.plans else None


Span = tuple[float, float, int, bool, AtomBooking]


@dataclass(slots=True)
class NodeIndex:
    """A node's bookings as spans (start, end, atom bit, freeable, booking), latest end first.

    For the first k spans (the k latest-ending), prefix_hard/prefix_soft hold the
    OR of their atom bits and prefix_start the latest start among them, so a
    window that every one of them overlaps is answered with one bisection.
    """

    node: GpuNode
    position: int
    full: int
    spans: tuple[Span, ...]
    neg_ends: list[float] = field(default_factory=list)
    prefix_hard: list[int] = field(default_factory=list)
    prefix_soft: list[int] = field(default_factory=list)
    prefix_start: list[float] = field(default_factory=list)
    min_start: float = math.inf


def _index_node(node: GpuNode, position: int, spans: list[Span]) -> NodeIndex:
    spans.sort(key=lambda span: -span[1])
    index = NodeIndex(node, position, (1 << len(node.atoms)) - 1, tuple(spans))
    neg_ends, prefix_hard = index.neg_ends, index.prefix_hard
    prefix_soft, prefix_start = index.prefix_soft, index.prefix_start
    hard = soft = 0
    latest = earliest = spans[0][0] if spans else math.inf
    for start, end, bit, freeable, _booking in spans:
        if freeable:
            soft |= bit
        else:
            hard |= bit
        if start > latest:
            latest = start
        elif start < earliest:
            earliest = start
        neg_ends.append(-end)
        prefix_hard.append(hard)
        prefix_soft.append(soft & ~hard)
        prefix_start.append(latest)
    index.min_start = earliest
    return index


def _group(
    bookings: Iterable[AtomBooking],
    atom_at: dict[str, tuple[int, int]],
    grouped: list[list[Span]] | dict[int, list[Span]],
) -> int:
    """Append bookings as spans to their node position's list; count those of unknown atoms.

    A position missing from a dict `grouped` raises KeyError.
    """
    stamps: dict[datetime | None, float] = {None: math.inf}
    ignored = 0
    for booking in bookings:
        where = atom_at.get(booking.atom_id)
        if where is None:
            ignored += 1
            continue
        start = stamps.get(booking.start)
        if start is None:
            start = stamps[booking.start] = _ts(booking.start)
        end = stamps.get(booking.end)
        if end is None:
            end = stamps[booking.end] = _ts_end(booking.end)
        freeable = booking.spot and booking.state in RESERVATION_LIVE
        grouped[where[0]].append((start, end, where[1], freeable, booking))
    return ignored


class GpuSnapshot:
    """An immutable view of a pool's GPU nodes and bookings, indexed by node (sorted by id)."""

    __slots__ = ("_index", "_atom_at", "_positions", "bookings_ignored")

    def __init__(self, nodes: Iterable[GpuNode], bookings: Iterable[AtomBooking]) -> None:
        ordered = sorted(nodes, key=lambda node: node.id)
        atom_at: dict[str, tuple[int, int]] = {}
        for position, node in enumerate(ordered):
            for bit_index, atom in enumerate(node.atoms):
                if atom in atom_at:
                    raise ValueError(f"atom {atom!r} listed twice")
                atom_at[atom] = (position, 1 << bit_index)
        grouped: list[list[Span]] = [[] for _ in ordered]
        ignored = _group(bookings, atom_at, grouped)
        self._index = tuple(
            _index_node(node, position, grouped[position]) for position, node in enumerate(ordered)
        )
        self._atom_at = atom_at
        self._positions = {node.id: position for position, node in enumerate(ordered)}
        self.bookings_ignored = ignored

    @property
    def nodes(self) -> tuple[GpuNode, ...]:
        return tuple(index.node for index in self._index)

    def __len__(self) -> int:
        return len(self._index)

    def indexes(self) -> tuple[NodeIndex, ...]:
        """The per-node indexes, in node id order (for the planners of this package)."""
        return self._index

    def node_of_atom(self, atom_id: str) -> GpuNode | None:
        where = self._atom_at.get(atom_id)
        return None if where is None else self._index[where[0]].node

    def with_bookings(
        self, node_ids: Iterable[str], bookings: Iterable[AtomBooking]
    ) -> GpuSnapshot:
        """A new snapshot whose listed nodes carry exactly `bookings`; other nodes are shared.

        For a caller that keeps a pool's snapshot and reloads only the nodes a
        write touched: O(touched bookings) instead of a whole-pool rebuild. Node
        changes (added, removed, draining) need a new snapshot.
        """
        replaced = {self._positions.get(node_id, -1) for node_id in node_ids}
        if -1 in replaced:
            raise ValueError("with_bookings lists a node the snapshot does not have")
        grouped: dict[int, list[Span]] = {position: [] for position in replaced}
        try:
            ignored = _group(bookings, self._atom_at, grouped)
        except KeyError as exc:
            raise ValueError("with_bookings got a booking on a node not listed") from exc
        index = list(self._index)
        for position, spans in grouped.items():
            index[position] = _index_node(index[position].node, position, spans)
        fresh = object.__new__(GpuSnapshot)
        fresh._index = tuple(index)
        fresh._atom_at = self._atom_at
        fresh._positions = self._positions  # nodes never change in a refresh
        fresh.bookings_ignored = self.bookings_ignored + ignored
        return fresh


def window_masks(index: NodeIndex, start: float, end: float) -> tuple[int, int]:
    """(hard, soft) atom masks busy in [start, end): soft = held only by live spot bookings."""
    neg_ends = index.neg_ends
    if not neg_ends or index.min_start >= end:
        return 0, 0
    if -neg_ends[-1] > start:
        ending_after = len(neg_ends)
    else:
        ending_after = bisect_left(neg_ends, -start)
        if ending_after == 0:
            return 0, 0
    last = ending_after - 1
    if index.prefix_start[last] < end:
        return index.prefix_hard[last], index.prefix_soft[last]
    hard = soft = 0
    for span_start, _end, bit, freeable, _booking in index.spans[:ending_after]:
        if span_start < end:
            if freeable:
                soft |= bit
            else:
                hard |= bit
    return hard, soft & ~hard


def spot_holders(index: NodeIndex, start: float, end: float) -> dict[str, tuple[int, datetime]]:
    """Live spot reservations booked on a node in [start, end): atom mask and earliest start."""
    holders: dict[str, tuple[int, datetime]] = {}
    for span_start, span_end, bit, freeable, booking in index.spans:
        if span_end <= start:
            break
        if freeable and span_start < end:
            booked = as_utc(booking.start)
            known = holders.get(booking.holder_id)
            if known is not None:
                bit, booked = bit | known[0], min(booked, known[1])
            holders[booking.holder_id] = (bit, booked)
    return holders


def lowest_bits(mask: int, count: int) -> int:
    """The `count` lowest set bits of mask (all of them when it has fewer)."""
    taken = 0
    for _ in range(count):
        if not mask:
            break
        bit = mask & -mask
        taken |= bit
        mask ^= bit
    return taken


def bits(mask: int) -> Iterator[int]:
    """Positions of the set bits of mask, lowest first."""
    position = 0
    while mask:
        if mask & 1:
            yield position
        mask >>= 1
        position += 1


def pick(index: NodeIndex, mask: int) -> NodePick:
    atoms = index.node.atoms
    return NodePick(index.node.id, index.node.name, tuple(atoms[i] for i in bits(mask)))


MissKey = tuple[str, int, int]


@dataclass(frozen=True, slots=True)
class NodeFit:
    """One node that can take its share of the request: the atoms taken and the idle remainder."""

    index: NodeIndex
    mask: int
    leftover: int

    def rank(self) -> tuple[int, int]:
        return self.leftover, self.index.position


def fit_node(
    index: NodeIndex, request: GpuRequest, busy: int
) -> tuple[NodeFit | None, MissKey | None]:
    """Whether a node takes its share given its busy atoms; the miss reason's key when not."""
    node = index.node
    if node.draining:
        return None, ("draining", 0, 0)
    total = len(node.atoms)
    if total < request.count:
        return None, ("size", total, request.count)
    free = index.full & ~busy
    free_count = free.bit_count()
    if request.binding == "node":
        if free != index.full:
            return None, ("whole", free_count, total)
        return NodeFit(index, free, total - request.count), None
    if free_count < request.count:
        return None, ("free", free_count, total)
    return NodeFit(index, lowest_bits(free, request.count), free_count - request.count), None


def miss_text(key: MissKey) -> str:
    """The per-node reason of document 003's counted message."""
    kind, first, second = key
    if kind == "draining":
        return "draining"
    if kind == "size":
        return f"fits: {first} gpu, {second} needed"
    if kind == "whole":
        return f"fits: {first} of {second} gpu free, node lease needs all"
    return f"fits: {first} of {second} gpu free"


def _nodes(count: int) -> str:
    return f"{count} node" if count == 1 else f"{count} nodes"


def explain(total_nodes: int, fitting: int, wanted: int, misses: Counter[MissKey]) -> str:
    """`no node fits (2 nodes): 2 × fits: 0 of 4 gpu free`, or `only 1 of 2 nodes fit (…): …`."""
    if fitting == 0 or wanted == 1:
        head = f"no node fits ({_nodes(total_nodes)})"
    else:
        head = f"only {fitting} of {wanted} nodes fit ({_nodes(total_nodes)})"
    counted = sorted(
        ((n, miss_text(key)) for key, n in misses.items()), key=lambda c: (-c[0], c[1])
    )
    if not counted:
        return head
    return head + ": " + ", ".join(f"{n} × {text}" for n, text in counted)


def window_of(request: GpuRequest) -> tuple[float, float]:
    return _ts(request.start), _ts(request.end)


def scan(
    snapshot: GpuSnapshot, request: GpuRequest, *, free_spot: bool
) -> tuple[list[NodeFit], Counter[MissKey]]:
    """One pass over the nodes: those that take their share, and the counted misses of the rest."""
    start, end = window_of(request)
    fits: list[NodeFit] = []
    misses: Counter[MissKey] = Counter()
    for index in snapshot.indexes():
        hard, soft = window_masks(index, start, end)
        fit, miss = fit_node(index, request, hard if free_spot else hard | soft)
        if fit is not None:
            fits.append(fit)
        elif miss is not None:
            misses[miss] += 1
    return fits, misses


def plan_placement(
    snapshot: GpuSnapshot, request: GpuRequest, *, free_spot: bool = False, limit: int = 64
) -> PlanResult:
    """Candidate plans for the request's window, best first (at most `limit`), or why none fits."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    fits, misses = scan(snapshot, request, free_spot=free_spot)
    wanted = request.nodes
    if len(fits) < wanted:
        reason = explain(len(snapshot), len(fits), wanted, misses)
        return PlanResult(False, (), reason, len(fits))
    ranked = heapq.nsmallest(limit * wanted, fits, key=NodeFit.rank)
    plans = []
    for first in range(0, len(ranked) - wanted + 1, wanted):
        gang = ranked[first : first + wanted]
        picks = tuple(pick(fit.index, fit.mask) for fit in gang)
        plans.append(PlacementOption(picks, sum(fit.leftover for fit in gang)))
    return PlanResult(True, tuple(plans), None, len(fits))

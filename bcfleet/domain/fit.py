"""Capacity math for hosted pools: node_resources rows, the host fit check, reasons, weighers.

The vps.hosts job calls next_row (derive_row) to keep each host's rows; the placement
layer runs check_fit over host snapshots to explain a "no" with explain_no_fit, and orders its
candidates with a weigher. The SQL guard and these functions compute the same thing:
a claim fits a row when allocated + claim <= capacity, capacity = floor(allocatable × ratio).

Reasons are grouped by their exact text, most frequent first, ties by text:
``no host fits (12 hosts): 7 × vcpu 30 of 32 allocated, 3 × 0 of 1 gpu free, 2 × no inventory``.
Exact texts keep the numbers a user needs on a small pool; on a large one every host has its
own numbers, so ``explain_no_fit(..., by_kind=True)`` groups by kind instead: a kind whose
texts all agree keeps its text, one whose texts differ is named by its summary
(``7 × not enough vcpu``), as kube-scheduler's ``Insufficient cpu`` does.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from operator import itemgetter, neg
from typing import NamedTuple, TypeVar

from bcfleet.domain.host_reserve import DEFAULT_RESERVE, HostReserve
from bcfleet.domain.pool_policy import clamp_ratio
from bcfleet.domain.scalars import SCALARS
from bcfleet.domain.shapes import Inventory, PlacementPolicy, Shape

PLACEMENT_CAPABILITY_LABEL = "bc.dev/cap.instance.placement"

T = TypeVar("T")


def capacity(allocatable: int, ratio: float | None) -> int:
    """floor(allocatable × ratio) with the ratio clamped, computed on the ratio as written.

    The one capacity formula: the vps.hosts job stores it in node_resources.capacity, which the
    SQL guard compares with, and FleetConfig plans call it for a policy change. Decimal arithmetic
    on the ratio's shortest decimal form is exact at any allocatable: 100 × 0.29 is 29 where
    binary floating point gives 28.999…, and 3 × 0.3333333333333333 (what 1/3 is written as) is
    0.9999999999999999, so 0, where a float product rounds up to 1.
    """
    exact = Decimal(allocatable) * Decimal(repr(clamp_ratio(ratio)))
    return math.floor(exact)


def min_allocatable(allocated: int, ratio: float | None) -> int:
    """The smallest allocatable whose capacity still holds what is allocated."""
    if allocated <= 0:
        return 0
    guess = math.ceil(Decimal(allocated) / Decimal(repr(clamp_ratio(ratio))))
    while capacity(guess, ratio) < allocated:
        guess += 1
    while guess > 0 and capacity(guess - 1, ratio) >= allocated:
        guess -= 1
    return guess


def allocatable_of(total: int, reserved: int) -> int:
    """What guests may take of a total once the host's reserve is set aside, never below 0."""
    return max(0, total - reserved)


def scalar_totals(inventory: Inventory) -> dict[str, int]:
    """What an inventory reports per scalar, as rows count it: its CPUs, whole GiB."""
    return {
        "vcpu": inventory.vcpu,
        "memoryGiB": math.floor(inventory.memory_gib),
        "diskGiB": math.floor(inventory.disk_gib),
    }


def derive_allocatable(
    inventory: Inventory | None, reserve: HostReserve = DEFAULT_RESERVE
) -> dict[str, int] | None:
    """Inventory − reserve per scalar, never below 0; None for a host that has not reported."""
    if inventory is None:
        return None
    total = scalar_totals(inventory)
    return {resource: allocatable_of(total[resource], reserve.of(resource)) for resource in SCALARS}


class ResourceRow(NamedTuple):
    """One scalar of one host, as the node_resources table keeps it.

    A named tuple: a placement's candidate search makes one per scalar of every host it
    weighs, and a tuple is made in less than half the time of a frozen dataclass.
    """

    resource: str
    allocatable: int
    ratio: float
    capacity: int
    allocated: int = 0

    def fits(self, claim: int) -> bool:
        return self.allocated + claim <= self.capacity


def held_allocatable(allocated: int, ratio: float | None) -> int:
    """What allocated guests occupy of a host's allocatable: the least whose capacity holds them
    under overcommit (allocated ÷ ratio, rounded up), and never more than allocated itself."""
    return min(allocated, min_allocatable(allocated, ratio))


def derive_row(
    resource: str, old: ResourceRow | None, total: int, reserve: HostReserve, ratio: float | None
) -> ResourceRow:
    """The row one scalar of one host has under a policy, from what the host reports (``total``).

    The one decider of document 000's "a shrinking host never drops allocatable below what is
    already allocated", read in the host's own units: allocatable is total − reserve, except
    that when that drops under what the guests occupy (held_allocatable) it stays where it was,
    down to what they occupy, by eating into the reserve. It never rises by this rule and never
    exceeds ``total``: a lowered ratio lowers capacity, not allocatable, and a host left holding
    more than its capacity keeps its guests and takes no new ones. The vps.hosts job writes it
    (next_row), and a FleetConfig plan shows it for a policy change.
    """
    clamped = clamp_ratio(ratio)
    allocatable = allocatable_of(total, reserve.of(resource))
    allocated = 0 if old is None else old.allocated
    if old is not None:
        kept = min(old.allocatable, total, held_allocatable(allocated, clamped))
        allocatable = max(allocatable, kept)
    return ResourceRow(resource, allocatable, clamped, capacity(allocatable, clamped), allocated)


def next_row(
    resource: str,
    old: ResourceRow | None,
    inventory: Inventory | None,
    reserve: HostReserve = DEFAULT_RESERVE,
    ratio: float | None = None,
) -> ResourceRow | None:
    """The row to write for one scalar of one host (derive_row), or None when there is nothing
    to write: the row is unchanged, or the host has no inventory (and so no rows)."""
    if inventory is None:
        return None
    row = derive_row(resource, old, scalar_totals(inventory)[resource], reserve, ratio)
    return None if row == old else row


def rows_to_write(
    old_rows: Mapping[str, ResourceRow],
    inventory: Inventory | None,
    reserve: HostReserve,
    overcommit: Mapping[str, float],
) -> list[ResourceRow]:
    """The changed rows of one host, in SCALARS order; empty when nothing changed."""
    rows = (next_row(r, old_rows.get(r), inventory, reserve, overcommit.get(r)) for r in SCALARS)
    return [row for row in rows if row is not None]


def resize_conflict(rows: Mapping[str, ResourceRow], growth: Mapping[str, int]) -> str | None:
    """The first resource whose growth does not fit its row (details.resource), or None."""
    for resource in SCALARS:
        amount = growth.get(resource, 0)
        row = rows.get(resource)
        if amount > 0 and (row is None or not row.fits(amount)):
            return resource
    return None


@dataclass(frozen=True)
class HostSnapshot:
    """What the fit check and weighers see of one host; no rows means no inventory."""

    node_id: str
    rows: Mapping[str, ResourceRow] = field(default_factory=dict)
    gpus_total: int = 0
    gpus_free: int = 0
    draining: bool = False
    labels: Mapping[str, str] = field(default_factory=dict)
    inventory_generation: int | None = None  # as the candidate query read it

    @classmethod
    def of_candidate(
        cls,
        node_id: str,
        rows: Mapping[str, ResourceRow],
        *,
        gpus_total: int,
        gpus_free: int,
        labels: Mapping[str, str],
        inventory_generation: int,
    ) -> HostSnapshot:
        """A ready host as the candidate search read it: what the constructor makes, in a third
        of its time (16 a placement; the frozen constructor sets each field through
        object.__setattr__, this fills the instance's dict at once)."""
        snapshot = object.__new__(cls)
        snapshot.__dict__.update(
            node_id=node_id,
            rows=rows,
            gpus_total=gpus_total,
            gpus_free=gpus_free,
            draining=False,
            labels=labels,
            inventory_generation=inventory_generation,
        )
        return snapshot

    @property
    def holds_nothing(self) -> bool:
        """Whether nothing is allocated on any of its scalar rows (so no guest is placed there)."""
        return bool(self.rows) and all(row.allocated == 0 for row in self.rows.values())

    @property
    def applies_placement(self) -> bool:
        """Whether the host carries bc.dev/cap.instance.placement (carries_placement)."""
        return carries_placement(self.labels)


def carries_placement(labels: Mapping[str, str]) -> bool:
    """Whether a host's labels carry bc.dev/cap.instance.placement (any value but "false")."""
    value = labels.get(PLACEMENT_CAPABILITY_LABEL)
    return value is not None and value.lower() != "false"


@dataclass(frozen=True)
class NoFit:
    """Why one host does not fit: kind groups reasons, text is what the user reads."""

    kind: str
    text: str


NO_INVENTORY = NoFit("noInventory", "no inventory")
DRAINING = NoFit("draining", "draining")
NO_PLACEMENT_CAPABILITY = NoFit("noPlacementCapability", "no placement capability")

KIND_SUMMARIES = {
    "vcpu": "not enough vcpu",
    "memoryGiB": "not enough memoryGiB",
    "diskGiB": "not enough diskGiB",
    "gpu": "not enough gpu free",
    "hugepages": "not enough huge pages free",
}


def check_fit(
    host: HostSnapshot, shape: Shape, placement: PlacementPolicy | None = None
) -> NoFit | None:
    """None when the shape fits the host, else the first reason it does not, in this order:

    no inventory, draining, no placement capability (only for a flavor with a placement), a
    missing row (``no diskGiB inventory``) or a full one (``vcpu 30 of 32 allocated``: allocated
    of capacity) per scalar, then GPUs (``0 of 1 gpu free``: free of the host's atoms; never
    overcommitted).
    """
    if not host.rows:
        return NO_INVENTORY
    if host.draining:
        return DRAINING
    if placement is not None and not host.applies_placement:
        return NO_PLACEMENT_CAPABILITY
    for resource, claim in shape.claims().items():
        if claim == 0:
            continue
        row = host.rows.get(resource)
        if row is None:
            return NoFit(resource, f"no {resource} inventory")
        if not row.fits(claim):
            return NoFit(resource, f"{resource} {row.allocated} of {row.capacity} allocated")
    if shape.gpus > host.gpus_free:
        return NoFit("gpu", f"{host.gpus_free} of {host.gpus_total} gpu free")
    return None


def _as_no_fit(reason: NoFit | str) -> NoFit:
    return reason if isinstance(reason, NoFit) else NoFit(reason, reason)


def _group_labels(reasons: Sequence[NoFit], by_kind: bool) -> list[str]:
    if not by_kind:
        return [r.text for r in reasons]
    texts_by_kind: dict[str, set[str]] = {}
    for reason in reasons:
        texts_by_kind.setdefault(reason.kind, set()).add(reason.text)
    labels = []
    for reason in reasons:
        texts = texts_by_kind[reason.kind]
        labels.append(
            reason.text if len(texts) == 1 else KIND_SUMMARIES.get(reason.kind, reason.kind)
        )
    return labels


def explain_no_fit(reasons: Iterable[NoFit | str], *, by_kind: bool = False) -> str:
    """The counted message of an instance that fits nowhere, one reason per host considered.

    Reasons come from check_fit, and from numa.NotCandidate.no_fit() for a host the chooser
    refused (``0 of 16 1GiB huge pages free``); plain strings group as their own kind.
    """
    items = [_as_no_fit(r) for r in reasons]
    noun = "host" if len(items) == 1 else "hosts"
    head = f"no host fits ({len(items)} {noun})"
    counts = Counter(_group_labels(items, by_kind))
    if not counts:
        return head
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return head + ": " + ", ".join(f"{count} × {label}" for label, count in ordered)


Weigher = Callable[[HostSnapshot], float]
"""Scores a host; higher goes first. Any function of a snapshot plugs in, like Nova's weighers."""


def free_fractions(hosts: Iterable[Iterable[tuple[int, int]]]) -> list[float]:
    """Each host's mean free share of its scalar rows: 1.0 empty, 0.0 full or without rows.

    A host is given as its rows' (capacity, allocated), in SCALARS order; a row without
    capacity is left out. The one free-share formula: free_fraction asks it for one snapshot,
    and a placement's candidate search for its 16 page rows in one pass (rank_counted).
    """
    fractions = []
    for counts in hosts:
        total = 0.0  # summed in SCALARS order, as sum() of the shares would
        counted = 0
        for capacity, allocated in counts:
            if capacity > 0:
                free = capacity - allocated
                total += (free if free > 0 else 0) / capacity
                counted += 1
        fractions.append(total / counted if counted else 0.0)
    return fractions


def free_fraction(host: HostSnapshot) -> float:
    """The mean free share of the host's scalar rows: 1.0 empty, 0.0 full or without rows."""
    rows = host.rows
    counts: list[tuple[int, int]] = []  # as free_fractions takes a host
    for resource in SCALARS:  # a loop: a batch weighs its hosts once an instance
        row = rows.get(resource)
        if row is not None:
            counts += ((row[3], row[4]),)  # capacity, allocated: by position, no call
    return free_fractions((counts,))[0]


def spread(host: HostSnapshot) -> float:
    """Most free first: guests spread over the pool."""
    return free_fraction(host)


def pack(host: HostSnapshot) -> float:
    """Least free first: guests fill one host before the next, keeping whole hosts empty."""
    return -free_fraction(host)


WEIGHERS: Mapping[str, Weigher] = {"spread": spread, "pack": pack}


def weigher(name: str) -> Weigher:
    """The weigher of a placement_strategy setting."""
    try:
        return WEIGHERS[name]
    except KeyError:
        raise ValueError(f"unknown placement strategy {name!r}; use spread or pack") from None


def rank(hosts: Iterable[HostSnapshot], by: Weigher) -> list[HostSnapshot]:
    """Hosts best first by the weigher; equal scores in node id order, so ranking is stable."""
    scored = [(-by(host), host.node_id, host) for host in hosts]  # one weighing a host
    scored.sort(key=_SCORE_AND_ID)
    return [host for _, _, host in scored]


_SCORE_AND_ID = itemgetter(0, 1)  # never the host itself: node ids differ

# The weighers that are free_fraction itself (1.0) or its negation (-1.0).
_FREE_FRACTION_SIGNS: Mapping[Weigher, float] = {spread: 1.0, pack: -1.0}


def rank_counted(
    hosts: Sequence[T],
    node_ids: Iterable[str],
    counts: Iterable[Iterable[tuple[int, int]]],
    by: Weigher,
) -> list[T] | None:
    """rank() of hosts given by their node ids and scalar counts (as free_fractions takes them),
    scored in one pass, for a weigher of the free fraction; None for any other weigher, which
    needs the hosts' snapshots. The order is rank()'s: the same scores, ties by node id."""
    if by not in _FREE_FRACTION_SIGNS:
        return None
    return rank_by_fractions(hosts, node_ids, free_fractions(counts), by)


def rank_by_fractions(
    hosts: Sequence[T], node_ids: Iterable[str], fractions: Iterable[float], by: Weigher
) -> list[T] | None:
    """rank_counted() of hosts whose free fractions are known already (free_fractions' answers,
    kept with the rows they were made of); None for a weigher of anything else."""
    sign = _FREE_FRACTION_SIGNS.get(by)
    if sign is None:
        return None
    # Scored as rank() scores (-weight), sorted whole: node ids differ, so the position that
    # ends each tuple never decides, and the order is rank()'s. Made and taken apart in C.
    scores = map(neg, fractions) if sign > 0 else fractions
    scored = sorted(zip(scores, node_ids, range(len(hosts)), strict=True))
    return list(map(hosts.__getitem__, map(_POSITION, scored)))


_POSITION = itemgetter(2)

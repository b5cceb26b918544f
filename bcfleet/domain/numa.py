"""The host placement chooser: which CPUs, NUMA nodes and huge pages a guest gets on its host.

The placement layer calls choose_host_placement after capacity has claimed the host, while it
holds the host's vcpu row, with every other guest's stored placement on that host (not the
guest's own: a resize chooses again from scratch). The result is stored on the instance and
becomes InstanceSpec.placement. Pure: the inputs are the host's inventory and placements.

Rules (document 000, "Placement"):

- Reserved CPUs: the host keeps the lowest-numbered non-isolated CPUs, ``reserve_vcpu`` of them
  (policy.hostReserve.vcpu, default 2; all non-isolated CPUs if it has fewer). No guest, pinned
  or floating, ever gets one.
- Pinned guests take free CPUs (neither reserved nor pinned by another guest), isolated ones
  first, then the rest by id; vCPU i runs on ``cpus[i]``.
- Floating guests get ``cpus=None`` and a ``cpuset``: the non-reserved CPUs no guest has pinned
  (of the chosen node when numaAffine is honoured), so libvirt can express it (the rule is
  domain/floating.py's; placement re-derives the other floating guests' sets when a pinned
  guest lands or leaves). A host whose guest CPUs are all pinned is no candidate
  (NoGuestCpus), nor is one where a pinned guest would leave a floating guest no CPU.
- numaAffine keeps CPUs and memory on one NUMA node: the GPUs' node for a GPU guest, otherwise
  the fitting node where a pinned guest gets the most isolated CPUs, then the one with the
  fewest free CPUs, then the least free memory, then the lowest id (best fit, leaving roomier
  nodes to bigger guests). A node fits when it has ``vcpu`` free CPUs and the guest's memory
  free: for ordinary memory, (node memory − its huge page pools) × the pool's memory ratio −
  what NUMA-bound guests hold there; for huge pages, enough bookable pages on the node.
- When numaAffine or pinned cannot be honoured the guest runs floating with exactly one degraded
  reason, the first that applies:

  ==================== =========================================================================
  NoNumaTopology       numaAffine, and the host reports no NUMA nodes
  GpuNumaUnknown       numaAffine, and a GPU of the guest has numaNode null (or a node the host
                       does not report)
  NoNumaNodeFits       numaAffine, and the guest's GPUs sit on different nodes
  NumaMemoryTooSmall   numaAffine, and no candidate node has as much memory in all as the guest
  NotEnoughFreeCpus    pinned, and the whole host has fewer free CPUs than the guest has vCPUs
  NoNumaNodeFits       numaAffine, and no candidate node has the free CPUs and free memory now
  ==================== =========================================================================

- Huge pages are booked per NUMA node, never degraded: a node's bookable pages are its pool's
  total less what other guests booked there. An honoured numaAffine guest takes its pages from
  its node; any other takes them from the single node that fits best, else from the nodes with
  the most bookable pages first, and its ``mems`` are those nodes. When the host cannot back
  the guest at all the chooser raises NoHugepages: the host is no candidate.
- Balloon: the pool's memory ratio is above 1 and the guest is neither huge-page-backed nor a
  GPU guest.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bcfleet.domain.fit import NoFit
from bcfleet.domain.floating import floating_cpus, floating_node
from bcfleet.domain.pool_policy import clamp_ratio
from bcfleet.domain.shapes import GIB, Cpu, Gpu, Inventory, NumaNode, PlacementPolicy, Shape


class DegradedReason(StrEnum):
    """Why a guest runs floating although its flavor asked for numaAffine or pinned."""

    NO_NUMA_TOPOLOGY = "NoNumaTopology"
    NO_NUMA_NODE_FITS = "NoNumaNodeFits"
    GPU_NUMA_UNKNOWN = "GpuNumaUnknown"
    NUMA_MEMORY_TOO_SMALL = "NumaMemoryTooSmall"
    NOT_ENOUGH_FREE_CPUS = "NotEnoughFreeCpus"


DEGRADED_MESSAGES: Mapping[DegradedReason, str] = {
    DegradedReason.NO_NUMA_TOPOLOGY: "the host reports no NUMA topology",
    DegradedReason.NO_NUMA_NODE_FITS: "no single NUMA node has the free CPUs and memory",
    DegradedReason.GPU_NUMA_UNKNOWN: "the NUMA node of the guest's GPU is unknown",
    DegradedReason.NUMA_MEMORY_TOO_SMALL: "no NUMA node has as much memory as the guest",
    DegradedReason.NOT_ENOUGH_FREE_CPUS: "the host has fewer free CPUs than the guest's vCPUs",
}


class NotCandidate(Exception):
    """The host cannot run the guest at all; the placement layer moves on to the next host."""

    kind = "cpus"

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def no_fit(self) -> NoFit:
        """The reason as the fit check reports it, for explain_no_fit."""
        return NoFit(self.kind, self.reason)


class NoHugepages(NotCandidate):
    """The free huge pages of the host cannot back the guest: no placement on that host."""

    kind = "hugepages"


class NoGuestCpus(NotCandidate):
    """Every CPU outside the host reserve is reserved or pinned by another guest."""


@dataclass(frozen=True)
class HostPlacement:
    """Where one guest runs on its host; stored on the instance, sent as InstanceSpec.placement."""

    cpus: tuple[int, ...] | None
    cpuset: tuple[int, ...]
    mems: tuple[int, ...] | None = None
    hugepage_size_bytes: int | None = None
    hugepages_by_node: Mapping[int, int] = field(default_factory=dict)
    memory_by_node: Mapping[int, int] = field(default_factory=dict)
    degraded_reason: DegradedReason | None = None
    balloon: bool = False

    @property
    def pinned(self) -> bool:
        return self.cpus is not None

    def to_json(self) -> dict[str, Any]:
        return {
            "cpus": None if self.cpus is None else list(self.cpus),
            "cpuset": list(self.cpuset),
            "mems": None if self.mems is None else list(self.mems),
            "hugepageSizeBytes": self.hugepage_size_bytes,
            "hugepagesByNode": {str(k): v for k, v in sorted(self.hugepages_by_node.items())},
            "memoryByNode": {str(k): v for k, v in sorted(self.memory_by_node.items())},
            "degradedReason": None if self.degraded_reason is None else str(self.degraded_reason),
            "balloon": self.balloon,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> HostPlacement:
        reason = doc.get("degradedReason")
        return cls(
            cpus=_ints_or_none(doc.get("cpus")),
            cpuset=tuple(int(c) for c in doc.get("cpuset") or ()),
            mems=_ints_or_none(doc.get("mems")),
            hugepage_size_bytes=doc.get("hugepageSizeBytes"),
            hugepages_by_node=_by_node(doc.get("hugepagesByNode")),
            memory_by_node=_by_node(doc.get("memoryByNode")),
            degraded_reason=None if reason is None else DegradedReason(reason),
            balloon=bool(doc.get("balloon", False)),
        )


def _ints_or_none(value: Any) -> tuple[int, ...] | None:
    return None if value is None else tuple(int(v) for v in value)


def _by_node(value: Any) -> dict[int, int]:
    return {int(k): int(v) for k, v in (value or {}).items()}


def degraded_condition(placement: HostPlacement) -> dict[str, str] | None:
    """The instance's PlacementDegraded condition (without its time), or None when not degraded."""
    reason = placement.degraded_reason
    if reason is None:
        return None
    message = f"{DEGRADED_MESSAGES[reason]}; the guest runs floating"
    return {
        "type": "PlacementDegraded",
        "status": "True",
        "reason": str(reason),
        "message": message,
    }


def size_label(size_bytes: int) -> str:
    """1073741824 → 1GiB, 2097152 → 2MiB: huge page sizes as reasons name them."""
    for unit, scale in (("GiB", GIB), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size_bytes % scale == 0:
            return f"{size_bytes // scale}{unit}"
    return f"{size_bytes}B"


def reserved_cpus(inventory: Inventory, reserve_vcpu: int) -> frozenset[int]:
    """The host's own CPUs: its lowest-numbered non-isolated CPUs, reserve_vcpu of them."""
    shared = sorted(c.id for c in inventory.cpus if not c.isolated)
    return frozenset(shared[: max(0, reserve_vcpu)])


def pages_needed(shape: Shape, size_bytes: int) -> int:
    """Huge pages of one size that back the guest's whole memory."""
    return math.ceil(shape.memory_gib * GIB / size_bytes)


@dataclass(frozen=True)
class _HostView:
    """The host as the chooser sees it once the other guests are accounted for."""

    inventory: Inventory
    usable: tuple[Cpu, ...]
    reserved: frozenset[int]
    taken: frozenset[int]
    pages_booked: Mapping[tuple[int, int], int]
    memory_booked: Mapping[int, int]
    memory_ratio: float

    def free_cpus(self, node: int | None = None) -> list[Cpu]:
        """Unpinned guest CPUs (of one node), isolated first, then by id."""
        free = [c for c in self.usable if c.id not in self.taken]
        if node is not None:
            free = [c for c in free if c.numa_node == node]
        return sorted(free, key=lambda c: (not c.isolated, c.id))

    def bookable_pages(self, node: NumaNode, size_bytes: int) -> int:
        pool = node.hugepage_pool(size_bytes)
        total = pool.total if pool is not None else 0
        return max(0, total - self.pages_booked.get((node.id, size_bytes), 0))

    def free_memory_gib(self, node: NumaNode) -> float:
        ordinary = max(0.0, node.memory_gib - node.hugepage_gib) * self.memory_ratio
        return ordinary - self.memory_booked.get(node.id, 0)


def _host_view(
    inventory: Inventory, others: Sequence[HostPlacement], reserve_vcpu: int, ratio: float | None
) -> _HostView:
    reserved = reserved_cpus(inventory, reserve_vcpu)
    taken: set[int] = set()
    pages: dict[tuple[int, int], int] = {}
    memory: dict[int, int] = {}
    for other in others:
        taken.update(other.cpus or ())
        size = other.hugepage_size_bytes
        for node, count in other.hugepages_by_node.items():
            if size is not None:
                pages[(node, size)] = pages.get((node, size), 0) + count
        for node, gib in other.memory_by_node.items():
            memory[node] = memory.get(node, 0) + gib
    usable = tuple(c for c in inventory.cpus if c.id not in reserved)
    return _HostView(
        inventory, usable, reserved, frozenset(taken), pages, memory, clamp_ratio(ratio)
    )


def _book_anywhere(host: _HostView, size: int, needed: int) -> dict[int, int]:
    """Pages from the best single node, else spread over the roomiest; NoHugepages if short."""
    bookable = {n.id: host.bookable_pages(n, size) for n in host.inventory.numa_nodes}
    single = [node for node, free in bookable.items() if free >= needed]
    if single:
        best = min(single, key=lambda node: (bookable[node], node))
        return {best: needed}
    if sum(bookable.values()) < needed:
        total = sum(
            p.total for n in host.inventory.numa_nodes for p in n.hugepages if p.size_bytes == size
        )
        free = sum(bookable.values())
        raise NoHugepages(f"{free} of {total} {size_label(size)} huge pages free")
    booked: dict[int, int] = {}
    for node in sorted(bookable, key=lambda node: (-bookable[node], node)):
        take = min(bookable[node], needed - sum(booked.values()))
        if take > 0:
            booked[node] = take
    return booked


def _gpu_nodes(host: _HostView, gpus: Sequence[Gpu]) -> tuple[NumaNode, ...] | DegradedReason:
    """The nodes a numaAffine guest may use: its GPUs' one node, or any node if it has none."""
    if not gpus:
        return host.inventory.numa_nodes
    nodes = {g.numa_node for g in gpus}
    known = [host.inventory.node(n) for n in nodes if n is not None]
    if None in nodes or None in known:
        return DegradedReason.GPU_NUMA_UNKNOWN
    if len(nodes) > 1:
        return DegradedReason.NO_NUMA_NODE_FITS
    return tuple(n for n in known if n is not None)


def _node_fits(host: _HostView, node: NumaNode, shape: Shape, policy: PlacementPolicy) -> bool:
    if len(host.free_cpus(node.id)) < shape.vcpu:
        return False
    size = policy.hugepage_size_bytes
    if size is not None:
        return host.bookable_pages(node, size) >= pages_needed(shape, size)
    return host.free_memory_gib(node) >= shape.memory_gib


def _affine_node(
    host: _HostView, shape: Shape, policy: PlacementPolicy, gpus: Sequence[Gpu]
) -> int | DegradedReason:
    """The node a numaAffine guest lives on, or the degraded reason of the table above."""
    if not host.inventory.numa_nodes:
        return DegradedReason.NO_NUMA_TOPOLOGY
    candidates = _gpu_nodes(host, gpus)
    if isinstance(candidates, DegradedReason):
        return candidates
    big = [n for n in candidates if n.memory_gib >= shape.memory_gib]
    if not big:
        return DegradedReason.NUMA_MEMORY_TOO_SMALL
    if policy.pinned and len(host.free_cpus()) < shape.vcpu:
        return DegradedReason.NOT_ENOUGH_FREE_CPUS
    fitting = [n for n in big if _node_fits(host, n, shape, policy)]
    if not fitting:
        return DegradedReason.NO_NUMA_NODE_FITS
    return min(fitting, key=lambda n: _node_rank(host, n, shape, policy)).id


def _node_rank(
    host: _HostView, node: NumaNode, shape: Shape, policy: PlacementPolicy
) -> tuple[int, int, float, int]:
    """Lower is better: isolated CPUs a pinned guest would get, then best fit, then node id."""
    free = host.free_cpus(node.id)
    isolated = sum(1 for c in free[: shape.vcpu] if c.isolated) if policy.pinned else 0
    return (-isolated, len(free), host.free_memory_gib(node), node.id)


@dataclass(frozen=True)
class _Honoured:
    node: int | None
    cpus: tuple[int, ...] | None


def _honour(
    host: _HostView, shape: Shape, policy: PlacementPolicy, gpus: Sequence[Gpu]
) -> _Honoured | DegradedReason:
    """The node and pinned CPUs that honour the policy, or why they cannot."""
    node: int | None = None
    if policy.numa_affine:
        chosen = _affine_node(host, shape, policy, gpus)
        if isinstance(chosen, DegradedReason):
            return chosen
        node = chosen
    if not policy.pinned:
        return _Honoured(node, None)
    free = host.free_cpus(node)
    if len(free) < shape.vcpu:
        return DegradedReason.NOT_ENOUGH_FREE_CPUS
    return _Honoured(node, tuple(c.id for c in free[: shape.vcpu]))


def _floating_cpuset(host: _HostView, node: int | None) -> tuple[int, ...]:
    cpuset = floating_cpus(host.inventory.cpus, host.reserved, host.taken, node)
    if not cpuset:
        guest_cpus = len(host.usable)
        raise NoGuestCpus(f"0 of {guest_cpus} guest cpus unpinned")
    return cpuset


def choose_host_placement(
    inventory: Inventory,
    shape: Shape,
    policy: PlacementPolicy | None = None,
    *,
    gpus: Sequence[Gpu] = (),
    others: Sequence[HostPlacement] = (),
    reserve_vcpu: int = 2,
    memory_ratio: float | None = 1.0,
) -> HostPlacement:
    """Choose the guest's CPUs, NUMA nodes and huge pages on its host (rules above).

    gpus are the GPU atoms booked for the guest; others the placements of the host's other
    guests; memory_ratio the pool's policy.overcommit.memoryGiB. Raises NoHugepages or
    NoGuestCpus (both NotCandidate) when the host cannot run the guest at all.
    """
    policy = policy or PlacementPolicy()
    host = _host_view(inventory, others, reserve_vcpu, memory_ratio)
    if not host.usable:
        raise NoGuestCpus(f"0 of {inventory.vcpu} cpus outside the host reserve")
    size = policy.hugepage_size_bytes
    pages = _book_anywhere(host, size, pages_needed(shape, size)) if size is not None else {}
    balloon = host.memory_ratio > 1 and size is None and shape.gpus == 0 and not gpus
    outcome = _honour(host, shape, policy, gpus)
    if not isinstance(outcome, DegradedReason) and outcome.cpus is not None:
        _keep_floating_guests_a_cpu(host, outcome.cpus, others)
    if isinstance(outcome, DegradedReason):
        return _off_node(host, None, size, pages, balloon, outcome)
    if outcome.node is None:
        return _off_node(host, outcome.cpus, size, pages, balloon, None)
    node = outcome.node
    return HostPlacement(
        cpus=outcome.cpus,
        cpuset=_cpuset(host, outcome.cpus, node),
        mems=(node,),
        hugepage_size_bytes=size,
        hugepages_by_node={node: pages_needed(shape, size)} if size is not None else {},
        memory_by_node={} if size is not None else {node: shape.memory_gib},
        balloon=balloon,
    )


def _keep_floating_guests_a_cpu(
    host: _HostView, cpus: tuple[int, ...], others: Sequence[HostPlacement]
) -> None:
    """NoGuestCpus when pinning these CPUs would leave a floating guest of the host none."""
    pinned = host.taken | frozenset(cpus)
    for other in others:
        if other.pinned:
            continue
        node = floating_node(other, host.inventory)
        if not floating_cpus(host.inventory.cpus, host.reserved, pinned, node):
            raise NoGuestCpus(f"pinning {len(cpus)} cpus would leave a floating guest no cpu")


def _cpuset(host: _HostView, cpus: tuple[int, ...] | None, node: int | None) -> tuple[int, ...]:
    return tuple(sorted(cpus)) if cpus is not None else _floating_cpuset(host, node)


def _off_node(
    host: _HostView,
    cpus: tuple[int, ...] | None,
    size: int | None,
    pages: Mapping[int, int],
    balloon: bool,
    reason: DegradedReason | None,
) -> HostPlacement:
    """A guest not bound to one node: floating (maybe degraded), or pinned without numaAffine."""
    return HostPlacement(
        cpus=cpus,
        cpuset=_cpuset(host, cpus, None),
        mems=tuple(sorted(pages)) if pages else None,
        hugepage_size_bytes=size,
        hugepages_by_node=dict(pages),
        degraded_reason=reason,
        balloon=balloon,
    )

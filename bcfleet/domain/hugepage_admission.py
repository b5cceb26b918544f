"""Huge-page admission: whether the host's free huge pages back a guest's start; the agent calls it.

Pure: before it starts huge-page guests, the agent reads the free pages per NUMA node and size
(bcfleet.agent.host_memory.read_hugepage_pools) and calls admit_round() with the round's starts
in the order it will make them. A guest it refuses is not started and carries the shortfall's
condition; it is never started without huge pages (document 000: huge pages are never degraded).

Readings chosen:

- Pages needed: the guest's whole memory in pages of its size, rounded up (numa.pages_needed,
  the rule the placement chooser books by).
- Nodes: the guest's ``mems``. The domain XML binds its memory there with strict numatune
  (one guest cell, ``<memory mode="strict">``), so the kernel takes each page from any node of
  that set with one free; the start is backed when the free pages summed over those nodes cover
  the pages needed. A guest without ``mems`` may use every node. A host whose sysfs lists no
  NUMA node reports one global pool (node None), which backs any guest's nodes: such a kernel
  has the one node 0.
- Starts in one round: a guest admitted earlier in the round may take its pages from any of its
  nodes, so a later guest counts as gone, from the nodes both share, as many of the earlier
  guest's pages as those shared nodes had free (the worst case; exact for one-node guests). Two
  starts never count the same free page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bcfleet.domain.numa import pages_needed, size_label
from bcfleet.domain.shapes import HugepagePool, Shape
from bcfleet.errors import InvalidInputError

# The host's huge page pools: NUMA node (None: the global pool of a host with no nodes) → pools.
HostPools = Mapping[int | None, Sequence[HugepagePool]]

REFUSED_TYPE = "StartRefused"
REFUSED_REASON = "NotEnoughHugepages"


@dataclass(frozen=True)
class HugepageRequest:
    """A huge-page guest about to start: its memory (shape), page size and NUMA nodes."""

    guest_id: str
    shape: Shape
    size_bytes: int
    nodes: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if self.size_bytes <= 0:
            raise InvalidInputError(
                f"huge page size must be positive, got {self.size_bytes}",
                {"guestId": self.guest_id, "hugepageSizeBytes": self.size_bytes},
            )

    @property
    def pages(self) -> int:
        return pages_needed(self.shape, self.size_bytes)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> HugepageRequest | None:
        """The request of an InstanceSpec (id, shape, placement), or None without huge pages."""
        placement = spec.get("placement") or {}
        size = placement.get("hugepageSizeBytes")
        if size is None:
            return None
        mems = placement.get("mems")
        if (
            not isinstance(size, int)
            or isinstance(size, bool)
            or not (
                mems is None or (isinstance(mems, list) and all(isinstance(m, int) for m in mems))
            )
        ):
            raise InvalidInputError(
                "placement.hugepageSizeBytes must be a whole number and mems a list of nodes",
                {"guestId": str(spec.get("id")), "placement": dict(placement)},
            )
        nodes = None if mems is None else tuple(sorted(set(mems)))
        return cls(str(spec["id"]), Shape.from_json(spec["shape"]), size, nodes)


@dataclass(frozen=True)
class Shortfall:
    """What a refused start lacked: pages of one size on its nodes (None: the whole host)."""

    size_bytes: int
    nodes: tuple[int, ...] | None
    needed: int
    free: int

    @property
    def message(self) -> str:
        """``needs 4 × 1GiB pages on NUMA node 0, 2 free``."""
        pages = f"{self.needed} × {size_label(self.size_bytes)} pages"
        return f"needs {pages} on {_where(self.nodes)}, {self.free} free"

    def details(self) -> dict[str, Any]:
        return {
            "hugepageSizeBytes": self.size_bytes,
            "numaNodes": None if self.nodes is None else list(self.nodes),
            "pagesNeeded": self.needed,
            "pagesFree": self.free,
        }

    def condition(self) -> dict[str, str]:
        """The instance's StartRefused condition (without its time)."""
        return {
            "type": REFUSED_TYPE,
            "status": "True",
            "reason": REFUSED_REASON,
            "message": f"huge pages: {self.message}; the guest is not started",
        }


@dataclass(frozen=True)
class Admission:
    """The answer for one request: admitted, or refused with its shortfall."""

    request: HugepageRequest
    shortfall: Shortfall | None = None

    @property
    def admitted(self) -> bool:
        return self.shortfall is None


def _where(nodes: tuple[int, ...] | None) -> str:
    if nodes is None:
        return "the host"
    if len(nodes) == 1:
        return f"NUMA node {nodes[0]}"
    return f"NUMA nodes {', '.join(map(str, nodes[:-1]))} and {nodes[-1]}"


def _free(pools: HostPools, node: int | None, size_bytes: int) -> int:
    return sum(max(p.free, 0) for p in pools.get(node, ()) if p.size_bytes == size_bytes)


def _nodes_of(request: HugepageRequest, pools: HostPools) -> tuple[int | None, ...]:
    """The pool keys that may back the request (see the module docstring)."""
    if set(pools) == {None}:
        return (None,)
    if request.nodes is None:
        return tuple(sorted(node for node in pools if node is not None))
    return request.nodes


def _promised(request: HugepageRequest, pools: HostPools, earlier: Sequence[Admission]) -> int:
    """Pages of the request's size that earlier admitted starts may take from its nodes."""
    mine = set(_nodes_of(request, pools))
    taken = 0
    for admission in earlier:
        other = admission.request
        if not admission.admitted or other.size_bytes != request.size_bytes:
            continue
        shared = mine & set(_nodes_of(other, pools))
        available = sum(_free(pools, node, request.size_bytes) for node in shared)
        taken += min(other.pages, available)
    return taken


def admit_hugepages(
    request: HugepageRequest, pools: HostPools, earlier: Sequence[Admission] = ()
) -> Admission:
    """Admit the start when the free pages on its nodes, less earlier starts' pages, back it."""
    nodes = _nodes_of(request, pools)
    free = sum(_free(pools, node, request.size_bytes) for node in nodes)
    free = max(free - _promised(request, pools, earlier), 0)
    if free >= request.pages:
        return Admission(request)
    shown = None if nodes == (None,) or request.nodes is None else request.nodes
    return Admission(request, Shortfall(request.size_bytes, shown, request.pages, free))


def admit_round(requests: Sequence[HugepageRequest], pools: HostPools) -> tuple[Admission, ...]:
    """Each start of one round in order, counting the pages of those admitted before it."""
    answers: list[Admission] = []
    for request in requests:
        answers.append(admit_hugepages(request, pools, answers))
    return tuple(answers)

"""Pure checks of guests against the physical host: one CPU pinned once, huge pages within each NUMA node's total.

`fleet doctor --invariants` (bcfleet/placement/invariants.py) loads the live guests' host
placements and the hosts' inventories and asks these; they say what is wrong in words.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bcfleet.domain.numa import HostPlacement, size_label
from bcfleet.domain.shapes import Inventory


@dataclass(frozen=True)
class Guest:
    """A live guest on a host: the instance, its host, and where it runs there."""

    id: str
    node_id: str
    placement: HostPlacement


def double_pinned_cpus(guests: Iterable[Guest]) -> list[str]:
    """Each host CPU that two or more live guests have pinned (a floating cpuset pins nothing)."""
    holders: dict[tuple[str, int], list[str]] = defaultdict(list)
    for guest in guests:
        for cpu in sorted(set(guest.placement.cpus or ())):
            holders[(guest.node_id, cpu)].append(guest.id)
    return [
        f"node {node_id}: CPU {cpu} pinned by {' and '.join(sorted(ids))}"
        for (node_id, cpu), ids in sorted(holders.items())
        if len(ids) > 1
    ]


def overbooked_hugepages(
    guests: Iterable[Guest], inventories: Mapping[str, Inventory]
) -> list[str]:
    """Each (host, NUMA node, page size) whose live guests book more huge pages than it has.

    A host whose inventory is unknown is skipped (vps.hosts and doctor report it); a NUMA node
    or page size the inventory does not list has a total of zero.
    """
    booked: dict[tuple[str, int, int], int] = defaultdict(int)
    for guest in guests:
        size = guest.placement.hugepage_size_bytes
        if size is None:
            continue
        for numa, pages in guest.placement.hugepages_by_node.items():
            booked[(guest.node_id, numa, size)] += pages
    problems = []
    for (node_id, numa, size), pages in sorted(booked.items()):
        inventory = inventories.get(node_id)
        if inventory is None:
            continue
        numa_node = inventory.node(numa)
        pool = numa_node.hugepage_pool(size) if numa_node is not None else None
        total = pool.total if pool is not None else 0
        if pages > total:
            problems.append(
                f"node {node_id}: NUMA node {numa}: {pages} {size_label(size)} huge pages "
                f"booked of {total}"
            )
    return problems

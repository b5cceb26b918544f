"""Pure checks of guests against the physical host: one CPU pinned once, huge pages within each NUMA node's total, floating sets off pinned CPUs, and what guests hold still in the host's latest inventory.

`fleet doctor --invariants` (bcfleet/placement/invariants.py) loads the live guests' host
placements and the hosts' inventories and asks these; they say what is wrong in words.
inventory_shortfall is also the host's InventoryShortfall condition (hosts.show, hosts.list).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from bcfleet.domain.fit import capacity, derive_allocatable
from bcfleet.domain.host_reserve import HostReserve
from bcfleet.domain.numa import HostPlacement, reserved_cpus, size_label
from bcfleet.domain.scalars import SCALARS
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


def _ids(cpus: Iterable[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))


def floating_on_pinned(guests: Iterable[Guest]) -> list[str]:
    """Each floating guest whose cpuset holds a CPU another live guest of its host has pinned."""
    guests = list(guests)
    pinned: dict[tuple[str, int], str] = {}
    for guest in guests:
        for cpu in guest.placement.cpus or ():
            pinned.setdefault((guest.node_id, cpu), guest.id)
    problems = []
    for guest in sorted(guests, key=lambda g: (g.node_id, g.id)):
        if guest.placement.pinned:
            continue
        shared = [c for c in guest.placement.cpuset if (guest.node_id, c) in pinned]
        if shared:
            owners = sorted({pinned[(guest.node_id, c)] for c in shared})
            problems.append(
                f"node {guest.node_id}: floating guest {guest.id} may run on CPUs "
                f"{_ids(shared)}, pinned by {' and '.join(owners)}"
            )
    return problems


def pinned_outside_guest_cpus(
    guests: Iterable[Guest], inventories: Mapping[str, Inventory], reserves: Mapping[str, int]
) -> list[str]:
    """Each live guest pinned to a CPU its host keeps for itself or its latest inventory lacks.

    reserves: each host's policy.hostReserve.vcpu. A host whose inventory is unknown is skipped.
    """
    problems = []
    for guest in sorted(guests, key=lambda g: (g.node_id, g.id)):
        inventory = inventories.get(guest.node_id)
        if inventory is None or not guest.placement.pinned:
            continue
        reserved = reserved_cpus(inventory, reserves.get(guest.node_id, 0))
        have = {c.id for c in inventory.cpus}
        cpus = set(guest.placement.cpus or ())
        if cpus & reserved:
            problems.append(
                f"node {guest.node_id}: guest {guest.id} is pinned to CPUs "
                f"{_ids(cpus & reserved)}, reserved for the host"
            )
        if cpus - have:
            problems.append(
                f"node {guest.node_id}: guest {guest.id} is pinned to CPUs {_ids(cpus - have)}, "
                f"which the host's latest inventory ({len(have)} CPUs) does not have"
            )
    return problems


@dataclass(frozen=True)
class Held:
    """What a host's live guests hold there: scalars as allocated, pinned CPUs, GPUs' addresses."""

    allocated: Mapping[str, int]
    ratios: Mapping[str, float]
    pinned: frozenset[int] = frozenset()
    gpus: frozenset[str] = frozenset()


def inventory_shortfall(inventory: Inventory, reserve: HostReserve, held: Held) -> list[str]:
    """What the host's guests hold that its latest inventory no longer has, in words; [] if none.

    A scalar falls short when the inventory's capacity (inventory − reserve, × ratio) is below
    what is allocated; pinned CPUs and GPUs (by PCI address) when the inventory lacks them.
    """
    missing = []
    offered = derive_allocatable(inventory, reserve) or {}
    for resource in SCALARS:
        allocated = held.allocated.get(resource, 0)
        has = capacity(offered.get(resource, 0), held.ratios.get(resource, 1.0))
        if allocated > has:
            missing.append(f"{resource} {allocated} held, the inventory offers {has}")
    cpus = held.pinned - {c.id for c in inventory.cpus}
    if cpus:
        missing.append(f"pinned CPUs {_ids(cpus)} not in the inventory")
    gpus = held.gpus - {g.pci_address.lower() for g in inventory.gpus}
    if gpus:
        missing.append(f"GPUs {', '.join(sorted(gpus))} held but not in the inventory")
    return missing

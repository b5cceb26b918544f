"""The floating CPU set of a host: its CPUs that are neither the host's reserve nor pinned by a guest.

One rule, used where a floating guest gets its cpuset (the NUMA chooser, domain/numa.py) and
where a pinned guest lands on or leaves a host (placement/floating.py re-derives the floating
guests' sets, so a guest never shares a CPU another guest has pinned, and a released pinned
guest's CPUs go back to the floating ones). Pure: CPUs, ids and placements in, sets out.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from bcfleet.domain.shapes import Cpu, Inventory

if TYPE_CHECKING:
    from bcfleet.domain.numa import HostPlacement


def floating_cpus(
    cpus: Iterable[Cpu],
    reserved: Collection[int],
    pinned: Collection[int],
    node: int | None = None,
) -> tuple[int, ...]:
    """The ids of the host's CPUs (of one NUMA node) outside its reserve and no guest's pin, sorted."""
    return tuple(
        sorted(
            c.id
            for c in cpus
            if c.id not in reserved and c.id not in pinned and (node is None or c.numa_node == node)
        )
    )


def floating_node(placement: HostPlacement, inventory: Inventory) -> int | None:
    """The NUMA node a floating guest is kept on (an honoured numaAffine), or None for any node.

    Such a guest has one node in mems and every CPU of its cpuset on that node.
    """
    mems = placement.mems or ()
    if len(mems) != 1 or placement.degraded_reason is not None or not placement.cpuset:
        return None
    nodes = {c.id: c.numa_node for c in inventory.cpus}
    return mems[0] if all(nodes.get(c) == mems[0] for c in placement.cpuset) else None


def pinned_cpus(placements: Iterable[HostPlacement]) -> frozenset[int]:
    """Every CPU a guest of the host has pinned."""
    return frozenset(c for p in placements for c in p.cpus or ())


def refloat(
    placement: HostPlacement,
    inventory: Inventory,
    reserved: Collection[int],
    pinned: Collection[int],
) -> HostPlacement | None:
    """A floating guest's placement with its cpuset re-derived; None when it keeps its own.

    A pinned guest keeps its placement. So does a floating guest that would be left with no
    CPU (the chooser refuses the pin that would do it; doctor reports any overlap left).
    """
    if placement.pinned:
        return None
    cpuset = floating_cpus(inventory.cpus, reserved, pinned, floating_node(placement, inventory))
    if not cpuset or cpuset == placement.cpuset:
        return None
    return replace(placement, cpuset=cpuset)


def refloat_host(
    inventory: Inventory, reserved: Collection[int], guests: Mapping[str, HostPlacement]
) -> dict[str, HostPlacement]:
    """The host's floating guests whose cpuset changes, by id, given all its guests' placements."""
    pinned = pinned_cpus(guests.values())
    changed = {}
    for guest_id, placement in guests.items():
        new = refloat(placement, inventory, reserved, pinned)
        if new is not None:
            changed[guest_id] = new
    return changed

"""Invariant checks for `fleet doctor --invariants`: what must hold whatever crashed or raced."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import text
from sqlmodel import Session, col, select

from bcfleet.domain.host_reserve import DEFAULT_RESERVE, HostReserve
from bcfleet.domain.numa import HostPlacement
from bcfleet.domain.physical import (
    Guest,
    double_pinned_cpus,
    floating_on_pinned,
    overbooked_hugepages,
    pinned_outside_guest_cpus,
)
from bcfleet.domain.shapes import Inventory, Shape
from bcfleet.domain.states import INSTANCE_LIVE, INSTANCE_ON_HOST, InstanceState
from bcfleet.placement.holdings import host_inventories, shortfalls
from bcfleet.placement.quotas import quota_usage
from bcfleet.store.id_chunks import id_chunks
from bcfleet.store.models import (
    Allocation,
    Booking,
    GpuAtom,
    Host,
    Instance,
    Reservation,
)
from bcfleet.store.stored_json import INSTANCE_DOCUMENTS, decode, problem


def over_capacity(session: Session) -> list[str]:
    rows = session.execute(
        text(
            "SELECT node_id, resource, allocated, capacity FROM node_resources WHERE allocated > capacity"
        )
    ).all()
    return [f"node {n}: {r} {a} allocated of capacity {c}" for n, r, a, c in rows]


def allocated_matches_allocations(session: Session) -> list[str]:
    """Each row's allocated equals the sum of its node's live allocations' claims."""
    live: dict[tuple[str, str], int] = defaultdict(int)
    for node_id, claims in session.execute(
        select(Allocation.node_id, Allocation.claims).where(col(Allocation.released_at).is_(None))
    ).all():
        for resource, amount in (claims or {}).items():
            live[(node_id, resource)] += int(amount)
    problems = []
    for node_id, resource, allocated in session.execute(
        text("SELECT node_id, resource, allocated FROM node_resources")
    ).all():
        if live.get((node_id, resource), 0) != allocated:
            problems.append(
                f"node {node_id}: {resource} allocated {allocated}, live allocations hold {live.get((node_id, resource), 0)}"
            )
    return problems


def double_booked_atoms(session: Session) -> list[str]:
    """No GPU atom has two live bookings whose windows overlap."""
    by_atom: dict[int, list[Booking]] = defaultdict(list)
    for booking in session.scalars(select(Booking).where(col(Booking.released_at).is_(None))).all():
        by_atom[booking.atom_id].append(booking)
    problems = []
    for atom_id, bookings in by_atom.items():
        ordered = sorted(bookings, key=lambda b: b.starts_at)
        for first, second in zip(ordered, ordered[1:], strict=False):
            if first.ends_at is None or first.ends_at > second.starts_at:
                problems.append(
                    f"GPU atom {atom_id}: {first.consumer_id} and {second.consumer_id} overlap"
                )
    return problems


def _overlap(first: Booking, second: Booking) -> bool:
    """Whether two bookings' windows overlap (first starts no later than second)."""
    return first.ends_at is None or first.ends_at > second.starts_at


def double_held_gpus(session: Session) -> list[str]:
    """No physical GPU (host and PCI address) is held by two live guests at once.

    double_booked_atoms sees one atom; this sees two atoms naming the same device, which an
    inventory listing one PCI address twice (accepted before inventories were checked for it)
    leaves behind.
    """
    by_device: dict[tuple[str, str], list[tuple[int, Booking]]] = defaultdict(list)
    rows = session.execute(
        select(GpuAtom.id, GpuAtom.pci_address, Booking)
        .join(Booking, col(Booking.atom_id) == col(GpuAtom.id))
        .where(col(Booking.released_at).is_(None))
    ).all()
    for atom_id, address, booking in rows:
        by_device[(booking.node_id, str(address).lower())].append((atom_id, booking))
    problems = []
    for (node_id, address), held in sorted(by_device.items()):
        ordered = sorted(held, key=lambda pair: pair[1].starts_at)
        for index, (atom, first) in enumerate(ordered):
            for other, second in ordered[index + 1 :]:
                if (
                    other != atom
                    and first.consumer_id != second.consumer_id
                    and _overlap(first, second)
                ):
                    problems.append(
                        f"node {node_id}: GPU {address} held by {first.consumer_id} "
                        f"and {second.consumer_id} (atoms {atom} and {other})"
                    )
    return problems


def readable_documents(session: Session) -> list[str]:
    """Every instance's stored JSON documents are what their columns hold (store/stored_json.py)."""
    problems = []
    for instance_id, shape, placement, conditions in session.execute(
        select(Instance.id, Instance.shape, Instance.host_placement, Instance.conditions)
    ).all():
        values = {"shape": shape, "host_placement": placement, "conditions": conditions}
        _, unreadable = decode(values, INSTANCE_DOCUMENTS)
        if unreadable:
            problems.append(f"instance {instance_id}: {problem(unreadable)}")
    return problems


def quota_matches_charges(session: Session) -> list[str]:
    """Quota used equals the sum of live charges: admitted instances and charged reservations.

    An instance whose shape gives no charge is reported here; one whose shape cannot be read
    at all is readableDocuments' to report."""
    expected: dict[tuple[str, str, str], int] = defaultdict(int)
    problems = []
    for instance in session.scalars(
        select(Instance).where(Instance.state != InstanceState.DELETED)
    ).all():
        shape, unreadable = decode({"shape": instance.shape}, INSTANCE_DOCUMENTS)
        if "shape" in unreadable:
            continue
        try:
            charge = Shape.from_json(shape["shape"]).quota_charge()
        except (TypeError, ValueError):
            problems.append(f"instance {instance.id}: its shape gives no quota charge")
            continue
        for resource, amount in charge.items():
            expected[(instance.tenant_id, instance.pool_id, resource)] += amount
    for reservation in session.scalars(
        select(Reservation).where(col(Reservation.quota_charged).is_(True))
    ).all():
        expected[(reservation.tenant_id, reservation.pool_id, "gpu")] += (
            reservation.gpus * reservation.nodes
        )
    seen = set()
    for key, used in quota_usage(session).items():
        seen.add(key)
        if used != expected.get(key, 0):
            problems.append(
                f"quota {key[0]}/{key[1]}/{key[2]}: used {used}, live charges {expected.get(key, 0)}"
            )
    for key, amount in expected.items():
        if key not in seen and amount:
            problems.append(f"quota {key[0]}/{key[1]}/{key[2]}: no row, live charges {amount}")
    return problems


def instances_have_allocations(session: Session) -> list[str]:
    """Every live placed hosted instance has a live allocation on its node."""
    rows = session.execute(
        select(Instance.id, Instance.node_id, Allocation.node_id, Allocation.released_at)
        .join(Allocation, col(Allocation.id) == col(Instance.allocation_id), isouter=True)
        .where(col(Instance.state).in_(INSTANCE_ON_HOST), col(Instance.node_id).is_not(None))
    ).all()
    return [
        f"instance {iid}: no live allocation on {node}"
        for iid, node, alloc_node, released in rows
        if alloc_node is None or released is not None or alloc_node != node
    ]


def live_guests(session: Session) -> tuple[list[Guest], list[str]]:
    """The live hosted guests with a host placement; and those whose placement cannot be read."""
    rows = session.execute(
        select(Instance.id, Instance.node_id, Instance.host_placement).where(
            col(Instance.state).in_(INSTANCE_LIVE),
            col(Instance.node_id).is_not(None),
            col(Instance.host_placement).is_not(None),
        )
    ).all()
    guests, unreadable = [], []
    for instance_id, node_id, doc in rows:
        documents, bad = decode({"host_placement": doc}, INSTANCE_DOCUMENTS)
        try:
            if bad:
                raise ValueError(problem(bad))
            placement = HostPlacement.from_json(documents["host_placement"] or {})
        except (TypeError, ValueError, AttributeError):
            unreadable.append(f"instance {instance_id}: its host placement cannot be read")
            continue
        guests.append(Guest(instance_id, node_id, placement))
    return guests, unreadable


def double_pinned(session: Session) -> list[str]:
    """No host CPU is pinned by two live guests at once."""
    guests, unreadable = live_guests(session)
    return unreadable + double_pinned_cpus(guests)


def hugepages_over_total(session: Session) -> list[str]:
    """Live guests' huge pages per host, NUMA node and page size stay within the inventory's total."""
    guests, _ = live_guests(session)  # unreadable placements are doublePinnedCpus' to report
    wanted = sorted({g.node_id for g in guests if g.placement.hugepage_size_bytes is not None})
    inventories: dict[str, Inventory] = {}
    for chunk in id_chunks(wanted):
        for node_id, doc in session.execute(
            select(Host.id, Host.inventory).where(
                col(Host.id).in_(chunk), col(Host.inventory).is_not(None)
            )
        ).all():
            try:
                inventories[node_id] = Inventory.from_json(doc)
            except ValueError:
                continue  # vps.hosts.inventory reports a host whose inventory cannot be read
    return overbooked_hugepages(guests, inventories)


def floating_on_pinned_cpus(session: Session) -> list[str]:
    """No floating guest may run on a CPU another live guest of its host has pinned."""
    guests, _ = live_guests(session)  # unreadable placements are doublePinnedCpus' to report
    return floating_on_pinned(guests)


@dataclass(frozen=True)
class HostFacts:
    """What the checks of guests against their hosts' latest inventories need from the fleet."""

    now: datetime
    reserve: HostReserve = DEFAULT_RESERVE


def pinned_outside_guest_cpus_check(session: Session, facts: HostFacts) -> list[str]:
    """No live guest is pinned to a CPU its host keeps for itself or no longer reports."""
    guests, _ = live_guests(session)
    wanted = sorted({g.node_id for g in guests if g.placement.pinned})
    if not wanted:
        return []
    found = host_inventories(session.connection(), facts.reserve, wanted)
    inventories = {node: inventory for node, (inventory, _) in found.items()}
    reserves = {node: reserve.vcpu for node, (_, reserve) in found.items()}
    return pinned_outside_guest_cpus(guests, inventories, reserves)


def inventory_shortfall_check(session: Session, facts: HostFacts) -> list[str]:
    """Each host's latest inventory still has what its live guests hold (scalars, pinned CPUs, GPUs)."""
    found = shortfalls(session.connection(), facts.now, facts.reserve)
    return [f"node {node}: {'; '.join(missing)}" for node, missing in sorted(found.items())]


CHECKS: dict[str, Callable[[Session], list[str]]] = {
    "overCapacity": over_capacity,
    "allocatedMatchesAllocations": allocated_matches_allocations,
    "doubleBookedAtoms": double_booked_atoms,
    "doubleHeldGpus": double_held_gpus,
    "doublePinnedCpus": double_pinned,
    "floatingOnPinnedCpus": floating_on_pinned_cpus,
    "hugepagesOverTotal": hugepages_over_total,
    "quotaMatchesCharges": quota_matches_charges,
    "instancesHaveAllocations": instances_have_allocations,
    "readableDocuments": readable_documents,
}
HOST_CHECKS: dict[str, Callable[[Session, HostFacts], list[str]]] = {
    "pinnedOutsideGuestCpus": pinned_outside_guest_cpus_check,
    "inventoryShortfall": inventory_shortfall_check,
}


def check_all(session: Session, facts: HostFacts | None = None) -> dict[str, Any]:
    """Every invariant; the checks against the hosts' inventories need facts (doctor passes
    its clock and the fleet's host reserve), and are left out without them."""
    results = {name: check(session) for name, check in CHECKS.items()}
    if facts is not None:
        results.update({name: check(session, facts) for name, check in HOST_CHECKS.items()})
    return {"ok": not any(results.values()), "problems": results}

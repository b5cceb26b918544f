"""Resize in place (document 000): charge growth, change the allocation's claims all or nothing, refund shrinkage.

The allocation never moves and is changed by the difference only, so a same-host resize
never counts the instance twice (the failure of Nova bug 1790204).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from bcfleet.domain.numa import NotCandidate
from bcfleet.domain.shapes import Shape, placement_from_json, shape_delta
from bcfleet.domain.states import InstanceState
from bcfleet.errors import CapacityUnavailableError
from bcfleet.placement.claims import claim_scalars, lock_node_rows, return_scalars
from bcfleet.placement.floating import refloat_guests
from bcfleet.placement.gpus import AtomRef
from bcfleet.placement.instance_placer import _record_placement, choose_placement
from bcfleet.placement.quotas import charge, lock_quotas, refund
from bcfleet.store.models import Allocation, Booking, ClaimPeriod, GpuAtom, Instance, Pool

if TYPE_CHECKING:
    from bcfleet.placement.handle import PlacementHandle


def _end_period(session: Session, allocation: Allocation, now: datetime) -> None:
    """Record the claims that held until now (from the previous resize or the placement)."""
    last = session.exec(
        select(func.max(col(ClaimPeriod.ended_at))).where(
            col(ClaimPeriod.allocation_id) == allocation.id
        )
    ).one()
    started = last if last is not None else allocation.starts_at
    if now <= started:
        return  # no time at the old claims (placed or resized at this very moment)
    session.add(
        ClaimPeriod(
            allocation_id=allocation.id,
            vcpu=int(allocation.claims.get("vcpu", 0)),
            memory_gib=int(allocation.claims.get("memoryGiB", 0)),
            started_at=started,
            ended_at=now,
        )
    )


def resize_allocation(
    session: Session,
    allocation: Allocation,
    growth: dict[str, int],
    shrinkage: dict[str, int],
    now: datetime,
) -> str | None:
    """Change an allocation's claims in place, all or nothing; the resource that ran out, or None.

    The claims that held until `now` are kept as a ClaimPeriod, for metering.
    """
    lock_node_rows(session, allocation.node_id)
    savepoint = session.begin_nested()
    failed = claim_scalars(session, allocation.node_id, growth)
    if failed is not None:
        savepoint.rollback()
        return failed
    return_scalars(session, allocation.node_id, shrinkage)
    claims = dict(allocation.claims)
    if growth or shrinkage:
        _end_period(session, allocation, now)
    for resource, amount in growth.items():
        claims[resource] = claims.get(resource, 0) + amount
    for resource, amount in shrinkage.items():
        claims[resource] = claims.get(resource, 0) - amount
    allocation.claims = claims
    session.add(allocation)
    savepoint.commit()
    return None


def resize_hosted(
    session: Session,
    fleet: PlacementHandle,
    instance: Instance,
    pool: Pool,
    new_shape: dict[str, Any],
    flavor_id: str,
) -> None:
    """The four steps; raises QUOTA_EXCEEDED or CAPACITY_UNAVAILABLE (details.resource) and changes nothing."""
    delta = shape_delta(Shape.from_json(instance.shape), Shape.from_json(new_shape))
    growth, shrinkage = delta.growth(), delta.shrinkage()
    lock_quotas(session, instance.tenant_id, pool.id)  # it charges and refunds: all rows, in order
    charge(session, instance.tenant_id, pool.id, growth)  # 1. growth to quota
    allocation = session.get(Allocation, instance.allocation_id) if instance.allocation_id else None
    if allocation is None:
        raise CapacityUnavailableError(
            "the instance has no allocation to resize", {"resource": "allocation"}
        )
    failed = resize_allocation(session, allocation, growth, shrinkage, fleet.now())  # 2.
    if failed is not None:  # 3. the raise rolls the growth charge back with everything else
        raise CapacityUnavailableError(
            f"not enough {failed} on the instance's host for the new shape", {"resource": failed}
        )
    refund(session, instance.tenant_id, pool.id, shrinkage)  # 4. shrinkage back to quota
    instance.shape = dict(new_shape)
    instance.flavor_id = flavor_id
    _replace(session, fleet, instance, pool, allocation)


def _replace(
    session: Session, fleet: PlacementHandle, instance: Instance, pool: Pool, allocation: Allocation
) -> None:
    """A same-placement resize chooses the host placement again for the new shape."""
    booked = select(GpuAtom).join(Booking, col(Booking.atom_id) == col(GpuAtom.id))
    booked = booked.where(
        col(Booking.consumer_id) == instance.id, col(Booking.released_at).is_(None)
    )
    atoms = [
        AtomRef(a.id or 0, a.node_id, a.index, a.pci_address, a.numa_node, a.model)
        for a in session.exec(booked).all()
    ]
    shape = Shape.from_json(instance.shape)
    policy = placement_from_json(instance.shape.get("placement"))
    try:
        placement = choose_placement(
            session, fleet, pool, allocation.node_id, shape, policy, atoms, instance.id
        )
    except NotCandidate as refused:
        raise CapacityUnavailableError(
            f"the host cannot back the new shape: {refused.reason}",
            {"resource": refused.no_fit().kind},
        ) from refused
    _record_placement(instance, allocation.node_id, allocation.id, placement, fleet)
    refloat_guests(
        session, fleet, pool, allocation.node_id, guest_id=instance.id, placement=placement
    )
    instance.state = InstanceState.STOPPED
    session.add(instance)

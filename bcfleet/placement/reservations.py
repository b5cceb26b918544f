"""Reservation rows in SQL: admit against quota, book GPU atoms under locks, go pending, activate, release.

The placer (placement/reservation_placer.py) and the preemption transaction (placement/preempt.py)
call these; the API and the reservation jobs call the placer and the lifecycle steps.
Lock order, as everywhere: reservation rows, quota rows, node rows, GPU atoms by id,
and last the pool's booking version (gpu_versions). Events are written here, in the
caller's transaction, each row one tenant's copy.

States: pending → placed → active → released. `binding` is a live state the planners
honour, but no stop of its own yet: nothing acknowledges device binding on a node, so
the lifecycle job moves placed → active at the start (activated_at is what metering
bills from). A reservation that releases never active (cancelled, requeued) bills nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlmodel import Session, col, select

from bcfleet.clock import format_time
from bcfleet.domain.gpu_plan import GpuRequest, NodePick
from bcfleet.domain.notices import RELEASED, Preemptor, released_payload
from bcfleet.domain.states import HostState, ReservationState
from bcfleet.ids import IdFactory
from bcfleet.placement import gpus
from bcfleet.placement.conditions import clear_condition, set_condition
from bcfleet.placement.quotas import charge, refund
from bcfleet.store.engine import is_sqlite
from bcfleet.store.event_log import emit
from bcfleet.store.models import GpuAtom, Host, Reservation

if TYPE_CHECKING:
    from bcfleet.placement.handle import PlacementHandle

NO_FIT_REASON = "NoNodeFits"


def record_event(
    session: Session,
    ids: IdFactory,
    at: datetime,
    event_type: str,
    rsv: Reservation,
    data: dict[str, Any],
) -> None:
    """One event for the reservation's own tenant (operators read every tenant's copy)."""
    emit(session, ids, at, event_type, tenant_id=rsv.tenant_id, subject_id=rsv.id, data=data)


def gpu_charge(rsv: Reservation) -> dict[str, int]:
    """What a reservation counts against quota: gpus on each of its nodes, spot or not."""
    return {"gpu": rsv.gpus * rsv.nodes}


def admit(session: Session, rsv: Reservation) -> None:
    """Charge the tenant's gpu quota in the pool (QUOTA_EXCEEDED, nothing written, otherwise)."""
    charge(session, rsv.tenant_id, rsv.pool_id, gpu_charge(rsv))
    rsv.quota_charged = True
    session.add(rsv)


def request_of(rsv: Reservation, now: datetime) -> GpuRequest:
    """The window to place now: from the requested start, or from now when that has passed."""
    start = max(rsv.requested_start, now)
    end = start + timedelta(seconds=rsv.duration_seconds)
    return GpuRequest(rsv.gpus, start, end, nodes=rsv.nodes, binding=rsv.binding, spot=rsv.spot)


def lock_present_atoms(session: Session, atom_ids: Sequence[int]) -> list[gpus.AtomRef]:
    """Lock the atoms in id order (PostgreSQL) and return those still present on ready nodes."""
    query = (
        select(GpuAtom)
        .join(Host, col(Host.id) == col(GpuAtom.node_id))
        .where(
            col(GpuAtom.id).in_(sorted(atom_ids)),
            col(GpuAtom.present).is_(True),
            col(Host.state) == HostState.READY,
        )
        .order_by(col(GpuAtom.id))
    )
    if not is_sqlite(session.get_bind().engine):
        query = query.with_for_update(of=GpuAtom)
    refs = []
    for atom in session.scalars(query).all():
        assert atom.id is not None
        refs.append(gpus.AtomRef(atom.id, atom.node_id, atom.index, atom.pci_address,
                                 atom.numa_node, atom.model))  # fmt: skip
    return refs


def guarded_book(
    session: Session,
    fleet: PlacementHandle,
    rsv: Reservation,
    picks: Sequence[NodePick],
    start: datetime,
    end: datetime,
) -> bool:
    """Lock the picked atoms, re-check them, book [start, end) and mark the reservation placed."""
    atom_ids = sorted(int(atom) for node in picks for atom in node.atom_ids)
    atoms = lock_present_atoms(session, atom_ids)
    if len(atoms) != len(atom_ids) or not gpus.still_free(session, atom_ids, start, end):
        return False
    gpus.book(session, fleet.ids, atoms, consumer_kind="reservation", consumer_id=rsv.id,
              tenant_id=rsv.tenant_id, start=start, end=end, spot=rsv.spot, at=fleet.now())  # fmt: skip
    mark_placed(rsv, [node.node_id for node in picks], start, end, fleet.now())
    session.add(rsv)
    return True


def book_plan(
    session: Session,
    fleet: PlacementHandle,
    rsv: Reservation,
    picks: Sequence[NodePick],
    start: datetime,
    end: datetime,
) -> bool:
    """guarded_book inside a savepoint: a refused plan leaves nothing behind."""
    savepoint = session.begin_nested()
    if guarded_book(session, fleet, rsv, picks, start, end):
        savepoint.commit()
        return True
    savepoint.rollback()
    return False


def mark_placed(
    rsv: Reservation, node_ids: list[str], start: datetime, end: datetime, now: datetime
) -> None:
    rsv.state = ReservationState.PLACED
    rsv.starts_at, rsv.ends_at = start, end
    rsv.node_ids = node_ids
    rsv.conditions = clear_condition(rsv.conditions, "Unschedulable")
    rsv.updated_at = now


def mark_pending(rsv: Reservation, reason: str, message: str, now: datetime) -> None:
    """Pending without a window, with Unschedulable saying why (a counted reason from the planner)."""
    rsv.state = ReservationState.PENDING
    rsv.starts_at = rsv.ends_at = None
    rsv.node_ids = []
    rsv.conditions = set_condition(
        rsv.conditions, "Unschedulable", reason=reason, message=message, at=now
    )
    rsv.updated_at = now


def placed_data(rsv: Reservation) -> dict[str, Any]:
    return {"state": str(rsv.state), "during": during_json(rsv), "nodes": list(rsv.node_ids)}


def during_json(rsv: Reservation) -> dict[str, str] | None:
    if rsv.starts_at is None or rsv.ends_at is None:
        return None
    return {"start": format_time(rsv.starts_at), "end": format_time(rsv.ends_at)}


def activate(session: Session, fleet: PlacementHandle, rsv: Reservation, now: datetime) -> None:
    """placed → active at its start: the moment metering bills from."""
    rsv.state = ReservationState.ACTIVE
    rsv.activated_at = now
    rsv.updated_at = now
    session.add(rsv)
    record_event(session, fleet.ids, now, "reservation.active", rsv,
                 {"state": ReservationState.ACTIVE, "during": during_json(rsv)})  # fmt: skip


def release(
    session: Session, fleet: PlacementHandle, rsv: Reservation, reason: str, now: datetime
) -> None:
    """Release bookings, refund quota, and emit reservation.released (the caller locked the row).

    A running reservation released early (cancelled) ends now; a cut-back victim keeps
    its deadline as during.end, so metering bills it until then and no further.
    """
    if rsv.quota_charged:
        refund(session, rsv.tenant_id, rsv.pool_id, gpu_charge(rsv))
        rsv.quota_charged = False
    gpus.release_bookings(session, rsv.id, now)
    if rsv.state == ReservationState.ACTIVE and rsv.ends_at is not None and rsv.ends_at > now:
        rsv.ends_at = now
    rsv.state = ReservationState.RELEASED
    rsv.release_reason = reason
    rsv.released_at = now
    rsv.updated_at = now
    session.add(rsv)
    preemptor = None
    if rsv.preempted_by is not None and rsv.preempted_by_tenant is not None:
        preemptor = Preemptor(rsv.preempted_by_tenant, rsv.preempted_by)
    if reason == "preempted":
        data = released_payload(rsv.tenant_id, rsv.id, preemptor, at=rsv.ends_at or now)
    else:
        data = {"reservationId": rsv.id, "reason": reason, "at": format_time(now)}
    record_event(session, fleet.ids, now, RELEASED, rsv, data)

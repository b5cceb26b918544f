"""Spot preemption, document 003's four steps: plan from the deadline, then lock, notify and place in one savepoint.

The placer calls preempt() only for a regular pool-binding request that would
otherwise go pending. Steps 1–3 are the pure planner (domain/preemption.py) over
the pool's snapshot. Step 4 runs inside one savepoint:

- lock the victims' rows (FOR UPDATE SKIP LOCKED on PostgreSQL; SQLite writers are
  serialized) and re-check that each still qualifies: spot, placed/binding/active,
  not preempted already, in this pool, still booked on the planned atoms in the
  window, and starting on the side of the deadline the plan assumed;
- give each its notice: a victim that has started or starts before the deadline
  is cut back (bookings and allocations end at the deadline, during.end = deadline,
  Preempted/SpotPreempted, reservation.preempting with `at`); one that starts at
  or after it loses its bookings and goes back to pending without a window
  (Unschedulable/SpotPreempted, quota kept, reservation.preempted requeued: true);
- lock the planned atoms in id order, re-check them free for [deadline, end), book
  them and mark the request placed from the deadline.

Anything off rolls the savepoint back: no spot reservation is touched, and the
caller leaves the request pending as usual. Wording comes from domain/notices.py,
so no tenant reads another tenant's reservation id.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import update
from sqlmodel import Session, col, select

from bcfleet.domain.gpu_plan import GpuRequest, GpuSnapshot
from bcfleet.domain.notices import Preemptor, notice
from bcfleet.domain.preemption import CUT_BACK, PreemptionPlan, Victim, plan_preemption
from bcfleet.domain.states import RESERVATION_LIVE, ReservationState
from bcfleet.placement import gpus
from bcfleet.placement.conditions import set_condition
from bcfleet.placement.gpu_versions import touch_nodes
from bcfleet.placement.reservations import (
    guarded_book,
    placed_data,
    record_event,
)
from bcfleet.store.engine import is_sqlite
from bcfleet.store.models import Allocation, Booking, Reservation

if TYPE_CHECKING:
    from bcfleet.placement.handle import PlacementHandle


class _Off(Exception):
    """Something changed since the plan: roll the savepoint back."""


def may_preempt(rsv: Reservation) -> bool:
    """Only regular pool-binding requests preempt; spot never does, node leases never do."""
    return not rsv.spot and rsv.binding == "pool"


def notice_of(fleet: PlacementHandle) -> timedelta:
    return timedelta(milliseconds=fleet.settings.spot_notice_ms)


def preempt(
    session: Session,
    fleet: PlacementHandle,
    rsv: Reservation,
    snapshot: GpuSnapshot,
    request: GpuRequest,
) -> bool:
    """Place the request from the deadline by preempting spot work; False (nothing touched) if not."""
    if not may_preempt(rsv):
        return False
    now = fleet.now()
    limit = fleet.settings.preemption_candidate_limit
    plan = plan_preemption(snapshot, request, now, notice_of(fleet), limit)
    if plan is None:
        return False
    savepoint = session.begin_nested()
    try:
        _apply(session, fleet, rsv, plan, now)
    except _Off:
        savepoint.rollback()
        return False
    savepoint.commit()
    return True


def _apply(
    session: Session, fleet: PlacementHandle, rsv: Reservation, plan: PreemptionPlan, now: datetime
) -> None:
    victims = _lock_victims(session, plan)
    preemptor = Preemptor(rsv.tenant_id, rsv.id)
    touched: set[str] = set()
    for victim in plan.victims:
        row = victims[victim.reservation_id]
        touched.update(row.node_ids)
        if victim.action == CUT_BACK:
            _cut_back(session, fleet, row, preemptor, plan.start, now)
        else:
            _requeue(session, fleet, row, preemptor, plan.start, now)
    if not guarded_book(session, fleet, rsv, plan.picks, plan.start, plan.end):
        raise _Off
    touch_nodes(session, touched - set(rsv.node_ids))  # booking touched the planned nodes
    record_event(session, fleet.ids, now, "reservation.placed", rsv, placed_data(rsv))


def _lock_victims(session: Session, plan: PreemptionPlan) -> dict[str, Reservation]:
    """Lock every victim or none: a row another transaction holds is skipped, and that is off."""
    ids = sorted(plan.victim_ids)
    if not ids:
        return {}
    query = (
        select(Reservation)
        .where(col(Reservation.id).in_(ids))
        .order_by(col(Reservation.id))
        .execution_options(populate_existing=True)
    )
    if not is_sqlite(session.get_bind().engine):
        query = query.with_for_update(skip_locked=True)
    rows = {row.id: row for row in session.scalars(query).all()}
    if len(rows) != len(ids):
        raise _Off
    for victim in plan.victims:
        if not _qualifies(rows[victim.reservation_id], victim, plan.start):
            raise _Off
    if _still_booked(session, plan) != set(ids):
        raise _Off
    return rows


def _qualifies(row: Reservation, victim: Victim, deadline: datetime) -> bool:
    """Still live spot work, not preempted yet, on the side of the deadline the plan assumed."""
    if not row.spot or row.state not in RESERVATION_LIVE or row.deadline is not None:
        return False
    if row.starts_at is None:
        return False
    return (row.starts_at < deadline) == (victim.action == CUT_BACK)


def _still_booked(session: Session, plan: PreemptionPlan) -> set[str]:
    """The victims that still hold one of the planned atoms in the window."""
    atoms = [int(atom) for node in plan.picks for atom in node.atom_ids]
    return set(
        session.execute(
            select(Booking.consumer_id).where(
                col(Booking.consumer_id).in_(list(plan.victim_ids)),
                col(Booking.atom_id).in_(atoms),
                gpus.overlapping(plan.start, plan.end),
            )
        )
        .scalars()
        .all()
    )


def _cut_back(
    session: Session,
    fleet: PlacementHandle,
    row: Reservation,
    preemptor: Preemptor,
    at: datetime,
    now: datetime,
) -> None:
    """Bookings and allocations end at the deadline; Preempted; reservation.preempting."""
    assert row.starts_at is not None and row.starts_at < at
    live = col(Booking.consumer_id) == row.id, col(Booking.released_at).is_(None)
    session.execute(
        update(Booking)
        .where(*live, col(Booking.starts_at) < at)
        .where(col(Booking.ends_at).is_(None) | (col(Booking.ends_at) > at))
        .values(ends_at=at)
    )
    session.execute(
        update(Allocation)
        .where(col(Allocation.consumer_id) == row.id, col(Allocation.released_at).is_(None))
        .where(col(Allocation.ends_at).is_(None) | (col(Allocation.ends_at) > at))
        .values(ends_at=at)
    )
    told = notice(row.tenant_id, row.id, preemptor, at=at, requeued=False)
    row.ends_at = at
    _mark(row, preemptor, at, now, told.condition)
    session.add(row)
    record_event(session, fleet.ids, now, told.event_type, row, told.payload)


def _requeue(
    session: Session,
    fleet: PlacementHandle,
    row: Reservation,
    preemptor: Preemptor,
    at: datetime,
    now: datetime,
) -> None:
    """Bookings released, pending without a window, quota kept; reservation.preempted requeued."""
    session.execute(
        update(Booking)
        .where(col(Booking.consumer_id) == row.id, col(Booking.released_at).is_(None))
        .values(released_at=now, ends_at=Booking.starts_at)  # never started: nothing to bill
    )
    told = notice(row.tenant_id, row.id, preemptor, at=at, requeued=True)
    row.state = ReservationState.PENDING
    row.starts_at = row.ends_at = None
    row.node_ids = []
    _mark(row, None, at, now, told.condition)
    session.add(row)
    record_event(session, fleet.ids, now, told.event_type, row, told.payload)


def _mark(
    row: Reservation,
    preemptor: Preemptor | None,
    at: datetime,
    now: datetime,
    condition: dict[str, str],
) -> None:
    """Set the notice's condition; a cut-back victim also remembers its deadline and preemptor."""
    if preemptor is not None:
        row.deadline = at
        row.preempted_by = preemptor.reservation_id
        row.preempted_by_tenant = preemptor.tenant_id
    row.conditions = set_condition(row.conditions, condition["type"], reason=condition["reason"],
                                   message=condition["message"], at=now)  # fmt: skip
    row.updated_at = now

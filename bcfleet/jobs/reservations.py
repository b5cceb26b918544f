"""The reservations.retry (30 s) and reservations.lifecycle (10 s) jobs: plain functions the scheduler calls.

run_retry tries pending reservations again, oldest first, each in its own
transaction; a regular pool-binding one may preempt spot work as at admission.
run_lifecycle releases what is due (a cut-back victim at its deadline with reason
preempted, everything else at during.end), refunding quota and emitting
reservation.released, then activates placed reservations whose start has come.
Releases go first, so a preempting reservation starts after its victims end.

Faults stay local (bcfleet/jobs/faults.py): a reservation whose turn raises is rolled back
alone, carries a JobFailed condition, is named by `fleet doctor`, counts as `failed`, and the
job goes on with the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from sqlmodel import Session, col, select

from bcfleet.domain.states import RESERVATION_LIVE, ReservationState
from bcfleet.jobs.faults import FaultLog, Item
from bcfleet.placement.reservation_placer import place
from bcfleet.placement.reservations import activate, release
from bcfleet.store.engine import is_sqlite
from bcfleet.store.models import Reservation

if TYPE_CHECKING:
    from bcfleet.jobs.handle import JobHandle

RETRY = "reservations.retry"
LIFECYCLE = "reservations.lifecycle"
RETRIES_PER_TICK = 200
LIFECYCLE_BATCH = 500


def run_retry(fleet: JobHandle, now: datetime) -> dict[str, int]:
    """One tick of reservations.retry: {tried, placed, stillPending, failed}."""
    del now  # placement reads the fleet's clock, as admission does
    faults = FaultLog(fleet, RETRY, ("reservation",))
    faults.prune("reservation", Reservation.id, col(Reservation.state) == ReservationState.PENDING)
    placed = tried = 0
    for rsv_id, tenant_id in _due(fleet, (ReservationState.PENDING,), None, RETRIES_PER_TICK):
        result = faults.run(
            Item("reservation", rsv_id, tenant_id), partial(_retry, fleet=fleet, rsv_id=rsv_id)
        )
        tried += int(result is not None)
        placed += int(result is True)
    return {
        "tried": tried,
        "placed": placed,
        "stillPending": tried - placed - faults.failed,
        "failed": faults.failed,
    }


def _retry(session: Session, fleet: JobHandle, rsv_id: str) -> bool | None:
    """Place one pending reservation; None when it is not pending any more."""
    rsv = _lock(session, rsv_id)
    if rsv is None or rsv.state != ReservationState.PENDING:
        return None
    return bool(place(session, fleet, rsv))


def run_lifecycle(fleet: JobHandle, now: datetime) -> dict[str, int]:
    """One tick of reservations.lifecycle: {released, preemptedReleased, activated, failed}."""
    faults = FaultLog(fleet, LIFECYCLE, ("reservation",))
    faults.prune("reservation", Reservation.id, col(Reservation.state).in_(RESERVATION_LIVE))
    counts = {"released": 0, "preemptedReleased": 0, "activated": 0}
    for rsv_id, tenant_id in _due(fleet, RESERVATION_LIVE, ("ends_at", now), LIFECYCLE_BATCH):
        reason = faults.run(
            Item("reservation", rsv_id, tenant_id),
            partial(_release, fleet=fleet, rsv_id=rsv_id, now=now),
        )
        if isinstance(reason, str):
            counts["released"] += 1
            counts["preemptedReleased"] += int(reason == "preempted")
    for rsv_id, tenant_id in _due(
        fleet, (ReservationState.PLACED,), ("starts_at", now), LIFECYCLE_BATCH
    ):
        done = faults.run(
            Item("reservation", rsv_id, tenant_id),
            partial(_activate, fleet=fleet, rsv_id=rsv_id, now=now),
        )
        counts["activated"] += int(done is True)
    return {**counts, "failed": faults.failed}


def _release(session: Session, fleet: JobHandle, rsv_id: str, now: datetime) -> str | None:
    """Release one reservation whose end or deadline has come; the reason, or None if not due."""
    rsv = _lock(session, rsv_id)
    if rsv is None or rsv.state not in RESERVATION_LIVE or not _ended(rsv, now):
        return None
    reason = "preempted" if rsv.deadline is not None else "ended"
    release(session, fleet, rsv, reason, now)
    return reason


def _activate(session: Session, fleet: JobHandle, rsv_id: str, now: datetime) -> bool:
    """Activate one placed reservation whose start has come."""
    rsv = _lock(session, rsv_id)
    if rsv is None or rsv.state != ReservationState.PLACED or rsv.starts_at is None:
        return False
    if rsv.starts_at <= now and not _ended(rsv, now):
        activate(session, fleet, rsv, now)
        return True
    return False


def _ended(rsv: Reservation, now: datetime) -> bool:
    return rsv.ends_at is not None and rsv.ends_at <= now


def _due(
    fleet: JobHandle, states: Sequence[str], due: tuple[str, datetime] | None, limit: int
) -> list[tuple[str, str]]:
    """(id, tenant) of reservations in these states (whose start or end has come), oldest first."""
    with fleet.read() as session:
        query = select(Reservation.id, Reservation.tenant_id).where(
            col(Reservation.state).in_(list(states))
        )
        if due is not None:
            column = col(getattr(Reservation, due[0]))
            query = query.where(column.is_not(None), column <= due[1]).order_by(column)
        query = query.order_by(col(Reservation.created_at), col(Reservation.id)).limit(limit)
        return [(rsv_id, tenant_id) for rsv_id, tenant_id in session.execute(query).all()]


def _lock(session: Session, rsv_id: str) -> Reservation | None:
    """The row, locked (PostgreSQL: skipped when another transaction holds it; next tick then)."""
    query = select(Reservation).where(col(Reservation.id) == rsv_id)
    if not is_sqlite(session.get_bind().engine):
        query = query.with_for_update(skip_locked=True)
    return session.scalars(query).first()

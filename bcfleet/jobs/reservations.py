"""The reservations.retry (30 s) and reservations.lifecycle (10 s) jobs: plain functions the scheduler calls.

run_retry tries pending reservations again, oldest first, each in its own
transaction; a regular pool-binding one may preempt spot work as at admission.
run_lifecycle releases what is due (a cut-back victim at its deadline with reason
preempted, everything else at during.end), refunding quota and emitting
reservation.released, then activates placed reservations whose start has come.
Releases go first, so a preempting reservation starts after its victims end.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from sqlmodel import Session, col, select

from bcfleet.placement.placer import place
from bcfleet.placement.reservations import LIVE_STATES, activate, release
from bcfleet.store.engine import is_sqlite
from bcfleet.store.models import Reservation

if TYPE_CHECKING:
    from bcfleet.fleet import Fleet

RETRIES_PER_TICK = 200
LIFECYCLE_BATCH = 500


def run_retry(fleet: Fleet, now: datetime) -> dict[str, int]:
    """One tick of reservations.retry: {tried, placed, stillPending}."""
    del now  # placement reads the fleet's clock, as admission does
    placed = tried = 0
    for rsv_id in _due(fleet, ("pending",), None, RETRIES_PER_TICK):
        with fleet.write() as session:
            rsv = _lock(session, rsv_id)
            if rsv is None or rsv.state != "pending":
                continue
            tried += 1
            placed += int(place(session, fleet, rsv))
    return {"tried": tried, "placed": placed, "stillPending": tried - placed}


def run_lifecycle(fleet: Fleet, now: datetime) -> dict[str, int]:
    """One tick of reservations.lifecycle: {released, preemptedReleased, activated}."""
    counts = {"released": 0, "preemptedReleased": 0, "activated": 0}
    for rsv_id in _due(fleet, LIVE_STATES, ("ends_at", now), LIFECYCLE_BATCH):
        with fleet.write() as session:
            rsv = _lock(session, rsv_id)
            if rsv is None or rsv.state not in LIVE_STATES or not _ended(rsv, now):
                continue
            reason = "preempted" if rsv.deadline is not None else "ended"
            release(session, fleet, rsv, reason, now)
            counts["released"] += 1
            counts["preemptedReleased"] += int(reason == "preempted")
    for rsv_id in _due(fleet, ("placed",), ("starts_at", now), LIFECYCLE_BATCH):
        with fleet.write() as session:
            rsv = _lock(session, rsv_id)
            if rsv is None or rsv.state != "placed" or rsv.starts_at is None:
                continue
            if rsv.starts_at <= now and not _ended(rsv, now):
                activate(session, fleet, rsv, now)
                counts["activated"] += 1
    return counts


def _ended(rsv: Reservation, now: datetime) -> bool:
    return rsv.ends_at is not None and rsv.ends_at <= now


def _due(
    fleet: Fleet, states: Sequence[str], due: tuple[str, datetime] | None, limit: int
) -> list[str]:
    """Ids of reservations in these states (whose start or end has come), oldest first."""
    with fleet.read() as session:
        query = select(Reservation.id).where(col(Reservation.state).in_(list(states)))
        if due is not None:
            column = col(getattr(Reservation, due[0]))
            query = query.where(column.is_not(None), column <= due[1]).order_by(column)
        query = query.order_by(col(Reservation.created_at), col(Reservation.id)).limit(limit)
        return list(session.execute(query).scalars().all())


def _lock(session: Session, rsv_id: str) -> Reservation | None:
    """The row, locked (PostgreSQL: skipped when another transaction holds it; next tick then)."""
    query = select(Reservation).where(col(Reservation.id) == rsv_id)
    if not is_sqlite(session.get_bind().engine):
        query = query.with_for_update(skip_locked=True)
    return session.scalars(query).first()

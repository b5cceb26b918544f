"""Place a reservation on its pool: plan on the pool's snapshot, book under locks, preempt spot work, or go pending.

Called at admission (reservations.create) and by the reservations.retry job. A
plan that loses its guarded write to another writer gives way to the next one;
when every plan lost, the snapshot is rebuilt from SQL and planned once more.
Only when nothing fits does a regular pool-binding request try preemption
(placement/preempt.py); if that does not happen either, the reservation is pending
with Unschedulable and the planner's counted reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlmodel import Session

from bcfleet.domain.gpu_plan import GpuRequest, plan_placement
from bcfleet.domain.preemption import preview as preview_plan
from bcfleet.domain.preview_document import PreviewJson
from bcfleet.placement.gpu_cache import pool_snapshot
from bcfleet.placement.preempt import notice_of, preempt
from bcfleet.placement.reservations import (
    NO_FIT_REASON,
    book_plan,
    mark_pending,
    placed_data,
    record_event,
    request_of,
)
from bcfleet.store.models import Reservation

if TYPE_CHECKING:
    from bcfleet.placement.handle import PlacementHandle


def place(session: Session, fleet: PlacementHandle, rsv: Reservation) -> bool:
    """Place a pending reservation now (preempting where document 003 allows); False when it stays pending."""
    now = fleet.now()
    rsv.last_attempt_at = now
    request = request_of(rsv, now)
    limit = fleet.settings.preemption_candidate_limit
    reason = "no node fits"
    for rebuild in (False, True):
        snapshot = pool_snapshot(session, fleet.placement, rsv.pool_id, now, rebuild=rebuild)
        result = plan_placement(snapshot, request, free_spot=False, limit=limit)
        if result.fits:
            for plan in result.plans:
                if book_plan(session, fleet, rsv, plan.picks, request.start, request.end):
                    record_event(session, fleet.ids, now, "reservation.placed", rsv,
                                 placed_data(rsv))  # fmt: skip
                    return True
            reason = f"all {len(result.plans)} candidate placements were taken concurrently"
            continue
        reason = result.reason or reason
        if preempt(session, fleet, rsv, snapshot, request):
            return True
        break
    mark_pending(rsv, NO_FIT_REASON, reason, now)
    session.add(rsv)
    return False


def preview(
    session: Session, fleet: PlacementHandle, pool_id: str, request: GpuRequest
) -> PreviewJson:
    """capacity.preview: {fits, candidates, reason, preemptible?}; a count and a start, never ids."""
    now = fleet.now()
    snapshot = pool_snapshot(session, fleet.placement, pool_id, now)
    limit = fleet.settings.preemption_candidate_limit
    return preview_plan(snapshot, request, now, notice_of(fleet), limit)

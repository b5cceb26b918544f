"""What a preempted spot reservation's tenant reads: conditions and events naming no other tenant.

Document 003: when the preempting reservation belongs to the victim's own
tenant, the message reads `preempted by rsv_…` and events carry `by` with its
id; otherwise the message is `preempted by a non-spot reservation` and `by` is
absent, in the condition and in every event. The placement layer and the
lifecycle job call these builders; nothing else words a preemption.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bcfleet.domain.gpu_plan import as_utc

REASON = "SpotPreempted"
RELEASE_REASON = "preempted"
ANONYMOUS_MESSAGE = "preempted by a non-spot reservation"
PREEMPTING = "reservation.preempting"
PREEMPTED = "reservation.preempted"
RELEASED = "reservation.released"
PREEMPTED_CONDITION = "Preempted"
UNSCHEDULABLE_CONDITION = "Unschedulable"


@dataclass(frozen=True, slots=True)
class Preemptor:
    """The regular reservation that preempts, and the tenant that owns it."""

    tenant_id: str
    reservation_id: str


@dataclass(frozen=True, slots=True)
class Notice:
    """What one victim is told: its condition, and the event to emit with its payload."""

    condition: dict[str, Any]
    event_type: str
    payload: dict[str, Any]


def _rfc3339(value: datetime) -> str:
    utc = as_utc(value)
    text = utc.isoformat(timespec="milliseconds" if utc.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def may_name(victim_tenant: str, preemptor: Preemptor) -> bool:
    """Only the victim's own tenant's reservation may be named to it."""
    return victim_tenant == preemptor.tenant_id


def message(victim_tenant: str, preemptor: Preemptor) -> str:
    """`preempted by rsv_…` for the same tenant, `preempted by a non-spot reservation` otherwise."""
    if may_name(victim_tenant, preemptor):
        return f"preempted by {preemptor.reservation_id}"
    return ANONYMOUS_MESSAGE


def condition(victim_tenant: str, preemptor: Preemptor, *, requeued: bool) -> dict[str, Any]:
    """Preempted (cut back) or Unschedulable (requeued), both with reason SpotPreempted."""
    return {
        "type": UNSCHEDULABLE_CONDITION if requeued else PREEMPTED_CONDITION,
        "status": "True",
        "reason": REASON,
        "message": message(victim_tenant, preemptor),
    }


def _with_by(payload: dict[str, Any], victim_tenant: str, preemptor: Preemptor) -> dict[str, Any]:
    if may_name(victim_tenant, preemptor):
        payload["by"] = preemptor.reservation_id
    return payload


def event_payload(
    victim_tenant: str,
    victim_id: str,
    preemptor: Preemptor,
    *,
    at: datetime,
    requeued: bool,
) -> dict[str, Any]:
    """The .preempting/.preempted payload: `at` the deadline, `requeued: true`, `by` if own."""
    payload: dict[str, Any] = {
        "reservationId": victim_id,
        "reason": REASON,
        "message": message(victim_tenant, preemptor),
        "at": _rfc3339(at),
    }
    if requeued:
        payload["requeued"] = True
    return _with_by(payload, victim_tenant, preemptor)


def notice(
    victim_tenant: str,
    victim_id: str,
    preemptor: Preemptor,
    *,
    at: datetime,
    requeued: bool,
) -> Notice:
    """One victim's condition and event: .preempting when cut back, .preempted when requeued."""
    return Notice(
        condition(victim_tenant, preemptor, requeued=requeued),
        PREEMPTED if requeued else PREEMPTING,
        event_payload(victim_tenant, victim_id, preemptor, at=at, requeued=requeued),
    )


def released_payload(
    victim_tenant: str, victim_id: str, preemptor: Preemptor | None, *, at: datetime
) -> dict[str, Any]:
    """reservation.released at a cut-back victim's deadline: reason preempted, same `by` rule."""
    payload: dict[str, Any] = {"reservationId": victim_id, "reason": RELEASE_REASON}
    payload["at"] = _rfc3339(at)
    if preemptor is None:
        return payload
    return _with_by(payload, victim_tenant, preemptor)

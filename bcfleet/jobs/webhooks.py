"""The webhooks job: queue each tenant's new events for its webhooks and POST them, signed.

``run_webhooks(fleet, now)`` does one round: queue, then deliver what is due. A delivery
is a POST of ``{"webhookId", "deliveryId", "event"}`` with the headers

    Bcfleet-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<body>")>
    Bcfleet-Event: <event type>
    Bcfleet-Delivery: <delivery id>

(Stripe's scheme: the timestamp inside the signed text lets a receiver refuse replays;
verify_signature() is the receiver's side). A 2xx answer delivers it; anything else is
tried again after a backoff that doubles from BACKOFF_BASE up to BACKOFF_CAP, and after
MAX_ATTEMPTS tries the delivery is dead, kept as a dead letter that the API can requeue.
Only events of the webhook's own tenant are ever queued for it. No request is made while
a transaction is open: due deliveries are read, sent, then their outcomes written.

Every delivery goes through the egress guard (bcfleet/egress.py): the host is resolved
and checked at each connection, redirects are not followed, and a failure is recorded
as one of three fixed texts (REFUSED, NO_ANSWER, or ``HTTP <status>`` from an allowed
receiver), so a delivery's ``lastError`` tells nothing about what listens where.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

import httpx
from sqlmodel import col, select

from bcfleet.domain.host_ids import HostView, node_refs
from bcfleet.domain.states import DeliveryState
from bcfleet.egress import EgressGuard, EgressRefused
from bcfleet.store.event_log import event_json
from bcfleet.store.host_view import tenant_host_view
from bcfleet.store.models import Event
from bcfleet.store.models.webhooks import Webhook, WebhookDelivery

if TYPE_CHECKING:
    from bcfleet.fleet import Fleet

MAX_ATTEMPTS = 8
BACKOFF_BASE_SECONDS = 10.0
BACKOFF_CAP_SECONDS = 3600.0
BATCH = 200
TIME_BUDGET_SECONDS = 30.0
REQUEST_TIMEOUT_SECONDS = 5.0
SIGNATURE_TOLERANCE_SECONDS = 300
USER_AGENT = "bcfleet-webhooks/1"
REFUSED = "refused: the URL's address is not an allowed destination"
NO_ANSWER = "no answer: the receiver could not be reached or did not answer over HTTP"


def sign(secret: str, body: bytes, timestamp: int) -> str:
    """The Bcfleet-Signature header value of a body sent at a unix timestamp."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def verify_signature(
    secret: str,
    body: bytes,
    header: str,
    now: float,
    tolerance: float = SIGNATURE_TOLERANCE_SECONDS,
) -> bool:
    """Whether a Bcfleet-Signature header signs this body and is recent enough."""
    fields = dict(part.split("=", 1) for part in header.split(",") if "=" in part)
    try:
        timestamp = int(fields.get("t", ""))
    except ValueError:
        return False
    if abs(now - timestamp) > tolerance:
        return False
    expected = sign(secret, body, timestamp).split("v1=", 1)[1]
    return hmac.compare_digest(expected, fields.get("v1", ""))


def backoff_seconds(attempts: int) -> float:
    """The wait after the n-th failed try: 10 s, 20 s, 40 s, … at most an hour."""
    return float(min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2 ** max(attempts - 1, 0)))


def wanted(hook: Webhook, event_type: str) -> bool:
    return not hook.event_types or any(fnmatchcase(event_type, p) for p in hook.event_types)


def enqueue(fleet: Fleet, now: datetime, batch: int = BATCH) -> int:
    """Queue each active webhook's new events of its own tenant; returns how many were queued."""
    queued = 0
    with fleet.write(bump_revision=False) as session:
        hooks = session.exec(select(Webhook).where(col(Webhook.active).is_(True))).all()
        for hook in hooks:
            events = session.exec(
                select(Event)
                .where(Event.tenant_id == hook.tenant_id, col(Event.seq) > hook.cursor)
                .order_by(col(Event.seq))
                .limit(batch)
            ).all()
            # The tenant's own view of the hosts its events name (domain.host_ids).
            view = tenant_host_view(session, hook.tenant_id, _node_refs(events))
            for event in events:
                if wanted(hook, event.type):
                    session.add(_delivery(hook, event, now, view))
                    queued += 1
            if events:
                hook.cursor = int(events[-1].seq or hook.cursor)
                session.add(hook)
    return queued


def _node_refs(events: Sequence[Event]) -> set[str]:
    return {node for event in events for node in node_refs(event.data)}


def _delivery(hook: Webhook, event: Event, now: datetime, view: HostView) -> WebhookDelivery:
    return WebhookDelivery(
        webhook_id=hook.id,
        tenant_id=hook.tenant_id,
        event_seq=int(event.seq or 0),
        event_id=event.id,
        event_type=event.type,
        payload=dict(event_json(event, view)),
        next_attempt_at=now,
        created_at=now,
        updated_at=now,
    )


@dataclass(frozen=True)
class Due:
    """One delivery to send now, with what sending it needs."""

    id: int
    attempts: int
    url: str
    secret: str
    webhook_id: str
    event_type: str
    payload: dict[str, Any]


@dataclass(frozen=True)
class Outcome:
    id: int
    attempts: int  # the tries before this one
    status: int | None
    error: str | None

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300


def due_deliveries(fleet: Fleet, now: datetime, batch: int = BATCH) -> list[Due]:
    with fleet.read() as session:
        rows = session.exec(
            select(WebhookDelivery, Webhook)
            .join(Webhook, col(Webhook.id) == col(WebhookDelivery.webhook_id))
            .where(
                WebhookDelivery.state == DeliveryState.PENDING,
                col(WebhookDelivery.next_attempt_at) <= now,
            )
            .order_by(col(WebhookDelivery.next_attempt_at), col(WebhookDelivery.id))
            .limit(batch)
        ).all()
        return [
            Due(d.id or 0, d.attempts, h.url, h.secret, h.id, d.event_type, dict(d.payload))
            for d, h in rows
        ]


def send(client: httpx.Client, due: Due, now: datetime) -> Outcome:
    """POST one delivery; never raises for the receiver's faults."""
    body = json.dumps(
        {"webhookId": due.webhook_id, "deliveryId": due.id, "event": due.payload},
        separators=(",", ":"),
    ).encode()
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "Bcfleet-Signature": sign(due.secret, body, int(now.timestamp())),
        "Bcfleet-Event": due.event_type,
        "Bcfleet-Delivery": str(due.id),
    }
    try:
        response = client.post(due.url, content=body, headers=headers)
    except EgressRefused:
        return Outcome(due.id, due.attempts, None, REFUSED)
    except (httpx.HTTPError, httpx.InvalidURL, OSError):
        return Outcome(due.id, due.attempts, None, NO_ANSWER)
    error = None if 200 <= response.status_code < 300 else f"HTTP {response.status_code}"
    return Outcome(due.id, due.attempts, response.status_code, error)


def record(fleet: Fleet, now: datetime, outcomes: list[Outcome]) -> dict[str, int]:
    """Write each outcome, unless someone else changed the delivery meanwhile."""
    counts = {"delivered": 0, "retried": 0, "dead": 0}
    with fleet.write(bump_revision=False) as session:
        for outcome in outcomes:
            row = session.get(WebhookDelivery, outcome.id)
            if (
                row is None
                or row.state != DeliveryState.PENDING
                or row.attempts != outcome.attempts
            ):
                continue
            row.attempts += 1
            row.last_status, row.last_error, row.updated_at = outcome.status, outcome.error, now
            if outcome.ok:
                row.state, row.delivered_at = DeliveryState.DELIVERED, now
            elif row.attempts >= MAX_ATTEMPTS:
                row.state = DeliveryState.DEAD
            else:
                row.next_attempt_at = now + timedelta(seconds=backoff_seconds(row.attempts))
            counts["retried" if row.state == DeliveryState.PENDING else row.state] += 1
            session.add(row)
    return counts


def run_webhooks(
    fleet: Fleet,
    now: datetime,
    *,
    transport: httpx.BaseTransport | None = None,
    time_budget: float = TIME_BUDGET_SECONDS,
) -> dict[str, int]:
    """One round: queue new events, then send what is due within the time budget.

    ``transport`` replaces the network (tests); by default it is the egress guard's.
    """
    queued = enqueue(fleet, now)
    outcomes: list[Outcome] = []
    started = time.monotonic()
    if transport is None:
        transport = EgressGuard(fleet.settings.egress_allow).transport()
    with httpx.Client(
        timeout=REQUEST_TIMEOUT_SECONDS, follow_redirects=False, transport=transport
    ) as client:
        for due in due_deliveries(fleet, now):
            if time.monotonic() - started > time_budget:
                break  # the rest stay due for the next round
            outcomes.append(send(client, due, now))
    return {"queued": queued, **record(fleet, now, outcomes)}

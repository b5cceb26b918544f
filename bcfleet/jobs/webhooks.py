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

One tenant's bad day stays its own. Every stored document is read through the guarded
decoder (store/stored_json.py): an event whose data cannot be read is a fault on that
event (job_faults, `fleet doctor`) that its webhooks' cursors pass over; a delivery whose
payload cannot be read is a failed try (UNREADABLE_PAYLOAD) and a fault on the delivery;
any other failure while queueing one webhook is a fault on that webhook. Sending takes a
fair share (domain/delivery_share.py): round-robin across tenants, a per-tenant budget a
round, and one lane per destination, lanes side by side, so a receiver that never answers
costs its own tenant at most REQUEST_TIMEOUT_SECONDS a try and nobody else anything.

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
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any

import httpx
from sqlalchemy import func
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session, col, select

from bcfleet.domain.delivery_share import Pending, Share, choose, destination
from bcfleet.domain.host_ids import HostView, node_refs
from bcfleet.domain.states import DeliveryState
from bcfleet.egress import EgressGuard, EgressRefused
from bcfleet.jobs.faults import FaultLog, Item, ends_the_run, statement_fault
from bcfleet.store.event_log import event_json
from bcfleet.store.host_view import tenant_host_view
from bcfleet.store.id_chunks import id_chunks
from bcfleet.store.models import Event
from bcfleet.store.models.webhooks import Webhook, WebhookDelivery
from bcfleet.store.stored_json import (
    DELIVERY_DOCUMENTS,
    EVENT_DOCUMENTS,
    WEBHOOK_DOCUMENTS,
    Kind,
    UnreadableDocument,
    check,
)

if TYPE_CHECKING:
    from bcfleet.jobs.handle import JobHandle

JOB = "webhooks"
MAX_ATTEMPTS = 8
BACKOFF_BASE_SECONDS = 10.0
BACKOFF_CAP_SECONDS = 3600.0
BATCH = 200
"""Events queued per webhook a round."""
SHARE = Share(per_tenant=20, total=200)
"""Deliveries sent a round: per tenant, and in all."""
LANES = 8
"""Destinations sent to side by side."""
TIME_BUDGET_SECONDS = 30.0
REQUEST_TIMEOUT_SECONDS = 5.0
SIGNATURE_TOLERANCE_SECONDS = 300
USER_AGENT = "bcfleet-webhooks/1"
REFUSED = "refused: the URL's address is not an allowed destination"
NO_ANSWER = "no answer: the receiver could not be reached or did not answer over HTTP"
UNREADABLE_PAYLOAD = "unreadable: the stored payload cannot be read; fleet doctor names it"


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


def wanted(event_types: Sequence[str], event_type: str) -> bool:
    """Whether a webhook's event types (patterns; none: every type) take this type."""
    return not event_types or any(fnmatchcase(event_type, p) for p in event_types)


def enqueue(
    fleet: JobHandle, now: datetime, faults: FaultLog | None = None, batch: int = BATCH
) -> int:
    """Queue each active webhook's new events of its own tenant; returns how many were queued.

    Each webhook in a savepoint of its own: a failure is a fault on that webhook, and the
    others are queued.
    """
    faults = faults or fault_log(fleet)
    queued = 0
    with fleet.write(bump_revision=False) as session:
        hooks = session.exec(select(Webhook).where(col(Webhook.active).is_(True))).all()
        passed: set[str] = set()  # the unreadable events recorded this round
        for hook, item in [(h, Item("webhook", h.id, h.tenant_id)) for h in hooks]:
            savepoint = session.begin_nested()
            try:
                count = _enqueue_hook(session, hook, now, batch, faults, passed)
                session.flush()
            except Exception as error:
                savepoint.rollback()
                if ends_the_run(error) or _not_the_rows_fault(error):
                    raise
                faults.keep(session, item, error)
                continue
            savepoint.commit()
            faults.clear(session, item)
            queued += count
    return queued


def fault_log(fleet: JobHandle) -> FaultLog:
    """The job's faults: on webhooks, events and deliveries."""
    return FaultLog(fleet, JOB, ("webhook", "event", "delivery"))


def _not_the_rows_fault(error: BaseException) -> bool:
    """A lock wait, a deadlock or a lost connection would fail any webhook: the run ends."""
    return isinstance(error, DBAPIError) and not statement_fault(error)


def _enqueue_hook(
    session: Session, hook: Webhook, now: datetime, batch: int, faults: FaultLog, passed: set[str]
) -> int:
    """Queue one webhook's new events; an unreadable event is a fault, passed over."""
    types = check(hook.event_types, WEBHOOK_DOCUMENTS, "event_types")  # else the webhook's fault
    events = session.exec(
        select(Event)
        .where(Event.tenant_id == hook.tenant_id, col(Event.seq) > hook.cursor)
        .order_by(col(Event.seq))
        .limit(batch)
    ).all()
    readable = []
    for event in events:
        try:
            readable.append((event, check(event.data, EVENT_DOCUMENTS, "data")))
        except UnreadableDocument as error:
            if event.id not in passed:
                passed.add(event.id)
                faults.keep(session, Item("event", event.id, event.tenant_id), error)
    # The tenant's own view of the hosts its events name (domain.host_ids).
    refs = {node for _, data in readable for node in node_refs(data)}
    view = tenant_host_view(session, hook.tenant_id, refs)
    queued = 0
    for event, _ in readable:
        if wanted(types, event.type):
            session.add(_delivery(hook, event, now, view))
            queued += 1
    if events:
        hook.cursor = int(events[-1].seq or hook.cursor)
        session.add(hook)
    return queued


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


def forget_mended(fleet: JobHandle, faults: FaultLog) -> None:
    """Forget the faults on events and deliveries whose row is gone or whose document reads,
    and on webhooks deleted or no longer active.

    A mended event is not queued again (its webhooks' cursors have passed it); a mended
    delivery is sent at its next try.
    """
    faults.prune("webhook", Webhook.id, col(Webhook.active).is_(True))
    events = sorted(i for kind, i in faults.known if kind == "event")
    deliveries = sorted(i for kind, i in faults.known if kind == "delivery")
    if not events and not deliveries:
        return
    data: dict[str, Any] = {}
    payloads: dict[str, Any] = {}
    with fleet.read() as session:  # the ids a chunk at a time: faults grow with what failed
        found = select(Event.id, Event.data)
        for chunk in id_chunks(events):
            data.update(session.execute(found.where(col(Event.id).in_(chunk))).all())
        rows = select(WebhookDelivery.id, WebhookDelivery.payload)
        for numbers in id_chunks([int(i) for i in deliveries if i.isdigit()]):
            for number, payload in session.execute(
                rows.where(col(WebhookDelivery.id).in_(numbers))
            ):
                payloads[str(number)] = payload
    _forget_readable(faults, "event", events, data, EVENT_DOCUMENTS["data"])
    _forget_readable(faults, "delivery", deliveries, payloads, DELIVERY_DOCUMENTS["payload"])


def _forget_readable(
    faults: FaultLog, kind: str, ids: list[str], documents: dict[str, Any], column: Kind
) -> None:
    for subject_id in ids:
        if subject_id not in documents or column.accepts(documents[subject_id]):
            faults.forget(Item(kind, subject_id))


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
    tenant_id: str = ""


@dataclass(frozen=True)
class Outcome:
    id: int
    attempts: int  # the tries before this one
    status: int | None
    error: str | None
    tenant_id: str = ""

    @property
    def ok(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    @property
    def unreadable(self) -> bool:
        return self.error == UNREADABLE_PAYLOAD


def due_deliveries(fleet: JobHandle, now: datetime, share: Share = SHARE) -> list[Due | Outcome]:
    """The due deliveries the share lets through, tenants taking turns (rank by tenant first):
    each as a Due, or as an Outcome already when its payload cannot be read."""
    rank = (
        func.row_number()
        .over(
            partition_by=col(WebhookDelivery.tenant_id),
            order_by=(col(WebhookDelivery.next_attempt_at), col(WebhookDelivery.id)),
        )
        .label("rank")
    )
    ranked = (
        select(col(WebhookDelivery.id).label("id"), rank)
        .where(
            WebhookDelivery.state == DeliveryState.PENDING,
            col(WebhookDelivery.next_attempt_at) <= now,
        )
        .subquery()
    )
    with fleet.read() as session:
        rows = session.exec(
            select(WebhookDelivery, Webhook)
            .join(ranked, ranked.c.id == col(WebhookDelivery.id))
            .join(Webhook, col(Webhook.id) == col(WebhookDelivery.webhook_id))
            .where(ranked.c.rank <= share.per_tenant)
            .order_by(ranked.c.rank, col(WebhookDelivery.next_attempt_at), col(WebhookDelivery.id))
            .limit(share.total)
        ).all()
        return [_due(d, h) for d, h in rows]


def _due(row: WebhookDelivery, hook: Webhook) -> Due | Outcome:
    number = row.id or 0
    if not DELIVERY_DOCUMENTS["payload"].accepts(row.payload):
        return Outcome(number, row.attempts, None, UNREADABLE_PAYLOAD, row.tenant_id)
    payload = dict(row.payload)
    return Due(number, row.attempts, hook.url, hook.secret, hook.id, row.event_type, payload,
               row.tenant_id)  # fmt: skip


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
        return Outcome(due.id, due.attempts, None, REFUSED, due.tenant_id)
    except (httpx.HTTPError, httpx.InvalidURL, OSError):
        return Outcome(due.id, due.attempts, None, NO_ANSWER, due.tenant_id)
    error = None if 200 <= response.status_code < 300 else f"HTTP {response.status_code}"
    return Outcome(due.id, due.attempts, response.status_code, error, due.tenant_id)


def send_lanes(
    client: httpx.Client,
    lanes: Sequence[Sequence[Due]],
    now: datetime,
    deadline: float,
    workers: int = LANES,
) -> list[Outcome]:
    """Each lane's deliveries one after another, lanes side by side; no send starts after the
    deadline (time.monotonic), and what was not sent stays due for the next round."""

    def run(lane: Sequence[Due]) -> list[Outcome]:
        outcomes = []
        for due in lane:
            if time.monotonic() > deadline:
                break
            outcomes.append(send(client, due, now))
        return outcomes

    if not lanes:
        return []
    with ThreadPoolExecutor(max_workers=max(1, min(workers, len(lanes)))) as pool:
        return [outcome for sent in pool.map(run, lanes) for outcome in sent]


def record(
    fleet: JobHandle, now: datetime, outcomes: list[Outcome], faults: FaultLog | None = None
) -> dict[str, int]:
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
            if faults is not None and outcome.unreadable:
                item = Item("delivery", str(outcome.id), outcome.tenant_id or None)
                faults.keep(session, item, UnreadableDocument(["payload"]))
    return counts


def run_webhooks(
    fleet: JobHandle,
    now: datetime,
    *,
    transport: httpx.BaseTransport | None = None,
    time_budget: float = TIME_BUDGET_SECONDS,
    request_timeout: float = REQUEST_TIMEOUT_SECONDS,
    share: Share = SHARE,
    lanes: int = LANES,
) -> dict[str, int]:
    """One round: queue new events, then send the round's fair share within the time budget.

    ``transport`` replaces the network (tests); by default it is the egress guard's.
    """
    faults = fault_log(fleet)
    forget_mended(fleet, faults)
    queued = enqueue(fleet, now, faults)
    read = due_deliveries(fleet, now, share)
    unreadable = [r for r in read if isinstance(r, Outcome)]
    due = {r.id: r for r in read if isinstance(r, Due)}
    pending = [Pending(d.id, d.tenant_id, destination(d.url)) for d in due.values()]
    chosen = [[due[i] for i in lane] for lane in choose(pending, share)]
    if transport is None:
        transport = EgressGuard(fleet.settings.egress_allow).transport()
    with httpx.Client(
        timeout=request_timeout, follow_redirects=False, transport=transport
    ) as client:
        outcomes = send_lanes(client, chosen, now, time.monotonic() + time_budget, lanes)
    counts = record(fleet, now, unreadable + outcomes, faults)
    return {"queued": queued, **counts, "failed": faults.failed}

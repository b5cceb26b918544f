"""Webhooks: a tenant registers URLs for its events; list, show, delete, deliveries, redeliver.

A URL must be http(s), and its host may not be (or resolve to) a loopback, private,
link-local or metadata address unless the operator allows the range (bcfleet/egress.py);
a name that does not resolve yet is accepted, since every delivery checks again.

The webhooks job (bcfleet/jobs/webhooks.py) queues each new event of the webhook's own
tenant and POSTs it signed with the webhook's secret; after the last failed try a
delivery is dead-lettered, listed here with state=dead and redelivered on request.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from typing import Any

from sqlalchemy import func
from sqlmodel import Session, col, select

from bcfleet.api.auth import Actor, Credential, owned_resource
from bcfleet.api.base import Area
from bcfleet.api.documents import (
    DeletedJson,
    WebhookCreatedJson,
    WebhookDeliveryJson,
    WebhookDeliveryPageJson,
    WebhookJson,
    WebhookPageJson,
)
from bcfleet.api.views import deleted_json
from bcfleet.clock import format_time
from bcfleet.domain.bounds import URL_MAX, check_limit, url_problem
from bcfleet.domain.cursors import CURSOR_MAX, CURSOR_MIN
from bcfleet.domain.pages import WEBHOOK_DELIVERIES
from bcfleet.domain.states import DeliveryState
from bcfleet.egress import EgressGuard, EgressRefused
from bcfleet.errors import ConflictError, InvalidInputError, NotFoundError
from bcfleet.store.models import Event
from bcfleet.store.models.webhooks import Webhook, WebhookDelivery

MAX_URL = URL_MAX
MAX_TYPES = 50
MIN_SECRET, MAX_SECRET = 16, 200
EVENT_TYPE_MAX = 100
MAX_WEBHOOKS_PER_TENANT = 20


def webhook_json(hook: Webhook) -> WebhookJson:
    return {
        "id": hook.id,
        "tenantId": hook.tenant_id,
        "url": hook.url,
        "eventTypes": list(hook.event_types),
        "active": hook.active,
        "cursor": hook.cursor,
        "createdAt": format_time(hook.created_at),
    }


def webhook_created_json(hook: Webhook) -> WebhookCreatedJson:
    """A webhook as its creation answers it: with its secret, the one time it is shown."""
    return {**webhook_json(hook), "secret": hook.secret}


def delivery_json(row: WebhookDelivery) -> WebhookDeliveryJson:
    """A stored delivery (its id is the queue's counter)."""
    assert row.id is not None, "a delivery is shown once stored"
    return {
        "id": row.id,
        "webhookId": row.webhook_id,
        "eventId": row.event_id,
        "eventSeq": row.event_seq,
        "eventType": row.event_type,
        "state": str(row.state),
        "attempts": row.attempts,
        "nextAttemptAt": format_time(row.next_attempt_at),
        "lastStatus": row.last_status,
        "lastError": row.last_error,
        "createdAt": format_time(row.created_at),
        "deliveredAt": format_time(row.delivered_at),
    }


def validate_webhook(url: Any, event_types: Any, secret: Any) -> None:
    """INVALID_INPUT naming each bad field: an http(s) URL, type names, a long enough secret."""
    problems: dict[str, str] = {}
    url_wrong = url_problem("url", url, MAX_URL)
    if url_wrong is not None:
        problems["url"] = url_wrong
    if not isinstance(event_types, Sequence) or isinstance(event_types, str):
        problems["eventTypes"] = "eventTypes must be a list of event types"
    elif len(event_types) > MAX_TYPES or not all(
        isinstance(t, str) and 0 < len(t) <= EVENT_TYPE_MAX for t in event_types
    ):
        problems["eventTypes"] = (
            f"eventTypes lists at most {MAX_TYPES} names of 1-{EVENT_TYPE_MAX} characters"
        )
    if secret is not None and (
        not isinstance(secret, str) or not MIN_SECRET <= len(secret) <= MAX_SECRET
    ):
        problems["secret"] = f"a secret has {MIN_SECRET} to {MAX_SECRET} characters"
    if problems:
        raise InvalidInputError(
            "invalid webhook: " + "; ".join(problems.values()), {"fields": problems}
        )


def check_destination(guard: EgressGuard, url: str) -> None:
    """INVALID_INPUT when the URL's host is an address the egress guard refuses."""
    try:
        guard.check_url(url)
    except EgressRefused as refused:
        raise InvalidInputError(
            "invalid webhook: " + refused.message,
            {"fields": {"url": refused.message}, "reason": "egress_refused"},
        ) from None


def find_webhook(session: Session, actor: Actor, webhook_id: str) -> Webhook:
    """A webhook of the actor's tenant (root's admin: any); NOT_FOUND otherwise."""
    hook = session.get(Webhook, webhook_id)
    if hook is None or not (actor.is_root_admin or hook.tenant_id == actor.tenant_id):
        raise NotFoundError(f"webhook {webhook_id!r} not found", {"webhook": webhook_id})
    return hook


class WebhooksAPI(Area):
    """compute:webhooks:manage and compute:webhooks:read on the tenant's webhooks."""

    def create(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        url: str,
        event_types: Sequence[str] = (),
        secret: str | None = None,
    ) -> WebhookCreatedJson:
        """Register a webhook for events from now on; the secret is shown once, here."""
        validate_webhook(url, event_types, secret)
        check_destination(EgressGuard(self.fleet.settings.egress_allow), url)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require(
                "compute:webhooks:manage", owned_resource(actor.tenant_id, "webhooks", "*")
            )
            count = session.scalar(
                select(func.count())
                .select_from(Webhook)
                .where(Webhook.tenant_id == actor.tenant_id)
            )
            if (count or 0) >= MAX_WEBHOOKS_PER_TENANT:
                raise ConflictError(
                    f"a tenant has at most {MAX_WEBHOOKS_PER_TENANT} webhooks",
                    {"limit": MAX_WEBHOOKS_PER_TENANT},
                )
            now = self.fleet.now()
            hook = Webhook(
                id=self.fleet.new_id("whk"),
                tenant_id=actor.tenant_id,
                url=url,
                secret=secret or "whsec_" + secrets.token_urlsafe(32),
                event_types=list(dict.fromkeys(event_types)),
                cursor=session.scalar(select(func.max(col(Event.seq)))) or 0,
                created_at=now,
                updated_at=now,
            )
            session.add(hook)
            return webhook_created_json(hook)

    def list(
        self, credential: Credential | None, *, tenant_id: str | None = None
    ) -> WebhookPageJson:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:webhooks:read", owned_resource(actor.tenant_id, "webhooks", "*"))
            query = select(Webhook).order_by(col(Webhook.created_at), col(Webhook.id))
            if not (actor.is_root_admin and tenant_id is None):
                query = query.where(Webhook.tenant_id == actor.tenant_id)
            return {"items": [webhook_json(h) for h in session.exec(query).all()]}

    def show(
        self, credential: Credential | None, webhook_id: str, *, tenant_id: str | None = None
    ) -> WebhookJson:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            hook = find_webhook(session, actor, webhook_id)
            actor.require(
                "compute:webhooks:read", owned_resource(hook.tenant_id, "webhook", hook.id)
            )
            return webhook_json(hook)

    def delete(
        self, credential: Credential | None, webhook_id: str, *, tenant_id: str | None = None
    ) -> DeletedJson:
        """Remove a webhook and its deliveries, dead letters included."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            hook = find_webhook(session, actor, webhook_id)
            actor.require(
                "compute:webhooks:manage", owned_resource(hook.tenant_id, "webhook", hook.id)
            )
            for row in session.exec(
                select(WebhookDelivery).where(WebhookDelivery.webhook_id == hook.id)
            ).all():
                session.delete(row)
            session.flush()
            session.delete(hook)
            return deleted_json(webhook_id)

    def deliveries(
        self,
        credential: Credential | None,
        webhook_id: str,
        *,
        tenant_id: str | None = None,
        state: str | None = None,
        limit: int = WEBHOOK_DELIVERIES.default,
    ) -> WebhookDeliveryPageJson:
        """A webhook's deliveries, newest first; state=dead lists its dead letters."""
        if state is not None and state not in tuple(DeliveryState):
            raise InvalidInputError(f"state is one of {', '.join(DeliveryState)}", {"state": state})
        check_limit(limit, WEBHOOK_DELIVERIES.maximum)
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            hook = find_webhook(session, actor, webhook_id)
            actor.require(
                "compute:webhooks:read", owned_resource(hook.tenant_id, "webhook", hook.id)
            )
            query = (
                select(WebhookDelivery)
                .where(WebhookDelivery.webhook_id == hook.id)
                .order_by(col(WebhookDelivery.id).desc())
                .limit(limit)
            )
            if state is not None:
                query = query.where(WebhookDelivery.state == state)
            return {"items": [delivery_json(r) for r in session.exec(query).all()]}

    def redeliver(
        self,
        credential: Credential | None,
        webhook_id: str,
        delivery_id: int,
        *,
        tenant_id: str | None = None,
    ) -> WebhookDeliveryJson:
        """Put a dead (or delivered) delivery back in the queue, with its tries reset."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            hook = find_webhook(session, actor, webhook_id)
            actor.require(
                "compute:webhooks:manage", owned_resource(hook.tenant_id, "webhook", hook.id)
            )
            # An id no column can hold names no delivery: NOT_FOUND, as a made-up one.
            in_range = CURSOR_MIN <= delivery_id <= CURSOR_MAX
            row = session.get(WebhookDelivery, delivery_id) if in_range else None
            if row is None or row.webhook_id != hook.id:
                raise NotFoundError(f"delivery {delivery_id} not found", {"delivery": delivery_id})
            now = self.fleet.now()
            row.state, row.attempts, row.next_attempt_at = DeliveryState.PENDING, 0, now
            row.updated_at = now
            session.add(row)
            return delivery_json(row)

"""Routes of webhooks: register, list, show, delete, list deliveries (dead letters), redeliver."""

from __future__ import annotations

from typing import Any

from bcfleet.errors import InvalidInputError
from bcfleet.http.operations import TENANT, Call, Operation, Param
from bcfleet.http.schemas import BOOL, INT, STRING, TIME, array, nullable, obj, page

TAG = "webhooks"

WEBHOOK = {
    "id": STRING,
    "tenantId": STRING,
    "url": STRING,
    "eventTypes": array(STRING),
    "active": BOOL,
    "cursor": INT,
    "createdAt": TIME,
}

SCHEMAS = {
    "Webhook": obj(WEBHOOK),
    "WebhookCreated": obj(
        {**WEBHOOK, "secret": STRING}, description="The secret is shown once, here."
    ),
    "WebhookPage": page("Webhook"),
    "WebhookCreate": obj(
        {
            "url": {"type": "string", "maxLength": 2048},
            "eventTypes": array({"type": "string", "maxLength": 100}, max_items=50),
            "secret": {"type": "string", "maxLength": 200},
        },
        required=["url"],
    ),
    "WebhookDeleted": obj({"id": STRING, "deleted": BOOL}),
    "WebhookDelivery": obj(
        {
            "id": INT,
            "webhookId": STRING,
            "eventId": STRING,
            "eventSeq": INT,
            "eventType": STRING,
            "state": {"type": "string", "enum": ["pending", "delivered", "dead"]},
            "attempts": INT,
            "nextAttemptAt": TIME,
            "lastStatus": nullable(INT),
            "lastError": nullable(STRING),
            "createdAt": TIME,
            "deliveredAt": nullable(TIME),
        }
    ),
    "WebhookDeliveryPage": page("WebhookDelivery"),
}


def create_webhook(call: Call) -> Any:
    return call.api.webhooks.create(
        call.token,
        tenant_id=call.tenant,
        url=call.field("url"),
        event_types=call.field("eventTypes", []),
        secret=call.field("secret"),
    )


def list_webhooks(call: Call) -> Any:
    return call.api.webhooks.list(call.token, tenant_id=call.tenant)


def show_webhook(call: Call) -> Any:
    return call.api.webhooks.show(call.token, call.path["id"], tenant_id=call.tenant)


def delete_webhook(call: Call) -> Any:
    return call.api.webhooks.delete(call.token, call.path["id"], tenant_id=call.tenant)


def list_deliveries(call: Call) -> Any:
    return call.api.webhooks.deliveries(
        call.token,
        call.path["id"],
        tenant_id=call.tenant,
        state=call.query.get("state"),
        limit=call.query.get("limit", 100),
    )


def redeliver(call: Call) -> Any:
    raw = call.path["delivery"]
    if not raw.isdigit() or len(raw) > 18:
        raise InvalidInputError("a delivery id is a number", {"delivery": raw})
    return call.api.webhooks.redeliver(call.token, call.path["id"], int(raw), tenant_id=call.tenant)


Q = (TENANT,)
ONE = "/v1/webhooks/{id}"
DELIVERY_QUERY = (
    TENANT,
    Param("state", description="Only deliveries in this state (dead: the dead letters).",
          enum=("pending", "delivered", "dead")),
    Param("limit", "integer", "At most this many.", minimum=1, maximum=1000, default=100),
)  # fmt: skip
OPERATIONS = [
    Operation("POST", "/v1/webhooks", "webhooks.create",
              "Register a webhook for the caller's events (the secret is shown once)", TAG,
              create_webhook, status=201, request="WebhookCreate", response="WebhookCreated",
              query=Q),
    Operation("GET", "/v1/webhooks", "webhooks.list", "List the caller's webhooks", TAG,
              list_webhooks, response="WebhookPage", query=Q),
    Operation("GET", ONE, "webhooks.show", "Show a webhook", TAG, show_webhook,
              response="Webhook", query=Q),
    Operation("DELETE", ONE, "webhooks.delete", "Delete a webhook and its deliveries", TAG,
              delete_webhook, response="WebhookDeleted", query=Q),
    Operation("GET", ONE + "/deliveries", "webhooks.deliveries",
              "A webhook's deliveries, newest first", TAG, list_deliveries,
              response="WebhookDeliveryPage", query=DELIVERY_QUERY),
    Operation("POST", ONE + "/deliveries/{delivery}/redeliver", "webhooks.redeliver",
              "Queue a delivery again (a dead letter, say)", TAG, redeliver,
              response="WebhookDelivery", query=Q),
]  # fmt: skip

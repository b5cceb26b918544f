"""Routes of webhooks: register, list, show, delete, list deliveries (dead letters), redeliver."""

from __future__ import annotations

from typing import Any

from bcfleet.api.documents import (
    WebhookCreatedJson,
    WebhookDeliveryJson,
    WebhookDeliveryPageJson,
    WebhookJson,
    WebhookPageJson,
)
from bcfleet.api.webhooks import (
    EVENT_TYPE_MAX,
    MAX_SECRET,
    MAX_TYPES,
    MAX_URL,
    MIN_SECRET,
)
from bcfleet.domain.bounds import URL_WORDS
from bcfleet.domain.pages import WEBHOOK_DELIVERIES
from bcfleet.domain.states import DeliveryState
from bcfleet.http.operations import TENANT, Call, Operation, Param, page_limit
from bcfleet.http.rules import http_url, reference
from bcfleet.http.schemas import array, nullable, obj
from bcfleet.http.typed_schemas import document_schemas

TAG = "webhooks"

SCHEMAS = {
    **document_schemas(
        (
            WebhookJson,
            WebhookCreatedJson,
            WebhookDeliveryJson,
            WebhookDeliveryPageJson,
            WebhookPageJson,
        )
    ),
    "WebhookCreate": obj(
        {
            "url": {
                **http_url(MAX_URL),
                "description": f"Where deliveries go: {URL_WORDS}. "
                "An address the egress guard refuses "
                "(loopback, private, link-local, …) is INVALID_INPUT with details.reason "
                "egress_refused: a rule of the server's network, not of this body.",
            },
            "eventTypes": array({**reference(), "maxLength": EVENT_TYPE_MAX}, max_items=MAX_TYPES),
            "secret": nullable(
                {**reference(), "minLength": MIN_SECRET, "maxLength": MAX_SECRET, "writeOnly": True}
            ),
        },
        required=["url"],
    ),
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
        limit=call.query["limit"],
    )


def redeliver(call: Call) -> Any:
    delivery = int(call.path["delivery"])  # DELIVERY_ID, checked before the handler runs
    return call.api.webhooks.redeliver(call.token, call.path["id"], delivery, tenant_id=call.tenant)


Q = (TENANT,)
ONE = "/v1/webhooks/{id}"
DELIVERY_ID = {"type": "string", "pattern": "^[0-9]{1,18}$", "description": "A delivery's id."}
DELIVERY_QUERY = (
    TENANT,
    Param("state", description="Only deliveries in this state (dead: the dead letters).",
          enum=tuple(s.value for s in DeliveryState)),
    page_limit(WEBHOOK_DELIVERIES),
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
              delete_webhook, response="Deleted", query=Q),
    Operation("GET", ONE + "/deliveries", "webhooks.deliveries",
              "A webhook's deliveries, newest first", TAG, list_deliveries,
              response="WebhookDeliveryPage", query=DELIVERY_QUERY),
    Operation("POST", ONE + "/deliveries/{delivery}/redeliver", "webhooks.redeliver",
              "Queue a delivery again (a dead letter, say)", TAG, redeliver,
              response="WebhookDelivery", query=Q, path_text={"delivery": DELIVERY_ID}),
]  # fmt: skip

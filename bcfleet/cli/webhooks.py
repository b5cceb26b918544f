"""`fleet webhooks create|list|show|delete|deliveries|redeliver`: a tenant's event webhooks."""

from __future__ import annotations

import click

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.cli.common import WHOLE, fleet_command, output, state, table
from bcfleet.domain.pages import WEBHOOK_DELIVERIES
from bcfleet.domain.states import DeliveryState


@click.group("webhooks")
def group() -> None:
    """Webhooks: a tenant's events POSTed to a URL, signed with HMAC-SHA256."""


COLUMNS = [("ID", "id"), ("TENANT", "tenantId"), ("URL", "url"), ("EVENTS", "eventTypes")]
DELIVERY_COLUMNS = [
    ("ID", "id"),
    ("EVENT", "eventType"),
    ("STATE", "state"),
    ("TRIES", "attempts"),
    ("LAST", "lastError"),
    ("NEXT", "nextAttemptAt"),
]


@fleet_command(group, "create")
@click.option("--tenant")
@click.option("--url", required=True, help="An http or https URL.")
@click.option("--event", "events", multiple=True, help="An event type (wildcards allowed).")
@click.option("--secret", help="The HMAC key (default: a new one, printed once).")
def create(tenant: str | None, url: str, events: tuple[str, ...], secret: str | None) -> None:
    """Register a webhook for the tenant's events from now on."""
    s = state()
    made = s.fleet.api.webhooks.create(
        s.credential, tenant_id=tenant, url=url, event_types=events, secret=secret
    )
    output(made, lambda d: f"webhook {d['id']} for {d['url']}\nsecret (shown once): {d['secret']}")


@fleet_command(group, "list")
@click.option("--tenant")
def list_(tenant: str | None) -> None:
    s = state()
    output(
        s.fleet.api.webhooks.list(s.credential, tenant_id=tenant),
        lambda d: table(d["items"], COLUMNS),
    )


@fleet_command(group, "show")
@click.argument("webhook_id")
@click.option("--tenant")
def show(webhook_id: str, tenant: str | None) -> None:
    s = state()
    output(s.fleet.api.webhooks.show(s.credential, webhook_id, tenant_id=tenant))


@fleet_command(group, "delete")
@click.argument("webhook_id")
@click.option("--tenant")
def delete(webhook_id: str, tenant: str | None) -> None:
    s = state()
    output(
        s.fleet.api.webhooks.delete(s.credential, webhook_id, tenant_id=tenant),
        lambda d: f"deleted {d['id']}",
    )


@fleet_command(group, "deliveries")
@click.argument("webhook_id")
@click.option("--tenant")
@click.option("--state", "state_", type=click.Choice([s.value for s in DeliveryState]))
@click.option("--limit", type=WHOLE, default=WEBHOOK_DELIVERIES.default, show_default=True)
def deliveries(webhook_id: str, tenant: str | None, state_: str | None, limit: int) -> None:
    """A webhook's deliveries, newest first (--state dead: the dead letters)."""
    s = state()
    page = s.fleet.api.webhooks.deliveries(
        s.credential, webhook_id, tenant_id=tenant, state=state_, limit=limit
    )
    output(page, lambda d: table(d["items"], DELIVERY_COLUMNS))


@fleet_command(group, "redeliver")
@click.argument("webhook_id")
@click.argument("delivery_id", type=WHOLE)
@click.option("--tenant")
def redeliver(webhook_id: str, delivery_id: int, tenant: str | None) -> None:
    """Queue a delivery again, its tries reset (the webhooks job sends it)."""
    s = state()
    output(s.fleet.api.webhooks.redeliver(s.credential, webhook_id, delivery_id, tenant_id=tenant))


@fleet_command(group, "deliver")
def deliver() -> None:
    """One round of the webhooks job now: queue new events, send what is due."""
    s = state()
    counts = s.fleet.api.jobs.call(LOCAL_OPERATOR, "webhooks")
    output(counts, lambda d: ", ".join(f"{k} {v}" for k, v in d.items()))

"""`fleet tenants create|list`."""

from __future__ import annotations

import click

from bcfleet.cli.common import fleet_command, output, state, table


@click.group("tenants")
def group() -> None:
    """Tenants: the organizations that own pools and use capacity."""


@fleet_command(group, "create")
@click.argument("tenant_id")
@click.option("--name", help="Display name (default: the id).")
def create(tenant_id: str, name: str | None) -> None:
    """Create a tenant."""
    s = state()
    output(
        s.fleet.api.tenants.create(s.credential, tenant_id, name=name),
        lambda t: f"Tenant {t['id']} created.",
    )


@fleet_command(group, "list")
def list_() -> None:
    """List tenants."""
    s = state()
    output(
        s.fleet.api.tenants.list(s.credential),
        lambda d: table(d["items"], [("ID", "id"), ("NAME", "name"), ("CREATED", "createdAt")]),
    )

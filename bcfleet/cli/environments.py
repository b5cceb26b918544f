"""`fleet environments create|list|show|update|delete`: fleet environments and the size their services run on."""

from __future__ import annotations

from typing import Any

import click

from bcfleet.cli.common import fleet_command, output, state, table


@click.group("environments")
def group() -> None:
    """Fleet environments: the services in one run on its size."""


def environment_text(env: dict[str, Any]) -> str:
    services = env.get("services")
    count = f", {services} service{'s' if services != 1 else ''}" if services is not None else ""
    return f"Environment {env['name']} ({env['id']}): {env['sizeLabel']}{count}"


@fleet_command(group, "create")
@click.option("--tenant", required=True)
@click.option("--name", required=True)
@click.option("--size", metavar="SIZE", required=True, help="small, medium, large or xlarge.")
def create(tenant: str, name: str, size: str) -> None:
    """Create an environment on an enabled size."""
    s = state()
    body = s.fleet.api.environments.create(s.credential, tenant_id=tenant, name=name, size=size)
    output(body, environment_text)


@fleet_command(group, "list")
@click.option("--tenant")
def list_(tenant: str | None) -> None:
    s = state()
    output(
        s.fleet.api.environments.list(s.credential, tenant_id=tenant),
        lambda d: table(
            d["items"],
            [("ID", "id"), ("NAME", "name"), ("SIZE", "sizeLabel"), ("SERVICES", "services")],
        ),
    )


@fleet_command(group, "show")
@click.argument("environment_id")
@click.option("--tenant")
def show(environment_id: str, tenant: str | None) -> None:
    s = state()
    body = s.fleet.api.environments.show(s.credential, environment_id, tenant_id=tenant)
    output(body, environment_text)


@fleet_command(group, "update")
@click.argument("environment_id")
@click.option("--size", metavar="SIZE", required=True, help="small, medium, large or xlarge.")
def update(environment_id: str, size: str) -> None:
    """Move an environment (and its deployed services) to another size."""
    s = state()
    body = s.fleet.api.environments.update(s.credential, environment_id, size=size)
    output(body, environment_text)


@fleet_command(group, "delete")
@click.argument("environment_id")
def delete(environment_id: str) -> None:
    """Delete an environment no service is in."""
    s = state()
    output(
        s.fleet.api.environments.delete(s.credential, environment_id),
        lambda _: f"Environment {environment_id} deleted.",
    )

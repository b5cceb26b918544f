"""`fleet services create|list|show|deploy|undeploy|move|delete`: the services that use instance sizes."""

from __future__ import annotations

from typing import Any

import click

from bcfleet.cli.common import Seconds, fleet_command, output, print_json, state, table

SIZE_HELP = "small, medium, large or xlarge"


@click.group("services")
def group() -> None:
    """Services on serverless or managed hosting, each on an instance size."""


def service_text(svc: dict[str, Any]) -> str:
    where = f", environment {svc['environment']}" if svc["environment"] else ""
    legacy = " (deployed before sizes existed)" if svc["legacy"] else ""
    lines = [
        f"Service {svc['name']} ({svc['id']}) in workspace {svc['workspace']}: "
        f"{svc['sizeLabel']}{legacy}, {svc['hosting']}{where}, {svc['status']}"
    ]
    if svc["instanceId"]:
        lines.append(f"  instance {svc['instanceId']}: {svc['instanceState']}")
    for condition in svc.get("conditions", []):
        lines.append(f"  {condition['type']}: {condition['message']}")
    for notice in svc.get("notices", []):
        lines.append(f"notice: {notice}")
    return "\n".join(lines)


@fleet_command(group, "create")
@click.option("--tenant", required=True)
@click.option("--workspace", required=True)
@click.option("--name", required=True)
@click.option(
    "--hosting",
    type=click.Choice(["serverless", "managed"]),
    default="serverless",
    show_default=True,
)
@click.option(
    "--size", metavar="SIZE", help=f"{SIZE_HELP} (default medium, whatever the default size)."
)
@click.option(
    "--environment", help="A fleet environment (id or name): the service runs on its size."
)
def create(
    tenant: str, workspace: str, name: str, hosting: str, size: str | None, environment: str | None
) -> None:
    """Create an undeployed service."""
    s = state()
    body = s.fleet.api.services.create(
        s.credential,
        tenant_id=tenant,
        workspace=workspace,
        name=name,
        hosting=hosting,
        size=size,
        environment=environment,
    )
    output(body, service_text)


@fleet_command(group, "list")
@click.option("--tenant")
@click.option("--workspace")
def list_(tenant: str | None, workspace: str | None) -> None:
    """List a tenant's services."""
    s = state()
    body = s.fleet.api.services.list(s.credential, tenant_id=tenant, workspace=workspace)
    output(
        body,
        lambda d: table(
            d["items"],
            [
                ("ID", "id"),
                ("WORKSPACE", "workspace"),
                ("NAME", "name"),
                ("HOSTING", "hosting"),
                ("SIZE", "sizeLabel"),
                ("ENVIRONMENT", "environment"),
                ("STATUS", "status"),
            ],
        ),
    )


@fleet_command(group, "show")
@click.argument("service_id")
@click.option("--tenant")
def show(service_id: str, tenant: str | None) -> None:
    """Show a service, the size it runs on and its instance."""
    s = state()
    output(s.fleet.api.services.show(s.credential, service_id, tenant_id=tenant), service_text)


def _progress(event: dict[str, Any]) -> str:
    phase = event["phase"]
    if phase == "no-capacity":
        return f"{event['message'].split('.')[0]}: starting one; keep this run open."
    svc = event["service"]
    if phase == "starting":
        return (
            f"Starting an instance of {svc['sizeLabel']} for {svc['name']} ({svc['instanceId']})…"
        )
    if phase == "waiting":
        state_ = svc["instanceState"] or "-"
        return (
            f"  waiting for instance {svc['instanceId']}: {state_} ({event['waitedSeconds']:g} s)"
        )
    return (
        f"Service {svc['name']} deployed on {svc['sizeLabel']}: instance {svc['instanceId']} ready."
    )


def _stream(service_id: str, poll: float, timeout: float) -> None:
    s = state()
    events = s.fleet.api.services.deploy_stream(
        s.credential, service_id, poll_seconds=poll, timeout_seconds=timeout
    )
    if s.json:
        print_json(list(events)[-1]["service"])
        return
    for event in events:
        if event["phase"] == "deployed":
            click.echo(_deployed_text(event["service"]))
        else:
            click.echo(_progress(event))


def _deployed_text(svc: dict[str, Any]) -> str:
    on = f": instance {svc['instanceId']} {svc['instanceState']}" if svc["instanceId"] else ""
    return f"Service {svc['name']} deployed on {svc['sizeLabel']}{on}."


@fleet_command(group, "deploy")
@click.argument("service_id")
@click.option(
    "--wait",
    is_flag=True,
    help="Stream: when no instance is free, start one and wait until it is ready.",
)
@click.option(
    "--poll", type=Seconds(0.01), default=5.0, show_default=True, help="Seconds between looks."
)
@click.option(
    "--timeout", type=Seconds(), default=900.0, show_default=True, help="Seconds to wait."
)
def deploy(service_id: str, wait: bool, poll: float, timeout: float) -> None:
    """Deploy on a free instance of the service's size, or fail with NO_CAPACITY (503)."""
    if wait:
        _stream(service_id, poll, timeout)
        return
    s = state()
    output(s.fleet.api.services.deploy(s.credential, service_id), _deployed_text)


@fleet_command(group, "undeploy")
@click.argument("service_id")
def undeploy(service_id: str) -> None:
    """Undeploy: its instance is released and the service no longer holds its size."""
    s = state()
    output(
        s.fleet.api.services.undeploy(s.credential, service_id),
        lambda svc: f"Service {svc['name']} undeployed.",
    )


@fleet_command(group, "move")
@click.argument("service_id")
@click.option("--size", metavar="SIZE", required=True, help=SIZE_HELP)
def move(service_id: str, size: str) -> None:
    """Move a service to another size (check its memory first)."""
    s = state()
    body = s.fleet.api.services.set_size(s.credential, service_id, size)
    output(body, lambda b: "\n".join([b["message"], *(f"notice: {n}" for n in b["notices"])]))


@fleet_command(group, "delete")
@click.argument("service_id")
def delete(service_id: str) -> None:
    """Delete a service (a deployed one is undeployed first)."""
    s = state()
    output(
        s.fleet.api.services.delete(s.credential, service_id),
        lambda _: f"Service {service_id} deleted.",
    )

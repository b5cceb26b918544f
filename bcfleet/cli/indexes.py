"""`fleet indexes create|list|show|update|deploy|undeploy|delete`: pipeline indexes and their pod sizes."""

from __future__ import annotations

from typing import Any

import click

from bcfleet.cli.common import fleet_command, output, state, table


@click.group("indexes")
def group() -> None:
    """Pipeline indexes: a pod size (or the default pod size) holds an instance size."""


def index_text(index: dict[str, Any]) -> str:
    compute = f" ({index['compute']['text']})" if "compute" in index else ""
    deployed = "deployed" if index["deployed"] else "undeployed"
    return (
        f"Index {index['name']} ({index['id']}) in workspace {index['workspace']}: "
        f"{index['podSizeLabel']}{compute}, {deployed}"
    )


@fleet_command(group, "create")
@click.option("--tenant", required=True)
@click.option("--workspace", required=True)
@click.option("--name", required=True)
@click.option("--pod-size", metavar="SIZE", help="small, medium, large or xlarge (default: none).")
@click.option("--deployed", is_flag=True, help="Create it deployed.")
def create(tenant: str, workspace: str, name: str, pod_size: str | None, deployed: bool) -> None:
    """Create an index; without --pod-size it uses the default pod size."""
    s = state()
    body = s.fleet.api.indexes.create(
        s.credential,
        tenant_id=tenant,
        workspace=workspace,
        name=name,
        pod_size=pod_size,
        deployed=deployed,
    )
    output(body, index_text)


@fleet_command(group, "list")
@click.option("--tenant")
@click.option("--workspace")
def list_(tenant: str | None, workspace: str | None) -> None:
    """List a tenant's indexes."""
    s = state()
    output(
        s.fleet.api.indexes.list(s.credential, tenant_id=tenant, workspace=workspace),
        lambda d: table(
            d["items"],
            [
                ("ID", "id"),
                ("WORKSPACE", "workspace"),
                ("NAME", "name"),
                ("POD SIZE", "podSizeLabel"),
                ("DEPLOYED", "deployed"),
            ],
        ),
    )


@fleet_command(group, "show")
@click.argument("index_id")
@click.option("--tenant")
def show(index_id: str, tenant: str | None) -> None:
    s = state()
    output(s.fleet.api.indexes.show(s.credential, index_id, tenant_id=tenant), index_text)


@fleet_command(group, "update")
@click.argument("index_id")
@click.option("--pod-size", metavar="SIZE", help="Move the index to this pod size.")
@click.option("--default-pod-size", is_flag=True, help="Reset it to the default pod size.")
def update(index_id: str, pod_size: str | None, default_pod_size: bool) -> None:
    """Move an index to another pod size or reset it to the default pod size (frees its size)."""
    if pod_size is not None and default_pod_size:
        raise click.UsageError("--pod-size and --default-pod-size exclude each other")
    s = state()
    body = s.fleet.api.indexes.update(
        s.credential, index_id, pod_size=pod_size, default_pod_size=default_pod_size
    )
    output(body, index_text)


@fleet_command(group, "deploy")
@click.argument("index_id")
def deploy(index_id: str) -> None:
    s = state()
    output(s.fleet.api.indexes.update(s.credential, index_id, deployed=True), index_text)


@fleet_command(group, "undeploy")
@click.argument("index_id")
def undeploy(index_id: str) -> None:
    """Undeploy an index; it keeps claiming its pod size."""
    s = state()
    output(s.fleet.api.indexes.update(s.credential, index_id, deployed=False), index_text)


@fleet_command(group, "delete")
@click.argument("index_id")
def delete(index_id: str) -> None:
    s = state()
    output(
        s.fleet.api.indexes.delete(s.credential, index_id),
        lambda _: f"Index {index_id} deleted.",
    )

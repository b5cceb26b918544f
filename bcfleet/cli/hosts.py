"""`fleet hosts adopt|report|list|show|drain|undrain`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from bcfleet.cli.common import fleet_command, output, parse_labels, state, table
from bcfleet.domain.document_limits import INVENTORY_MAX_BYTES
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.input_files import load_json


@click.group("hosts")
def group() -> None:
    """Hosts of vps-host pools."""


def _usage(host: dict[str, Any]) -> str:
    parts = []
    for row in host.get("resources", []):
        parts.append(
            f"{row['resource']} {row['allocated']}/{row['capacity']} (x{row['ratio'] or 1:g})"
        )
    return "; ".join(parts) or "-"


def _host_text(h: dict[str, Any]) -> str:
    lines = [
        f"Host {h['name']} ({h['id']})",
        f"  pool:      {h['pool']}",
        f"  state:     {h['status']}",
        f"  labels:    {', '.join(f'{k}={v}' for k, v in h['labels'].items()) or '-'}",
        f"  inventory: {h['inventoryReportedAt'] or 'never reported'}",
        f"  capacity:  {_usage(h)}",
    ]
    lines.extend(f"  condition: {c['type']}: {c['message']}" for c in h.get("conditions") or [])
    health = h.get("health")
    if health is not None:
        said = f": {health['message']}" if health.get("message") else ""
        lines.append(f"  health:    {health['state']} since {health['at']}{said}")
    return "\n".join(lines)


@fleet_command(group, "adopt")
@click.option("--tenant", default=ROOT_TENANT, show_default=True)
@click.option("--pool", required=True)
@click.option("--name", required=True)
@click.option("--label", "labels", multiple=True, help="KEY=VALUE, repeatable.")
@click.option("--tenant-controlled", is_flag=True)
def adopt(
    tenant: str, pool: str, name: str, labels: tuple[str, ...], tenant_controlled: bool
) -> None:
    """Adopt a host into a vps-host pool by name."""
    s = state()
    result = s.fleet.api.hosts.adopt(
        s.credential,
        tenant_id=tenant,
        pool=pool,
        name=name,
        labels=parse_labels(labels),
        tenant_controlled=tenant_controlled,
    )
    output(result, _host_text)


@fleet_command(group, "report")
@click.option("--tenant")
@click.option("--host", required=True)
@click.option("--file", "path", type=click.Path(dir_okay=False, path_type=Path), required=True)
def report(tenant: str | None, host: str, path: Path) -> None:
    """Report a host's inventory from a JSON file (schemas/inventory.schema.json)."""
    s = state()
    inventory = load_json(path, limit=INVENTORY_MAX_BYTES, what="host inventory")
    output(
        s.fleet.api.hosts.report(s.credential, tenant_id=tenant, host=host, inventory=inventory),
        _host_text,
    )


@fleet_command(group, "list")
@click.option("--tenant")
@click.option("--pool")
def list_(tenant: str | None, pool: str | None) -> None:
    """List hosts."""
    s = state()
    page = s.fleet.api.host_reads.list(s.credential, tenant_id=tenant, pool=pool)
    items: list[dict[str, Any]] = [dict(item) for item in page["items"]]
    for item in items:
        item["capacityText"] = _usage(item)
    output(
        {"items": items},
        lambda d: table(
            d["items"],
            [("NAME", "name"), ("POOL", "pool"), ("STATE", "status"), ("CAPACITY", "capacityText")],
        ),
    )


@fleet_command(group, "show")
@click.option("--tenant")
@click.option("--host", required=True)
def show(tenant: str | None, host: str) -> None:
    """Show a host."""
    s = state()
    output(s.fleet.api.hosts.show(s.credential, tenant_id=tenant, host=host), _host_text)


@fleet_command(group, "drain")
@click.option("--tenant")
@click.option("--host", required=True)
@click.option("--undo", is_flag=True, help="Return the host to ready.")
def drain(tenant: str | None, host: str, undo: bool) -> None:
    """Stop placing new instances on a host."""
    s = state()
    output(
        s.fleet.api.hosts.set_state(s.credential, tenant_id=tenant, host=host, draining=not undo),
        _host_text,
    )

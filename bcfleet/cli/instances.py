"""`fleet instances create|list|show|stop|start|delete|resize|spec`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from bcfleet.cli.common import WHOLE, fleet_command, output, state, table
from bcfleet.domain.instance_query import SORT_KEYS


@click.group("instances")
def group() -> None:
    """Instances: placed on hosts of vps-host pools, or made at a provider."""


def _conditions(item: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The server's conditions, then those its host's agent reports."""
    return [*item.get("conditions", []), *item.get("agentConditions", [])]


def _condition_text(item: Mapping[str, Any]) -> str:
    return "; ".join(f"{c['type']}: {c['message']}" for c in _conditions(item))


def _instance_text(i: dict[str, Any]) -> str:
    shape = i["shape"]
    size = (
        f"{shape.get('vcpu', '?')} vCPU, {shape.get('memoryGiB', '?')} GiB memory, "
        f"{shape.get('diskGiB', '?')} GiB disk"
        + (f", {shape['gpus']} GPU" if shape.get("gpus") else "")
    )
    lines = [
        f"Instance {i['name']} ({i['id']})",
        f"  state:   {i['state']}",
        f"  flavor:  {i.get('flavor') or '-'}: {size}",
        f"  node:    {i.get('nodeId') or '-'}",
    ]
    if i.get("unreadable"):  # a damaged row: fleet doctor --invariants names it
        lines.append(f"  unreadable: {', '.join(i['unreadable'])} (shown empty)")
    placement = i.get("hostPlacement")
    if placement:
        cpus = placement.get("cpus")
        lines.append(
            f"  cpus:    {'pinned ' + ','.join(map(str, cpus)) if cpus else 'floating'}"
            + (f", NUMA {placement['mems']}" if placement.get("mems") else "")
        )
    if i.get("balloonBytes") is not None:
        mib = i["balloonBytes"] / (1 << 20)
        lines.append(f"  balloon: {mib:,.0f} MiB of memory left to the guest (its agent says)")
    for condition in _conditions(i):
        lines.append(f"  {condition['type']}: {condition['reason']}: {condition['message']}")
    return "\n".join(lines)


def _batch_text(batch: dict[str, Any]) -> str:
    lines = [f"Placed {batch['placed']} of {batch['count']}"]
    if batch["reason"]:
        lines[0] += f": {batch['reason']}"
    lines += [f"  {i['name']} ({i['id']}): {i['state']}" for i in batch["items"]]
    return "\n".join(lines)


@fleet_command(group, "create")
@click.option("--tenant", required=True)
@click.option("--pool", required=True)
@click.option("--flavor", required=True)
@click.option("--name")
@click.option(
    "--idempotency-key",
    "key",
    help="Sent again with the same input, answers the instance the first create made.",
)
@click.option(
    "--count",
    type=WHOLE,
    help="Place this many in one transaction, named NAME-1 … NAME-N; as many as fit, the rest "
    "refused and counted (not made).",
)
@click.option(
    "--all-or-nothing",
    is_flag=True,
    help="With --count: all of them or none (CAPACITY_UNAVAILABLE, nothing changes).",
)
def create(
    tenant: str,
    pool: str,
    flavor: str,
    name: str | None,
    key: str | None,
    count: int | None,
    all_or_nothing: bool,
) -> None:
    """Admit and place an instance of a flavor (with --count, a batch of them)."""
    s = state()
    if count is not None or all_or_nothing:
        output(
            s.fleet.api.instances.create_batch(
                s.credential,
                tenant_id=tenant,
                pool_id=pool,
                flavor=flavor,
                count=1 if count is None else count,
                name=name,
                idempotency_key=key,
                all_or_nothing=all_or_nothing,
            ),
            _batch_text,
        )
        return
    output(
        s.fleet.api.instances.create(
            s.credential,
            tenant_id=tenant,
            pool_id=pool,
            flavor=flavor,
            name=name,
            idempotency_key=key,
        ),
        _instance_text,
    )


@fleet_command(group, "list")
@click.option("--tenant")
@click.option("--pool")
@click.option("--state", "state_")
@click.option("--all", "include_deleted", is_flag=True, help="Include deleted instances.")
@click.option("--search", "q", help="Words, each in the name or the id (any case).")
@click.option("--owner", help="Only the instances of this tenant.")
@click.option("--host", help="Only the instances on this host (an id or a name).")
@click.option("--sort", type=click.Choice(SORT_KEYS), help="Order by this (ties by id).")
@click.option("--descending", is_flag=True, help="The order the other way round.")
@click.option("--after", type=WHOLE, help="Skip this many: the cursor of the page before.")
@click.option("--limit", type=WHOLE, help="At most this many, with the total and the next cursor.")
def list_(
    tenant: str | None,
    pool: str | None,
    state_: str | None,
    include_deleted: bool,
    **query: Any,
) -> None:
    """List instances: every one oldest first, or with --limit a page (pending ones first, then
    the newest, unless --sort says otherwise) and how many there are in all."""
    s = state()
    data = s.fleet.api.instances.list(
        s.credential,
        tenant_id=tenant,
        pool=pool,
        state=state_,
        include_deleted=include_deleted,
        **query,
    )
    rows = [{**item, "why": _condition_text(item)} for item in data["items"]]
    output({**data, "items": rows}, _list_text)


def _list_text(data: Mapping[str, Any]) -> str:
    text = table(
        data["items"],
        [
            ("ID", "id"),
            ("NAME", "name"),
            ("TENANT", "tenantId"),
            ("FLAVOR", "flavor"),
            ("STATE", "state"),
            ("CONDITIONS", "why"),
        ],
    )
    if "total" not in data:
        return text
    more = f"; next page: --after {data['cursor']}" if data.get("cursor") is not None else ""
    return f"{text}\n{len(data['items'])} of {data['total']}{more}"


@fleet_command(group, "show")
@click.option("--tenant")
@click.argument("instance_id")
def show(tenant: str | None, instance_id: str) -> None:
    s = state()
    output(s.fleet.api.instances.show(s.credential, instance_id, tenant_id=tenant), _instance_text)


@fleet_command(group, "stop")
@click.option("--tenant")
@click.argument("instance_id")
def stop(tenant: str | None, instance_id: str) -> None:
    s = state()
    output(s.fleet.api.instances.stop(s.credential, instance_id, tenant_id=tenant), _instance_text)


@fleet_command(group, "start")
@click.option("--tenant")
@click.argument("instance_id")
def start(tenant: str | None, instance_id: str) -> None:
    s = state()
    output(s.fleet.api.instances.start(s.credential, instance_id, tenant_id=tenant), _instance_text)


@fleet_command(group, "delete")
@click.option("--tenant")
@click.argument("instance_id")
def delete(tenant: str | None, instance_id: str) -> None:
    s = state()
    output(
        s.fleet.api.instances.delete(s.credential, instance_id, tenant_id=tenant),
        lambda i: f"Instance {i['id']} deleted.",
    )


@fleet_command(group, "resize")
@click.option("--tenant")
@click.option("--flavor", required=True)
@click.argument("instance_id")
def resize(tenant: str | None, flavor: str, instance_id: str) -> None:
    """Resize a stopped hosted instance in place to another flavor of its pool."""
    s = state()
    output(
        s.fleet.api.instances.resize(s.credential, instance_id, flavor=flavor, tenant_id=tenant),
        _instance_text,
    )


@fleet_command(group, "spec")
@click.option("--tenant")
@click.option(
    "--format", "format_", type=click.Choice(["json", "libvirt"]), default="json", show_default=True
)
@click.argument("instance_id")
def spec(tenant: str | None, format_: str, instance_id: str) -> None:
    """The InstanceSpec the host agent receives, or its libvirt domain XML (with --json, the
    XML as the string `domainXml` of one JSON document)."""
    s = state()
    result = s.fleet.api.instances.spec(s.credential, instance_id, tenant_id=tenant, format=format_)
    if isinstance(result, str):
        output(
            {"id": instance_id, "format": format_, "domainXml": result}, lambda d: d["domainXml"]
        )
    else:
        output(result)

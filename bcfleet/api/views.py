"""Rows to the JSON the documents show: camelCase fields, prefixed ids, RFC 3339 times."""

from __future__ import annotations

from typing import Any

from bcfleet.clock import format_time
from bcfleet.domain.bounds import finite_or_none
from bcfleet.store.models import Flavor, Host, NodeResource, Pool, Principal, Tenant


def tenant_json(tenant: Tenant) -> dict[str, Any]:
    return {"id": tenant.id, "name": tenant.name, "createdAt": format_time(tenant.created_at)}


def principal_json(principal: Principal) -> dict[str, Any]:
    return {
        "id": principal.id,
        "tenantId": principal.tenant_id,
        "name": principal.name,
        "role": principal.role,
        "createdAt": format_time(principal.created_at),
    }


def pool_json(pool: Pool, offered_to: list[str] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": pool.id,
        "name": pool.name,
        "kind": pool.kind,
        "owner": pool.owner_tenant_id,
        "policy": {
            "overcommit": {k: finite_or_none(v) for k, v in pool.overcommit.items()},
            "hostReserve": {k: finite_or_none(v) for k, v in pool.host_reserve.items()},
        },
        "version": pool.version,
        "createdAt": format_time(pool.created_at),
    }
    if pool.gpu_model:
        body["gpuModel"] = pool.gpu_model
    if pool.provider_account_id:
        body["providerAccountId"] = pool.provider_account_id
    if offered_to is not None:
        body["offeredTo"] = offered_to
    return body


def flavor_json(flavor: Flavor) -> dict[str, Any]:
    """Field for field the document's example; offerId and placement only when set."""
    body: dict[str, Any] = {
        "id": flavor.id,
        "poolId": flavor.pool_id,
        "name": flavor.name,
        "vcpu": flavor.vcpu,
        "memoryGiB": flavor.memory_gib,
        "diskGiB": flavor.disk_gib,
        "gpus": flavor.gpus,
        "archived": flavor.archived,
        "version": flavor.version,
    }
    if flavor.offer_id is not None:
        body["offerId"] = flavor.offer_id
    if flavor.placement:
        body["placement"] = dict(flavor.placement)
    return body


def node_resource_json(row: NodeResource) -> dict[str, Any]:
    return {
        "resource": row.resource,
        "allocatable": row.allocatable,
        "ratio": finite_or_none(row.ratio),
        "capacity": row.capacity,
        "allocated": row.allocated,
    }


def host_json(
    host: Host, pool: Pool, resources: list[NodeResource] | None = None
) -> dict[str, Any]:
    state = host.state if host.inventory is not None else f"{host.state}, no inventory"
    body: dict[str, Any] = {
        "id": host.id,
        "name": host.name,
        "poolId": pool.id,
        "pool": pool.name,
        "labels": dict(host.labels),
        "tenantControlled": host.tenant_controlled,
        "state": host.state,
        "status": state,
        "inventoryReportedAt": format_time(host.inventory_reported_at),
        "inventoryError": host.inventory_error,
        "createdAt": format_time(host.created_at),
    }
    if resources is not None:
        body["resources"] = [node_resource_json(r) for r in resources]
    return body

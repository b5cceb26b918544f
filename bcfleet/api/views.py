"""Rows to the JSON the documents show: camelCase fields, prefixed ids, RFC 3339 times.

Each object is rendered here once, as its typed document (bcfleet/api/documents.py); the
bulk readers that skip the ORM (host_list, flavors.create_many) call the same renderers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from bcfleet.api.conditions import condition_is_true
from bcfleet.clock import format_time
from bcfleet.domain.agent_report import HEALTH_DEGRADED
from bcfleet.domain.bounds import finite_or_none, stored_ratio
from bcfleet.domain.host_reserve import DEFAULT_RESERVE, HostReserve
from bcfleet.domain.pool_policy import effective_ratios, effective_reserve_json
from bcfleet.domain.states import INVENTORY_SHORTFALL, HostHealth

if TYPE_CHECKING:
    from bcfleet.api.documents import (
        DeletedJson,
        FlavorJson,
        FlavorPlacementJson,
        HostHealthJson,
        HostJson,
        NodeResourceJson,
        PoolJson,
        PrincipalJson,
        TenantJson,
    )
    from bcfleet.store.models import Flavor, Host, NodeResource, Pool, Principal, Tenant


def deleted_json(object_id: str) -> DeletedJson:
    """The answer of a delete: the object's id, and that it is gone."""
    return {"id": object_id, "deleted": True}


def tenant_json(tenant: Tenant) -> TenantJson:
    return {"id": tenant.id, "name": tenant.name, "createdAt": format_time(tenant.created_at)}


def principal_json(principal: Principal) -> PrincipalJson:
    body: PrincipalJson = {
        "id": principal.id,
        "tenantId": principal.tenant_id,
        "name": principal.name,
        "role": principal.role,
        "createdAt": format_time(principal.created_at),
    }
    if principal.host_id is not None:
        body["host"] = principal.host_id
    return body


def pool_json(
    pool: Pool, offered_to: list[str] | None = None, default_reserve: HostReserve = DEFAULT_RESERVE
) -> PoolJson:
    """The pool; ``policy`` as stored, ``effectivePolicy`` every value in force (the fleet's
    default reserve, ``default_reserve``, under the pool's own)."""
    body: PoolJson = {
        "id": pool.id,
        "name": pool.name,
        "kind": str(pool.kind),
        "owner": pool.owner_tenant_id,
        "policy": {
            "overcommit": {k: stored_ratio(v) for k, v in pool.overcommit.items()},
            "hostReserve": {k: finite_or_none(v) for k, v in pool.host_reserve.items()},
        },
        "effectivePolicy": {
            "overcommit": effective_ratios(pool.overcommit),
            "hostReserve": effective_reserve_json(pool.host_reserve, default_reserve),
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


def flavor_json(flavor: Flavor) -> FlavorJson:
    """Field for field the document's example; offerId and placement only when set."""
    return flavor_row_json(
        {
            "id": flavor.id,
            "pool_id": flavor.pool_id,
            "name": flavor.name,
            "vcpu": flavor.vcpu,
            "memory_gib": flavor.memory_gib,
            "disk_gib": flavor.disk_gib,
            "gpus": flavor.gpus,
            "archived": flavor.archived,
            "version": flavor.version,
            "offer_id": flavor.offer_id,
            "placement": flavor.placement,
        }
    )


def flavor_row_json(row: Mapping[str, Any]) -> FlavorJson:
    """flavor_json of a flavor's columns (a row written in bulk, without the ORM object)."""
    body: FlavorJson = {
        "id": row["id"],
        "poolId": row["pool_id"],
        "name": row["name"],
        "vcpu": row["vcpu"],
        "memoryGiB": row["memory_gib"],
        "diskGiB": row["disk_gib"],
        "gpus": row["gpus"],
        "archived": row["archived"],
        "version": row["version"],
    }
    if row["offer_id"] is not None:
        body["offerId"] = row["offer_id"]
    if row["placement"]:
        placement: FlavorPlacementJson = dict(row["placement"])  # type: ignore[assignment]
        body["placement"] = placement
    return body


def node_resource_row_json(
    resource: str, allocatable: int, ratio: Any, capacity: int, allocated: int
) -> NodeResourceJson:
    """A host's resource; a stored ratio that is no finite number shows as null."""
    return {
        "resource": resource,
        "allocatable": allocatable,
        "ratio": finite_or_none(float(ratio)),
        "capacity": capacity,
        "allocated": allocated,
    }


def node_resource_json(row: NodeResource) -> NodeResourceJson:
    return node_resource_row_json(
        row.resource, row.allocatable, row.ratio, row.capacity, row.allocated
    )


def health_json(stored: Any) -> HostHealthJson | None:
    """A host's stored health as documents show it (None until its agent reported one)."""
    if not isinstance(stored, Mapping) or stored.get("state") not in tuple(HostHealth):
        return None
    return {"state": stored["state"], "message": stored.get("message"), "at": stored.get("at", "")}


def host_fields_json(
    *,
    id: str,
    name: str,
    pool_id: str,
    pool: str,
    labels: Mapping[str, str],
    tenant_controlled: bool,
    state: str,
    inventory_reported_at: str | None,
    inventory_error: str | None,
    created_at: str,
    conditions: list[dict[str, Any]] | None = None,
    health: Any = None,
) -> HostJson:
    """The fields every rendering of a host has, without its resources (no inventory time, no
    inventory: only hosts.report writes one, always with its time). Its status names an
    InventoryShortfall condition too."""
    status = state if inventory_reported_at is not None else f"{state}, no inventory"
    if condition_is_true(conditions, INVENTORY_SHORTFALL):
        status = f"{status}, inventory shortfall"
    shown_health = health_json(health)
    if shown_health is not None and shown_health["state"] == HEALTH_DEGRADED:
        status = f"{status}, degraded"
    body: HostJson = {
        "id": id,
        "name": name,
        "poolId": pool_id,
        "pool": pool,
        "labels": dict(labels),
        "tenantControlled": bool(tenant_controlled),
        "state": state,
        "status": status,
        "inventoryReportedAt": inventory_reported_at,
        "inventoryError": inventory_error,
        "createdAt": created_at,
        "conditions": list(conditions or []),
    }
    if shown_health is not None:
        body["health"] = shown_health
    return body


def host_json(host: Host, pool: Pool, resources: list[NodeResource] | None = None) -> HostJson:
    body = host_fields_json(
        id=host.id,
        name=host.name,
        pool_id=pool.id,
        pool=pool.name,
        labels=host.labels,
        tenant_controlled=host.tenant_controlled,
        state=str(host.state),
        inventory_reported_at=format_time(host.inventory_reported_at),
        inventory_error=host.inventory_error,
        created_at=format_time(host.created_at),
        conditions=host.conditions,
        health=host.agent_health,
    )
    if resources is not None:
        body["resources"] = [node_resource_json(r) for r in resources]
    return body

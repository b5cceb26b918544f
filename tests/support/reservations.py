"""Builders for reservation tests: a GPU pool offered to acme and beta, reservations, tenant-visible text."""

from __future__ import annotations

import json
from typing import Any

from bcfleet.fleet import Fleet
from tests.support.builders import OP
from tests.support.capacity import pool_with_hosts


def gpu_pool(fleet: Fleet, hosts: int = 1, gpus: int = 4) -> dict[str, Any]:
    """A vps-host pool of `hosts` nodes with `gpus` GPUs each, offered to acme and beta."""
    pool = pool_with_hosts(fleet, hosts=hosts, gpus=gpus)
    fleet.api.tenants.create(OP, "beta")
    fleet.api.pools.offer(OP, tenant_id="root", pool=pool["id"], to="beta")
    return pool


def reserve(
    fleet: Fleet, pool: dict[str, Any], tenant: str = "acme", gpus: int = 4, **kw: Any
) -> dict[str, Any]:
    kw.setdefault("duration", "12h")
    return fleet.api.reservations.create(OP, tenant_id=tenant, pool_id=pool["id"], gpus=gpus, **kw)


def get(fleet: Fleet, rsv: dict[str, Any]) -> dict[str, Any]:
    return fleet.api.reservations.get(OP, rsv["id"])


def events(fleet: Fleet, tenant: str, *types: str) -> list[dict[str, Any]]:
    """The events a tenant reads (its own copies), optionally of some types."""
    return fleet.api.events.list(OP, tenant_id=tenant, types=types, limit=1000)["items"]


def tenant_text(fleet: Fleet, tenant: str, pool: dict[str, Any]) -> str:
    """Everything the tenant can read about reservations: its events, reservations and a preview."""
    readable = {
        "events": events(fleet, tenant),
        "reservations": fleet.api.reservations.list(OP, tenant_id=tenant, include_released=True),
        "preview": fleet.api.capacity.preview(
            OP, tenant_id=tenant, pool_id=pool["id"], gpus=4, duration="12h"
        ),
    }
    return json.dumps(readable)


def quota_used(fleet: Fleet, tenant: str, pool: dict[str, Any]) -> int:
    shown = fleet.api.quotas.show(OP, tenant_id=tenant, pool=pool["id"])
    return int(shown["items"][0]["used"]["gpu"])

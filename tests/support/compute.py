"""Builders for the compute-settings tests: a serverless pool with capacity, spares made ready, old services."""

from __future__ import annotations

from typing import Any

from bcfleet.agent.simulate import boot_instances
from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.jobs.spares import run_spares
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.store.models.compute import Service
from tests.support.builders import OP, host, hosted_pool, inventory, token


def capacity_host(
    fleet: Fleet,
    pool: str,
    name: str,
    *,
    vcpu: int = 32,
    memory_gib: int = 128,
    disk_gib: int = 1000,
) -> dict[str, Any]:
    """A host whose allocatable capacity is exactly this (its inventory adds the host reserve).

    The vps.hosts job derives its node_resources rows: 2 vCPU, 8 GiB and 100 GiB are reserved.
    """
    inv = inventory(cpus=vcpu + 2, memory_gib=memory_gib + 8, disk_gib=disk_gib + 100)
    made = host(fleet, pool, name, inv)
    run_vps_hosts(fleet, fleet.now())
    return made


def serverless_tenant(
    fleet: Fleet,
    tenant: str = "acme",
    *,
    spares: dict[str, int] | None = None,
    vcpu: int = 32,
    memory_gib: int = 128,
) -> dict[str, Any]:
    """A pool `vps-fra` offered to the tenant, one host, and the tenant's serverless pool set to it."""
    pool = hosted_pool(fleet, offered_to=(tenant,))
    capacity_host(fleet, pool["id"], "fra-01", vcpu=vcpu, memory_gib=memory_gib)
    fleet.api.settings.compute_set(
        OP, tenant_id=tenant, serverless_pool=pool["name"], spares=spares or {}
    )
    return pool


def make_spares_ready(fleet: Fleet, clock: FakeClock) -> dict[str, int]:
    """One spares tick, then the boot delay on the clock, then the simulated agent."""
    counts = run_spares(fleet, clock.now())
    clock.advance(fleet.settings.spare_boot_seconds)
    boot_instances(fleet, OP, clock.now())
    return counts


def legacy_service(
    fleet: Fleet,
    tenant: str,
    workspace: str,
    name: str,
    *,
    deployed: bool = True,
    hosting: str = "serverless",
) -> str:
    """A service from before instance sizes existed (no size: it ran with 8 GiB, as Large)."""
    now = fleet.now()
    service = Service(
        id=fleet.new_id("svc"), tenant_id=tenant, workspace=workspace, name=name, hosting=hosting,
        deployed=deployed, size=None, created_at=now, updated_at=now,
        deployed_at=now if deployed else None,
    )  # fmt: skip
    with fleet.write() as session:
        session.add(service)
    return service.id


def waiting_services(fleet: Fleet, tenant: str, count: int) -> tuple[str, list[str]]:
    """A new tenant with no spare instances and `count` services, and its admin token: each deploy
    has to wait. The first such tenant gets the serverless pool, the next ones are offered it."""
    fleet.api.tenants.create(OP, tenant)
    pools = fleet.api.pools.list(OP)["items"]
    if not pools:
        serverless_tenant(fleet, tenant)
    else:
        fleet.api.pools.offer(OP, tenant_id="root", pool=pools[0]["id"], to=tenant)
        fleet.api.settings.compute_set(OP, tenant_id=tenant, serverless_pool=pools[0]["name"])
    admin = token(fleet, tenant, f"{tenant}-admin")
    ids = [
        fleet.api.services.create(
            admin, tenant_id=tenant, workspace="w", name=f"s{i}", size="large"
        )["id"]
        for i in range(count)
    ]
    return admin, ids

"""A simulated fleet for `fleet demo`: tenants, pools, hosts with inventories, flavors, through the API."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import func
from sqlmodel import select

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.domain.simulated_inventory import two_socket_host
from bcfleet.domain.states import PoolKind
from bcfleet.store.models import Host, Instance, Pool, Tenant

if TYPE_CHECKING:
    from bcfleet.api.handle import ApiHandle

PLACEMENT_LABEL = "bc.dev/cap.instance.placement"


def build_demo(fleet: ApiHandle, *, hosts: int = 50) -> dict[str, Any]:
    """Create the demo fleet in an empty database; returns what was made."""
    api, op = fleet.api, LOCAL_OPERATOR
    api.tenants.create(op, "acme", name="ACME")
    api.tenants.create(op, "globex", name="Globex")
    gpu_pool = api.pools.create(
        op,
        tenant_id=ROOT_TENANT,
        name="vps-fra",
        kind=PoolKind.VPS_HOST,
        gpu_model="L40S",
        overcommit={"vcpu": 2, "memoryGiB": 1.5},
        host_reserve={"vcpu": 2},
    )
    cpu_pool = api.pools.create(
        op, tenant_id=ROOT_TENANT, name="vps-ams", kind=PoolKind.VPS_HOST, overcommit={"vcpu": 4}
    )
    for tenant in ("acme", "globex"):
        api.pools.offer(op, tenant_id=ROOT_TENANT, pool=gpu_pool["id"], to=tenant)
    api.pools.offer(op, tenant_id=ROOT_TENANT, pool=cpu_pool["id"], to="acme")
    made = []
    for i in range(1, hosts + 1):
        pool = gpu_pool if i % 5 else cpu_pool
        gpus = 4 if pool is gpu_pool and i % 2 else 0
        name = f"{'fra' if pool is gpu_pool else 'ams'}-{i:02d}"
        api.hosts.adopt(
            op, tenant_id=ROOT_TENANT, pool=pool["id"], name=name, labels={PLACEMENT_LABEL: "true"}
        )
        if i % 17:  # a few hosts have not reported yet
            inventory = two_socket_host(seed=i, gpus=gpus, hostname=name)
            api.hosts.report(op, host=name, inventory=inventory)
        made.append(name)
    for pool in (gpu_pool, cpu_pool):
        for name, vcpu, mem, disk in (
            ("g1.small", 2, 4, 40),
            ("g1.medium", 4, 8, 80),
            ("g1.large", 8, 32, 160),
        ):
            api.flavors.create(
                op,
                tenant_id=ROOT_TENANT,
                pool_id=pool["id"],
                name=name,
                vcpu=vcpu,
                memory_gib=mem,
                disk_gib=disk,
            )
    api.flavors.create(
        op,
        tenant_id=ROOT_TENANT,
        pool_id=gpu_pool["id"],
        name="gpu1.l40s",
        vcpu=8,
        memory_gib=32,
        disk_gib=200,
        gpus=1,
        placement={"numaAffine": True, "pinned": True, "hugepageSizeBytes": 1073741824},
    )
    return {"pools": [gpu_pool["name"], cpu_pool["name"]], "hosts": len(made)}


def fleet_contents(fleet: ApiHandle) -> dict[str, int]:
    """What a database already holds, counted: empty means only the root tenant is there."""
    with fleet.read() as session:
        counts = {
            "tenants": session.exec(select(func.count()).select_from(Tenant)).one() - 1,
            "pools": session.exec(select(func.count()).select_from(Pool)).one(),
            "hosts": session.exec(select(func.count()).select_from(Host)).one(),
            "instances": session.exec(select(func.count()).select_from(Instance)).one(),
        }
    return {kind: count for kind, count in counts.items() if count > 0}

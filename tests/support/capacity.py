"""Builders for capacity tests: a pool with synced hosts, ready for placements."""

from __future__ import annotations

from typing import Any

from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from tests.support.builders import OP, flavor, host, hosted_pool, inventory

PLACEMENT = {"bc.dev/cap.instance.placement": "true"}


def pool_with_hosts(
    fleet: Fleet,
    hosts: int = 1,
    *,
    cpus: int = 18,
    memory_gib: int = 72,
    disk_gib: int = 600,
    gpus: int = 0,
    overcommit: dict[str, float] | None = None,
    numa_nodes: int = 2,
    labels: dict[str, str] | None = PLACEMENT,
) -> dict[str, Any]:
    """A root pool offered to acme with synced hosts h1..hN: reserve 2 vCPU, 8 GiB, 100 GiB."""
    pool = hosted_pool(fleet, overcommit=overcommit)
    for i in range(1, hosts + 1):
        inv = inventory(
            cpus=cpus, memory_gib=memory_gib, disk_gib=disk_gib, gpus=gpus, numa_nodes=numa_nodes
        )
        host(fleet, pool["id"], f"h{i}", inv, labels=labels)
    run_vps_hosts(fleet, fleet.now())
    return pool


def rows(fleet: Fleet, host_name: str) -> dict[str, dict[str, Any]]:
    return {r["resource"]: r for r in fleet.api.hosts.show(OP, host=host_name)["resources"]}


def create(
    fleet: Fleet, pool: dict[str, Any], flavor_name: str, tenant: str = "acme"
) -> dict[str, Any]:
    return fleet.api.instances.create(OP, tenant_id=tenant, pool_id=pool["id"], flavor=flavor_name)


def small_flavor(
    fleet: Fleet, pool: dict[str, Any], name: str = "g1.small", **shape: Any
) -> dict[str, Any]:
    return flavor(fleet, pool["id"], name, **shape)


def invariants_ok(fleet: Fleet) -> dict[str, Any]:
    report = fleet.api.doctor.check(OP, invariants=True)["invariants"]
    assert report["ok"], report["problems"]
    return report


DEGRADED = "PlacementDegraded"


def gpu_fleet(fleet: Fleet) -> dict[str, Any]:
    """Two hosts of 4 GPUs without a NUMA topology: numaAffine guests run degraded there."""
    pool = pool_with_hosts(fleet, hosts=2, gpus=4, numa_nodes=0)
    flavor(fleet, pool["id"], "gpu2", vcpu=2, memory_gib=4, disk_gib=10, gpus=2)
    flavor(fleet, pool["id"], "pin", vcpu=2, memory_gib=4, disk_gib=10,
           placement={"numaAffine": True})  # fmt: skip
    flavor(fleet, pool["id"], "plain", vcpu=1, memory_gib=2, disk_gib=10)
    return pool


def has_degraded(instance: dict[str, Any]) -> bool:
    """Whether the instance carries the PlacementDegraded condition."""
    return any(c["type"] == DEGRADED for c in instance["conditions"])

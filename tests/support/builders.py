"""Small builders for tests: a root pool offered to a tenant, hosts with inventories, flavors."""

from __future__ import annotations

from typing import Any

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.fleet import Fleet

OP = LOCAL_OPERATOR


def inventory(
    *,
    cpus: int = 16,
    numa_nodes: int = 1,
    memory_gib: int = 64,
    disk_gib: int = 500,
    gpus: int = 0,
    isolated: tuple[int, ...] = (),
    hugepages_1g: int = 0,
    gpu_numa: int | None = 0,
) -> dict[str, Any]:
    """A valid inventory document (PRODUCT.md §8)."""
    per_node = max(cpus // max(numa_nodes, 1), 1)
    return {
        "cpus": [
            {
                "id": c,
                "numaNode": (c // per_node) if numa_nodes else None,
                "isolated": c in isolated,
            }
            for c in range(cpus)
        ],
        "numaNodes": [
            {
                "id": n,
                "memoryGiB": memory_gib // max(numa_nodes, 1),
                "hugepages": [
                    {"sizeBytes": 1073741824, "total": hugepages_1g, "free": hugepages_1g}
                ]
                if hugepages_1g
                else [],
            }
            for n in range(numa_nodes)
        ],
        "memoryGiB": memory_gib,
        "diskGiB": disk_gib,
        "gpus": [
            {"model": "L40S", "pciAddress": f"0000:{0x17 + g:02x}:00.0", "numaNode": gpu_numa}
            for g in range(gpus)
        ],
    }


def hosted_pool(
    fleet: Fleet,
    name: str = "vps-fra",
    *,
    offered_to: tuple[str, ...] = ("acme",),
    gpu_model: str | None = "L40S",
    overcommit: dict[str, float] | None = None,
) -> dict[str, Any]:
    """A vps-host pool owned by root and offered to the given tenants (created if missing)."""
    existing = {t["id"] for t in fleet.api.tenants.list(OP)["items"]}
    for tenant in offered_to:
        if tenant not in existing:
            fleet.api.tenants.create(OP, tenant)
    pool = fleet.api.pools.create(
        OP, tenant_id="root", name=name, kind="vps-host", gpu_model=gpu_model, overcommit=overcommit
    )
    for tenant in offered_to:
        pool = fleet.api.pools.offer(OP, tenant_id="root", pool=pool["id"], to=tenant)
    return pool


def host(
    fleet: Fleet,
    pool: str,
    name: str,
    inv: dict[str, Any] | None = None,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Adopt a host and, when given, report its inventory."""
    made = fleet.api.hosts.adopt(OP, tenant_id="root", pool=pool, name=name, labels=labels)
    if inv is not None:
        made = fleet.api.hosts.report(OP, host=name, inventory=inv)
    return made


def flavor(fleet: Fleet, pool: str, name: str = "g1.small", **shape: Any) -> dict[str, Any]:
    fields = {"vcpu": 2, "memory_gib": 4, "disk_gib": 40}
    fields.update(shape)
    return fleet.api.flavors.create(OP, tenant_id="root", pool_id=pool, name=name, **fields)


def token(fleet: Fleet, tenant: str, name: str, role: str = "admin") -> str:
    """A fresh API token for a principal of the tenant."""
    return str(fleet.api.iam.create_token(OP, tenant_id=tenant, name=name, role=role)["token"])

"""What runs on the demo fleet: instances (some degraded), reservations with a preemption under way, spares, services."""

from __future__ import annotations

from datetime import timedelta

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.api.documents import ServiceJson
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.domain.states import PoolKind
from bcfleet.fleet import Fleet

OP = LOCAL_OPERATOR


def populate(fleet: Fleet, gpu_pool: str, cpu_pool: str) -> dict[str, int]:
    """Place a realistic mix on an already synced demo fleet; returns counts of what was made."""
    api = fleet.api
    api.quotas.set(
        OP, tenant_id="acme", pool=gpu_pool, limits={"vcpu": 512, "memoryGiB": 2048, "gpu": 48}
    )
    api.quotas.set(OP, tenant_id="globex", pool=gpu_pool, limits={"vcpu": 256, "gpu": 24})
    made = {"instances": 0, "reservations": 0, "services": 0}
    for i in range(12):
        tenant = "acme" if i % 3 else "globex"
        api.instances.create(OP, tenant_id=tenant, pool_id=gpu_pool, flavor="g1.medium" if i % 2 else "g1.small",
                             name=f"{tenant}-web-{i:02d}")  # fmt: skip
        made["instances"] += 1
    for i in range(6):
        api.instances.create(
            OP, tenant_id="acme", pool_id=gpu_pool, flavor="gpu1.l40s", name=f"acme-train-{i}"
        )
        made["instances"] += 1
    made["reservations"] += _reservations(fleet, gpu_pool)
    made["reservations"] += _burst(fleet)
    made["services"] += _compute(fleet, cpu_pool)
    return made


def _burst(fleet: Fleet) -> int:
    """Document 003's picture: two full 4-GPU nodes of spot work, then a regular request that preempts.

    One node reports GPUs whose NUMA node is unknown, so the NUMA-affine guest there runs
    degraded (GpuNumaUnknown) and shows on the dashboard's degraded view.
    """
    from bcfleet.domain.simulated_inventory import gpu_numa_unknown_host, two_socket_host

    api = fleet.api
    pool = api.pools.create(
        OP, tenant_id=ROOT_TENANT, name="gpu-burst", kind=PoolKind.VPS_HOST, gpu_model="L40S"
    )["id"]
    for tenant in ("acme", "globex"):
        api.pools.offer(OP, tenant_id=ROOT_TENANT, pool=pool, to=tenant)
    for name, inventory in (("burst-01", gpu_numa_unknown_host(seed=101, gpus=4, hostname="burst-01")),
                            ("burst-02", two_socket_host(seed=102, gpus=4, hostname="burst-02"))):  # fmt: skip
        api.hosts.adopt(
            OP,
            tenant_id=ROOT_TENANT,
            pool=pool,
            name=name,
            labels={"bc.dev/cap.instance.placement": "true"},
        )
        api.hosts.report(OP, host=name, inventory=inventory)
    api.flavors.create(OP, tenant_id=ROOT_TENANT, pool_id=pool, name="gpu1.l40s", vcpu=8, memory_gib=32, disk_gib=200,
                       gpus=1, placement={"numaAffine": True, "pinned": True})  # fmt: skip
    api.jobs.call(OP, "vps.hosts")
    for i in range(2):
        api.instances.create(
            OP, tenant_id="acme", pool_id=pool, flavor="gpu1.l40s", name=f"acme-infer-{i}"
        )
    for i in range(2):
        api.reservations.create(OP, tenant_id="globex", pool_id=pool, gpus=3, duration="12h", spot=True,
                                idempotency_key=f"burst-sweep-{i}")  # fmt: skip
    fleet.api.jobs.call(OP, "reservations.lifecycle")
    api.reservations.create(
        OP, tenant_id="acme", pool_id=pool, gpus=3, duration="4h", idempotency_key="eval-run"
    )
    return 3


def _reservations(fleet: Fleet, gpu_pool: str) -> int:
    """Regular and spot reservations, then a regular request that preempts spot work (notice under way)."""
    api = fleet.api
    count = 0
    for i in range(4):
        api.reservations.create(OP, tenant_id="globex", pool_id=gpu_pool, gpus=4, duration="12h", spot=True,
                                idempotency_key=f"sweep-{i:03d}")  # fmt: skip
        count += 1
    api.reservations.create(OP, tenant_id="acme", pool_id=gpu_pool, gpus=2, duration="6h",
                            start=fleet.now() + timedelta(hours=1))  # fmt: skip
    count += 1
    fleet.api.jobs.call(OP, "reservations.lifecycle")  # the spot sweeps become active
    return count


def _compute(fleet: Fleet, cpu_pool: str) -> int:
    """Document 004's settings for acme: spares for Medium and Large, a default, services using sizes."""
    api = fleet.api
    api.settings.compute_set(OP, tenant_id="acme", serverless_pool=cpu_pool, spares={"medium": 1, "large": 2},
                             default_size="large")  # fmt: skip
    from bcfleet.agent.simulate import boot_instances

    fleet.api.jobs.call(OP, "spares")
    boot_instances(fleet, OP, fleet.now() + timedelta(hours=1))
    services: list[ServiceJson] = []
    for workspace, name, size in (
        ("prod", "web", "large"),
        ("prod", "api", "medium"),
        ("staging", "web", None),
    ):
        services.append(
            api.services.create(OP, tenant_id="acme", workspace=workspace, name=name, size=size)
        )
    api.services.deploy(OP, services[0]["id"])
    api.environments.create(OP, tenant_id="acme", name="staging", size="medium")
    api.indexes.create(OP, tenant_id="acme", workspace="prod", name="docs", pod_size="large")
    fleet.api.jobs.call(OP, "spares")
    return len(services)

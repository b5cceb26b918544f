"""Hosted capacity (document 000): rows from inventories, the guarded fit, GPUs, quotas, delete."""

from __future__ import annotations

from typing import Any

import pytest

from bcfleet.errors import NotFoundError, QuotaExceededError
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.placement.quotas import quota_usage
from bcfleet.store.models import Allocation, Instance
from tests.support.builders import OP, flavor, host, hosted_pool, inventory
from tests.support.capacity import create, invariants_ok, pool_with_hosts, rows, small_flavor


def test_allocatable_16_with_ratio_2_takes_32_vcpu_and_not_one_more(fleet: Fleet) -> None:
    pool = pool_with_hosts(fleet, cpus=18, overcommit={"vcpu": 2})  # 18 CPUs − reserve 2 = 16
    vcpu = rows(fleet, "h1")["vcpu"]
    assert (vcpu["allocatable"], vcpu["ratio"], vcpu["capacity"]) == (16, 2.0, 32)
    small_flavor(fleet, pool, "c2", vcpu=2, memory_gib=1, disk_gib=1)
    placed = [create(fleet, pool, "c2") for _ in range(16)]
    assert all(i["state"] == "running" for i in placed)
    assert rows(fleet, "h1")["vcpu"]["allocated"] == 32
    one_more = create(fleet, pool, "c2")
    assert one_more["state"] == "pending"
    assert (
        one_more["conditions"][0]["message"] == "no host fits (1 host): 1 × vcpu 32 of 32 allocated"
    )
    invariants_ok(fleet)


def test_gpus_are_never_overcommitted(fleet: Fleet) -> None:
    pool = pool_with_hosts(
        fleet, gpus=2, overcommit={"vcpu": 100, "memoryGiB": 100, "diskGiB": 100}
    )
    flavor(fleet, pool["id"], "gpu1", vcpu=1, memory_gib=1, disk_gib=1, gpus=1)
    assert [create(fleet, pool, "gpu1")["state"] for _ in range(2)] == ["running", "running"]
    third = create(fleet, pool, "gpu1")
    assert third["state"] == "pending"
    assert "0 of 2 gpu free" in third["conditions"][0]["message"]
    invariants_ok(fleet)


def test_a_host_without_inventory_has_no_rows_and_is_no_candidate(fleet: Fleet) -> None:
    pool = hosted_pool(fleet)
    host(fleet, pool["id"], "silent")
    run_vps_hosts(fleet, fleet.now())
    assert rows(fleet, "silent") == {}
    small_flavor(fleet, pool)
    pending = create(fleet, pool, "g1.small")
    assert pending["conditions"][0]["message"] == "no host fits (1 host): 1 × no inventory"
    warnings = fleet.api.doctor.check(OP)["warnings"]
    assert [(w["code"], w["host"]) for w in warnings] == [("vps.hosts.capacity", "silent")]


def test_rows_are_written_only_when_inventory_or_policy_changes(fleet: Fleet) -> None:
    pool = pool_with_hosts(fleet)
    assert run_vps_hosts(fleet, fleet.now())["rowsWritten"] == 0
    fleet.api.pools.update(OP, tenant_id="root", pool=pool["id"], overcommit={"vcpu": 3})
    assert run_vps_hosts(fleet, fleet.now())["rowsWritten"] == 1
    assert rows(fleet, "h1")["vcpu"]["capacity"] == 48
    fleet.api.hosts.report(
        OP, host="h1", inventory=inventory(cpus=34, memory_gib=72, disk_gib=600, numa_nodes=2)
    )
    assert run_vps_hosts(fleet, fleet.now())["rowsWritten"] == 1
    assert rows(fleet, "h1")["vcpu"]["allocatable"] == 32


def test_a_shrinking_host_never_drops_allocatable_below_what_is_allocated(fleet: Fleet) -> None:
    """Its reserve gives way to the guests it holds; what it reports never does (docs/rules.md)."""
    pool = pool_with_hosts(fleet, cpus=18)
    small_flavor(fleet, pool, "c8", vcpu=8, memory_gib=1, disk_gib=1)
    create(fleet, pool, "c8")
    create(fleet, pool, "c8")
    fleet.api.hosts.report(
        OP, host="h1", inventory=inventory(cpus=17, memory_gib=72, disk_gib=600, numa_nodes=1)
    )
    run_vps_hosts(fleet, fleet.now())
    assert rows(fleet, "h1")["vcpu"] == {
        "resource": "vcpu", "allocatable": 16, "ratio": 1.0, "capacity": 16, "allocated": 16
    }  # fmt: skip
    fleet.api.hosts.report(
        OP, host="h1", inventory=inventory(cpus=6, memory_gib=72, disk_gib=600, numa_nodes=2)
    )
    run_vps_hosts(fleet, fleet.now())
    vcpu = rows(fleet, "h1")["vcpu"]
    assert (vcpu["allocatable"], vcpu["capacity"], vcpu["allocated"]) == (6, 6, 16)
    small_flavor(fleet, pool, "c1", vcpu=1, memory_gib=1, disk_gib=1)
    assert create(fleet, pool, "c1")["state"] == "pending"  # it takes no new guest


def test_placement_flavors_need_the_capability_label(fleet: Fleet) -> None:
    pool = pool_with_hosts(fleet, labels={})
    flavor(
        fleet, pool["id"], "pinned", vcpu=2, memory_gib=2, disk_gib=10, placement={"pinned": True}
    )
    result = create(fleet, pool, "pinned")
    assert (
        result["conditions"][0]["message"] == "no host fits (1 host): 1 × no placement capability"
    )


def test_only_a_flavor_with_a_placement_policy_looks_at_the_capability_label(
    any_fleet: Fleet,
) -> None:
    fleet = any_fleet
    pool = pool_with_hosts(fleet, hosts=3, labels={})
    inv = inventory(cpus=18, memory_gib=72, disk_gib=600, numa_nodes=2)
    host(fleet, pool["id"], "h4", inv, labels={"bc.dev/cap.instance.placement": "true"})
    run_vps_hosts(fleet, fleet.now())
    flavor(
        fleet, pool["id"], "pinned", vcpu=2, memory_gib=2, disk_gib=10, placement={"pinned": True}
    )
    small_flavor(fleet, pool, "plain", vcpu=2, memory_gib=2, disk_gib=10)
    labelled = fleet.api.hosts.show(OP, host="h4")["id"]

    def node_of(made: dict[str, Any]) -> str:
        return str(fleet.api.instances.show(OP, made["id"])["nodeId"])  # root's view

    assert {node_of(create(fleet, pool, "pinned")) for _ in range(3)} == {labelled}
    unlabelled = {fleet.api.hosts.show(OP, host=f"h{i}")["id"] for i in (1, 2, 3)}
    # spread: the three empty hosts first, though they carry no label
    assert {node_of(create(fleet, pool, "plain")) for _ in range(3)} == unlabelled
    invariants_ok(fleet)


def test_a_draining_host_takes_no_new_instances(fleet: Fleet) -> None:
    pool = pool_with_hosts(fleet, hosts=2)
    small_flavor(fleet, pool)
    fleet.api.hosts.set_state(OP, host="h1", draining=True)
    made = [create(fleet, pool, "g1.small") for _ in range(4)]
    nodes = {fleet.api.instances.show(OP, i["id"])["nodeId"] for i in made}  # root's view
    assert nodes == {fleet.api.hosts.show(OP, host="h2")["id"]}


def test_quota_exceeded_changes_nothing(fleet: Fleet) -> None:
    pool = pool_with_hosts(fleet)
    small_flavor(fleet, pool)  # 2 vCPU
    fleet.api.quotas.set(OP, tenant_id="acme", pool=pool["id"], limits={"vcpu": 4})
    create(fleet, pool, "g1.small")
    create(fleet, pool, "g1.small")
    before = rows(fleet, "h1")
    with fleet.read() as session:
        used = quota_usage(session, "acme", pool_id=pool["id"])
    with pytest.raises(QuotaExceededError) as refused:
        create(fleet, pool, "g1.small")
    assert refused.value.details == {"resource": "vcpu", "limit": 4, "used": 4, "requested": 2}
    assert rows(fleet, "h1") == before
    with fleet.read() as session:  # the unlimited rows it charged before vcpu refused: given back
        assert quota_usage(session, "acme", pool_id=pool["id"]) == used
    assert sorted(r for _, _, r in used) == ["diskGiB", "memoryGiB", "vcpu"]
    assert len(fleet.api.instances.list(OP, tenant_id="acme")["items"]) == 2


def test_delete_releases_claims_atoms_and_quota_and_keeps_times(fleet: Fleet) -> None:
    pool = pool_with_hosts(fleet, gpus=1)
    flavor(fleet, pool["id"], "gpu1", vcpu=4, memory_gib=8, disk_gib=40, gpus=1)
    made = create(fleet, pool, "gpu1")
    fleet.clock.advance(minutes=9)  # type: ignore[attr-defined]
    fleet.api.instances.delete(OP, made["id"])
    assert {r: v["allocated"] for r, v in rows(fleet, "h1").items()} == {
        "vcpu": 0,
        "memoryGiB": 0,
        "diskGiB": 0,
    }
    assert fleet.api.quotas.show(OP, tenant_id="acme")["items"][0]["used"] == {
        "vcpu": 0,
        "memoryGiB": 0,
        "diskGiB": 0,
        "gpu": 0,
    }
    assert create(fleet, pool, "gpu1")["state"] == "running", "the GPU atom is free again"
    with fleet.read() as session:
        instance = session.get_one(Instance, made["id"])
        allocation = session.get_one(Allocation, instance.allocation_id)
        assert allocation.ends_at is not None
        assert (allocation.ends_at - allocation.starts_at).total_seconds() == 540
    invariants_ok(fleet)


def test_archived_flavor_is_not_found_and_live_instances_keep_their_shape(fleet: Fleet) -> None:
    pool = pool_with_hosts(fleet)
    small_flavor(fleet, pool)
    made = create(fleet, pool, "g1.small")
    fleet.api.flavors.update(
        OP,
        tenant_id="root",
        pool_id=pool["id"],
        name="g1.small",
        vcpu=4,
        memory_gib=16,
        disk_gib=80,
    )
    assert fleet.api.instances.show(OP, made["id"])["shape"]["vcpu"] == 2
    assert fleet.api.flavors.delete(OP, tenant_id="root", pool_id=pool["id"], name="g1.small")[
        "archived"
    ]
    with pytest.raises(NotFoundError):
        create(fleet, pool, "g1.small")
    assert fleet.api.instances.show(OP, made["id"])["state"] == "running"


def test_spread_puts_instances_on_different_hosts(fleet: Fleet) -> None:
    pool = pool_with_hosts(fleet, hosts=3)
    small_flavor(fleet, pool)
    nodes = {create(fleet, pool, "g1.small")["nodeId"] for _ in range(3)}
    assert len(nodes) == 3


def test_tenants_cannot_see_each_others_instances(fleet: Fleet) -> None:
    from tests.support.builders import token

    pool = pool_with_hosts(fleet)
    fleet.api.tenants.create(OP, "globex")
    fleet.api.pools.offer(OP, tenant_id="root", pool=pool["id"], to="globex")
    small_flavor(fleet, pool)
    theirs = create(fleet, pool, "g1.small", tenant="globex")
    alice = token(fleet, "acme", "alice")
    assert fleet.api.instances.list(alice, tenant_id="acme")["items"] == []
    with pytest.raises(NotFoundError):
        fleet.api.instances.show(alice, theirs["id"], tenant_id="acme")
    with pytest.raises(NotFoundError):
        fleet.api.instances.delete(alice, theirs["id"], tenant_id="acme")


def test_a_host_agent_reports_an_instance_ready(fleet: Fleet) -> None:
    from bcfleet.errors import InvalidInputError

    pool = pool_with_hosts(fleet, hosts=2)
    small_flavor(fleet, pool)
    made = create(fleet, pool, "g1.small")
    node = fleet.api.instances.show(OP, made["id"])["nodeId"]  # root's view: the real node id
    host_name = next(h["name"] for h in fleet.api.hosts.list(OP)["items"] if h["id"] == node)
    other = "h2" if host_name == "h1" else "h1"
    with pytest.raises(NotFoundError):
        fleet.api.instances.report_state(OP, host=other, instance_id=made["id"], state="running")
    with pytest.raises(InvalidInputError):
        fleet.api.instances.report_state(
            OP, host=host_name, instance_id=made["id"], state="exploded"
        )
    running = fleet.api.instances.report_state(
        OP, host=host_name, instance_id=made["id"], state="running"
    )
    assert running.get("readyAt") is None  # a running domain is not yet a ready guest
    ready = fleet.api.instances.report_state(
        OP, host=host_name, instance_id=made["id"], state="ready"
    )
    assert ready["readyAt"] == "2026-11-30T10:00:00Z"

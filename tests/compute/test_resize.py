"""Resize (document 000's four steps): in place, all or nothing, and every UNSUPPORTED case."""

from __future__ import annotations

from typing import Any

import pytest

from bcfleet.errors import (
    CapacityUnavailableError,
    ConflictError,
    FleetError,
    NotFoundError,
    QuotaExceededError,
    UnsupportedError,
)
from bcfleet.fleet import Fleet
from tests.support.builders import OP, flavor
from tests.support.capacity import create, invariants_ok, pool_with_hosts, rows


def stopped(fleet: Fleet, pool: dict[str, Any], name: str) -> dict[str, Any]:
    made = create(fleet, pool, name)
    return fleet.api.instances.stop(OP, made["id"])


@pytest.fixture
def resize_pool(fleet: Fleet) -> dict[str, Any]:
    pool = pool_with_hosts(
        fleet, cpus=18, memory_gib=72, disk_gib=600, gpus=2
    )  # 16 vCPU, 64 GiB, 500 GiB
    for name, vcpu, mem, disk, gpus, placement in (
        ("s", 2, 4, 40, 0, None),
        ("m", 4, 8, 80, 0, None),
        ("xl", 12, 48, 400, 0, None),
        ("huge", 20, 8, 40, 0, None),
        ("g1", 4, 8, 40, 1, None),
        ("g2", 4, 8, 40, 2, None),
        ("pin-s", 2, 4, 40, 0, {"pinned": True}),
        ("pin-m", 4, 8, 40, 0, {"pinned": True}),
    ):
        flavor(
            fleet,
            pool["id"],
            name,
            vcpu=vcpu,
            memory_gib=mem,
            disk_gib=disk,
            gpus=gpus,
            placement=placement,
        )
    return pool


def test_growth_changes_the_allocation_in_place_by_the_difference(
    fleet: Fleet, resize_pool: dict[str, Any]
) -> None:
    made = stopped(fleet, resize_pool, "s")
    resized = fleet.api.instances.resize(OP, made["id"], flavor="m")
    assert resized["shape"]["vcpu"] == 4 and resized["nodeId"] == made["nodeId"]
    assert {r: v["allocated"] for r, v in rows(fleet, "h1").items()} == {
        "vcpu": 4,
        "memoryGiB": 8,
        "diskGiB": 80,
    }
    assert fleet.api.quotas.show(OP, tenant_id="acme")["items"][0]["used"]["vcpu"] == 4
    invariants_ok(fleet)


def test_shrinkage_returns_room_and_refunds_quota(
    fleet: Fleet, resize_pool: dict[str, Any]
) -> None:
    made = stopped(fleet, resize_pool, "m")
    fleet.api.instances.resize(OP, made["id"], flavor="s")
    assert rows(fleet, "h1")["vcpu"]["allocated"] == 2
    assert fleet.api.quotas.show(OP, tenant_id="acme")["items"][0]["used"]["memoryGiB"] == 4
    invariants_ok(fleet)


CASES = [
    pytest.param(
        "s",
        "huge",
        CapacityUnavailableError,
        {"resource": "vcpu"},
        id="growth-that-does-not-fit-is-capacity-unavailable",
    ),
    pytest.param("g1", "g2", UnsupportedError, None, id="different-gpu-count-is-unsupported"),
    pytest.param("s", "pin-m", UnsupportedError, None, id="different-placement-is-unsupported"),
    pytest.param("s", "nope", NotFoundError, None, id="unknown-flavor-is-not-found"),
]


@pytest.mark.parametrize(("start", "target", "error", "details"), CASES)
def test_refused_resizes_change_nothing(
    fleet: Fleet,
    resize_pool: dict[str, Any],
    start: str,
    target: str,
    error: type[FleetError],
    details: dict[str, str] | None,
) -> None:
    made = stopped(fleet, resize_pool, start)
    before_rows, before = rows(fleet, "h1"), fleet.api.instances.show(OP, made["id"])
    with pytest.raises(error) as refused:
        fleet.api.instances.resize(OP, made["id"], flavor=target)
    if details:
        assert refused.value.details == details
    assert rows(fleet, "h1") == before_rows
    assert fleet.api.instances.show(OP, made["id"]) == before
    invariants_ok(fleet)


def test_growth_over_quota_is_quota_exceeded(fleet: Fleet, resize_pool: dict[str, Any]) -> None:
    fleet.api.quotas.set(OP, tenant_id="acme", pool=resize_pool["id"], limits={"vcpu": 3})
    made = stopped(fleet, resize_pool, "s")
    with pytest.raises(QuotaExceededError):
        fleet.api.instances.resize(OP, made["id"], flavor="m")
    assert rows(fleet, "h1")["vcpu"]["allocated"] == 2
    invariants_ok(fleet)


def test_a_running_instance_cannot_be_resized(fleet: Fleet, resize_pool: dict[str, Any]) -> None:
    made = create(fleet, resize_pool, "s")
    with pytest.raises(ConflictError) as refused:
        fleet.api.instances.resize(OP, made["id"], flavor="m")
    assert refused.value.details["state"] == "running"


def test_an_archived_flavor_cannot_be_resized_to(fleet: Fleet, resize_pool: dict[str, Any]) -> None:
    made = stopped(fleet, resize_pool, "s")
    create(fleet, resize_pool, "m")  # referenced, so delete archives it
    fleet.api.flavors.delete(OP, tenant_id="root", pool_id=resize_pool["id"], name="m")
    with pytest.raises(NotFoundError):
        fleet.api.instances.resize(OP, made["id"], flavor="m")


def test_a_same_placement_resize_chooses_the_cpus_again(
    fleet: Fleet, resize_pool: dict[str, Any]
) -> None:
    flavor(
        fleet,
        resize_pool["id"],
        "pin-l",
        vcpu=6,
        memory_gib=8,
        disk_gib=40,
        placement={"pinned": True},
    )
    made = stopped(fleet, resize_pool, "pin-m")
    assert len(made["hostPlacement"]["cpus"]) == 4
    resized = fleet.api.instances.resize(OP, made["id"], flavor="pin-l")
    assert len(resized["hostPlacement"]["cpus"]) == 6
    assert resized["state"] == "stopped"


def test_repeated_same_host_resizes_never_double_count(
    fleet: Fleet, resize_pool: dict[str, Any]
) -> None:
    made = stopped(fleet, resize_pool, "s")
    for target in ("m", "s", "m", "xl", "s"):
        fleet.api.instances.resize(OP, made["id"], flavor=target)
    assert {r: v["allocated"] for r, v in rows(fleet, "h1").items()} == {
        "vcpu": 2,
        "memoryGiB": 4,
        "diskGiB": 40,
    }
    invariants_ok(fleet)

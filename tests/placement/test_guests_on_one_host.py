"""A guest placed on a host sees the guests already there: pinned CPUs are never handed out twice."""

from __future__ import annotations

from sqlmodel import select

from bcfleet.fleet import Fleet
from bcfleet.store.models import Instance
from tests.support.builders import flavor
from tests.support.capacity import create, invariants_ok, pool_with_hosts


def test_pinned_guests_on_one_host_get_disjoint_cpus(any_fleet: Fleet) -> None:
    fleet = any_fleet
    pool = pool_with_hosts(fleet, cpus=18, numa_nodes=2)  # 16 guest CPUs
    flavor(fleet, pool["id"], "pin4", vcpu=4, memory_gib=2, disk_gib=10, placement={"pinned": True})
    placed = [create(fleet, pool, "pin4") for _ in range(4)]
    assert [i["state"] for i in placed] == ["running"] * 4
    with fleet.read() as session:
        placements = [i.host_placement or {} for i in session.exec(select(Instance)).all()]
    cpus = [c for p in placements for c in p["cpus"]]
    assert len(cpus) == 16 and len(set(cpus)) == 16
    assert create(fleet, pool, "pin4")["conditions"]  # the fifth has no CPU left to pin
    invariants_ok(fleet)

"""The demo fleet: realistic, consistent, and showing every state the dashboard has a view for."""

from __future__ import annotations

from bcfleet.api.demo import build_demo
from bcfleet.cli.demo_workloads import populate
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from tests.support.builders import OP


def test_demo_fleet_has_degraded_guests_a_preemption_and_spares(fleet: Fleet) -> None:
    build_demo(fleet, hosts=50)
    run_vps_hosts(fleet, fleet.now())
    pools = {p["name"]: p["id"] for p in fleet.api.pools.list(OP)["items"]}
    populate(fleet, pools["vps-fra"], pools["vps-ams"])
    instances = fleet.api.instances.list(OP)["items"]
    reasons = {c["reason"] for i in instances for c in i["conditions"]}
    assert "GpuNumaUnknown" in reasons
    assert any(i.get("purpose") == "spare" for i in instances)
    reservations = fleet.api.reservations.list(OP)["items"]
    preempted = [
        r for r in reservations if any(c["reason"] == "SpotPreempted" for c in r["conditions"])
    ]
    assert len(preempted) == 1 and preempted[0]["during"]["end"] == "2026-11-30T10:02:00Z"
    assert fleet.api.doctor.check(OP, invariants=True)["invariants"]["ok"]
    assert len(fleet.api.hosts.list(OP)["items"]) == 52

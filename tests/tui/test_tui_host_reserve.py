"""The CPUs a host keeps for itself: hosts.show, the placement and the host drill-down agree, with
the fleet's host_reserve and a pool's hostReserve over it."""

from __future__ import annotations

import pytest

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.clock import FakeClock
from bcfleet.domain.host_reserve import HostReserve
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.tui.format import DASH
from bcfleet.tui.screens.host_detail import HostDetail
from bcfleet.tui.source import LocalSource
from tests.support.builders import flavor, host, inventory
from tests.support.capacity import create, invariants_ok, pool_with_hosts
from tests.support.fleet import open_fleet
from tests.support.tui import make_app, screen_text, settle

pytestmark = pytest.mark.anyio


@pytest.fixture
def reserve4_fleet(db_url: str, clock: FakeClock) -> Fleet:
    """A fleet whose settings keep 4 vCPU per host (fleet.toml's host_reserve.vcpu)."""
    return open_fleet(db_url, clock, host_reserve=HostReserve(vcpu=4))


def test_a_hosts_reserved_cpus_follow_the_fleets_setting_and_the_placement_keeps_off_them(
    reserve4_fleet: Fleet,
) -> None:
    fleet = reserve4_fleet
    try:
        pool = pool_with_hosts(fleet, cpus=18, numa_nodes=2)
        assert fleet.api.hosts.show(OP, host="h1")["reservedCpus"] == [0, 1, 2, 3]
        flavor(fleet, pool["id"], "pin2", vcpu=2, memory_gib=2, disk_gib=10,
               placement={"pinned": True})  # fmt: skip
        placed = [create(fleet, pool, "pin2") for _ in range(7)]
        assert [i["state"] for i in placed] == ["running"] * 7
        pinned = [c for i in placed for c in fleet.api.instances.show(OP, i["id"])
                  ["hostPlacement"]["cpus"]]  # fmt: skip
        assert sorted(pinned) == list(range(4, 18))  # none of the host's four, each once
        assert create(fleet, pool, "pin2")["conditions"]  # nothing left to pin
        invariants_ok(fleet)

        fleet.api.pools.update(OP, tenant_id="root", pool=pool["id"], host_reserve={"vcpu": 1})
        assert fleet.api.hosts.show(OP, host="h1")["reservedCpus"] == [0]
        host(fleet, pool["id"], "h2")  # adopted, no inventory reported yet
        assert fleet.api.hosts.show(OP, host="h2")["reservedCpus"] is None
    finally:
        fleet.close()


def test_isolated_cpus_are_never_the_hosts_own(reserve4_fleet: Fleet) -> None:
    fleet = reserve4_fleet
    try:
        pool = pool_with_hosts(fleet, hosts=0)
        host(fleet, pool["id"], "iso", inventory(cpus=16, isolated=(1, 2)))
        run_vps_hosts(fleet, fleet.now())
        assert fleet.api.hosts.show(OP, host="iso")["reservedCpus"] == [0, 3, 4, 5]
    finally:
        fleet.close()


async def test_the_host_drill_down_shows_the_cpus_the_fleet_keeps(reserve4_fleet: Fleet) -> None:
    fleet = reserve4_fleet
    try:
        pool_with_hosts(fleet, cpus=18, numa_nodes=2)
        node = fleet.api.hosts.show(OP, host="h1")["id"]
        app = make_app(LocalSource(fleet, label="test"))
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            app.screen.table.move_to_key(node)
            await pilot.press("enter")
            await settle(pilot)
            assert isinstance(app.screen, HostDetail)
            text = "\n".join(screen_text(app))
            assert "reserved for the host 0-3 " in text
            numa = [line.split() for line in screen_text(app) if line.strip()[:2] in ("0 ", "1 ")]
            assert any(row[:4] == ["0", "0-8", DASH, "0-3"] for row in numa), numa
    finally:
        fleet.close()

"""The CPUs a host keeps for itself: hosts.show, the placement, the host drill-down, a pool's
effectivePolicy, `fleet pools show` and the console's FleetConfig YAML agree, with the fleet's
host_reserve and a pool's hostReserve over it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.clock import FakeClock
from bcfleet.domain.host_reserve import HostReserve
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.reconcile.apply import make_plan
from bcfleet.reconcile.load import load_fleetconfig_text
from bcfleet.tui.declare import declaration
from bcfleet.tui.format import DASH
from bcfleet.tui.screens.host_detail import HostDetail
from bcfleet.tui.source import LocalSource
from tests.support.builders import flavor, host, inventory
from tests.support.capacity import create, invariants_ok, pool_with_hosts, rows
from tests.support.fleet import open_fleet, run_cli
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


def test_a_pools_yaml_declares_the_reserve_in_force_and_plans_no_change(
    reserve4_fleet: Fleet,
) -> None:
    """fleet.toml keeps 4 vCPU; the pool sets none. The console's YAML says 4 (it said 2), and
    pasted into a FleetConfig it plans no change to the pool or its capacity (it planned 4 -> 2)."""
    fleet = reserve4_fleet
    try:
        pool_with_hosts(fleet, cpus=10, numa_nodes=1)
        (pool,) = LocalSource(fleet, label="test").pools()
        assert pool["policy"]["hostReserve"] == {}
        assert pool["effectivePolicy"] == {
            "overcommit": {"vcpu": 1.0, "memoryGiB": 1.0, "diskGiB": 1.0},
            "hostReserve": {"vcpu": 4, "memoryGiB": 8, "diskGiB": 100},
        }
        item = yaml.safe_load(declaration("pool", pool))["pools"][0]
        assert item["policy"]["hostReserve"] == {"vcpu": 4, "memoryGiB": 8, "diskGiB": 100}

        document = {"apiVersion": "bcfleet.dev/v1", "kind": "FleetConfig",
                    "tenants": [{"id": "root"}, {"id": "acme"}], "pools": [item]}  # fmt: skip
        reserve = fleet.settings.host_reserve
        desired = load_fleetconfig_text(yaml.safe_dump(document), host_reserve=reserve)
        planned = make_plan(fleet, OP, desired).changes
        (change,) = [c for c in planned if c.address == f"pool.{item['name']}"]
        assert change.actions == ("adopt",) and change.changes == () and change.capacity == ()
        assert rows(fleet, "h1")["vcpu"]["allocatable"] == 6  # 10 CPUs less the fleet's 4
    finally:
        fleet.close()


def test_pools_show_says_the_reserve_and_ratios_in_force(
    db_url: str, clock: FakeClock, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fleet.toml").write_text("[host_reserve]\nvcpu = 4\n")
    monkeypatch.setenv("BCFLEET_CONFIG", str(tmp_path / "fleet.toml"))
    monkeypatch.setenv("BCFLEET_NOW", clock.now().isoformat())
    made = run_cli("pools", "create", "--name", "p", "--kind", "vps-host",
                   "--overcommit", "vcpu=2", "--host-reserve-disk-gib", "50", db=db_url)  # fmt: skip
    assert made.exit_code == 0, made.stderr
    shown = run_cli("pools", "show", "p", db=db_url)
    assert "  overcommit:  vcpu=2, memoryGiB=1 (default), diskGiB=1 (default)" in shown.stdout
    assert "  hostReserve: vcpu=4 (default), memoryGiB=8 (default), diskGiB=50" in shown.stdout
    answer = run_cli("--json", "pools", "show", "p", db=db_url).json()
    assert answer["effectivePolicy"]["hostReserve"] == {"vcpu": 4, "memoryGiB": 8, "diskGiB": 50}  # type: ignore[index]

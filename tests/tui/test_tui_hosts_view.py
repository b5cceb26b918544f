"""Hosts: the share used beside allocated/capacity, pool totals, stale inventory flagged, and a
host's guests described from its drill-down; bookings that start later say when."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.clock import parse_time
from bcfleet.domain.inventory_age import STALE_AFTER_SECONDS
from bcfleet.tui.format import plain
from bcfleet.tui.host_rows import AGE, age_cell, host_row, pool_totals
from bcfleet.tui.screens.describe import DescribeScreen
from bcfleet.tui.screens.host_detail import HostDetail, booking_text, gpus_now_and_later
from bcfleet.tui.screens.hosts import HostsView
from tests.support.tui import local_app, settle

pytestmark = pytest.mark.anyio

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def host(name: str, pool: str, reported: datetime, vcpu: tuple[int, int], gpus: tuple[int, int]):
    return {
        "id": f"node_{name}", "name": name, "pool": pool, "state": "ready",
        "inventoryReportedAt": reported.isoformat().replace("+00:00", "Z"),
        "resources": [{"resource": "vcpu", "allocatable": vcpu[1], "ratio": 1.0,
                       "capacity": vcpu[1], "allocated": vcpu[0]}],
        "gpus": {"used": gpus[0], "total": gpus[1]}, "degradedGuests": 0,
    }  # fmt: skip


def test_an_inventory_older_than_five_missed_reports_is_flagged_stale() -> None:
    assert STALE_AFTER_SECONDS == 300
    fresh = host("a", "p", NOW - timedelta(minutes=5), (0, 8), (0, 0))
    old = host("b", "p", NOW - timedelta(minutes=33), (0, 8), (0, 0))
    assert plain(age_cell(fresh, NOW)[0]) == "5m"
    assert plain(age_cell(old, NOW)[0]) == "33m stale"
    assert plain(host_row(old, NOW, narrow=True).cells[AGE]) == "33m stale"


def test_wide_cells_give_the_share_used_narrow_ones_leave_it_to_the_totals() -> None:
    item = host("a", "p", NOW, (30, 128), (0, 0))
    assert plain(host_row(item, NOW).cells[3]) == "30/128 ×1 23%"
    assert plain(host_row(item, NOW, narrow=True).cells[3]) == "30/128"


def test_pool_totals_sum_each_pool_with_the_share_used() -> None:
    hosts = [host("a", "fra", NOW, (30, 100), (2, 4)), host("b", "fra", NOW, (10, 100), (1, 4)),
             host("c", "ams", NOW, (0, 64), (0, 0))]  # fmt: skip
    assert pool_totals(hosts) == [
        "ams: 1 host · vCPU 0/64 0%",
        "fra: 2 hosts · vCPU 40/200 20% · GPU 3/8 37%",
    ]


def test_a_booking_that_starts_later_says_from_when_and_counts_as_later() -> None:
    later = {"reservationId": "rsv_01abcdefghijk", "tenantId": "acme", "spot": False,
             "gpus": ["0000:50:00.0", "0000:90:00.0"], "start": "2026-11-30T10:38:00Z",
             "end": "2026-11-30T12:38:00Z"}  # fmt: skip
    now_on = {**later, "start": "2026-11-30T09:00:00Z", "gpus": ["0000:c8:00.0"]}
    assert booking_text(later, NOW) == "rsv_…fghijk acme regular from 10:38 until 11-30 12:38"
    assert "from" not in booking_text(now_on, NOW)
    assert gpus_now_and_later([later, now_on], NOW) == "GPUs reserved 1 now, 2 later"


def test_a_four_gpu_host_never_says_more_than_four_reserved_now() -> None:
    """A preempted booking still to its deadline and the one that took its GPUs, plus one whose
    end has passed: the host's 4 GPUs are counted once each."""
    four = [f"0000:{n}0:00.0" for n in range(1, 5)]
    victim = {"reservationId": "rsv_01victim0000", "tenantId": "globex", "spot": True,
              "gpus": four, "start": "2026-11-30T08:00:00Z", "end": "2026-11-30T10:02:00Z"}  # fmt: skip
    taker = {**victim, "reservationId": "rsv_01taker00000", "gpus": four[:2],
             "start": "2026-11-30T09:30:00Z", "end": "2026-11-30T12:00:00Z"}  # fmt: skip
    over = {**victim, "reservationId": "rsv_01over000000", "gpus": four[2:],
            "start": "2026-11-30T06:00:00Z", "end": "2026-11-30T07:00:00Z"}  # fmt: skip
    assert datetime(2026, 11, 30, 10, 2, tzinfo=UTC) > NOW
    assert gpus_now_and_later([victim, taker, over], NOW) == "GPUs reserved 4 now, 0 later"


async def test_hosts_show_totals_and_stale_ages_at_80x24(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db)
    names = {h["name"]: h["id"] for h in fleet.api.hosts.list(OP)["items"]}
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        assert isinstance(view, HostsView)
        assert "age" not in view.table.hidden_columns
        now = fleet.now()
        for item in fleet.api.hosts.list(OP)["items"]:
            reported = item["inventoryReportedAt"]
            old = reported and (now - parse_time(reported)).total_seconds() > STALE_AFTER_SECONDS
            age = plain(view.table.all_rows[item["id"]].cells[AGE])
            assert age.endswith(" stale") == bool(old), (item["name"], age)
        assert plain(view.table.all_rows[names["ams-05"]].cells[AGE]) == "2h stale"
        totals = str(view.query_one("#totals").render()).splitlines()
        pools = sorted(p["name"] for p in fleet.api.pools.list(OP)["items"])
        assert [line.split(":")[0] for line in totals] == pools


async def test_enter_on_a_guest_in_the_host_drill_down_describes_the_instance(
    fleet_db: Path,
) -> None:
    app, fleet = local_app(fleet_db)
    names = {h["id"]: h["name"] for h in fleet.api.hosts.list(OP)["items"]}
    busy = next(i for i in fleet.api.instances.list(OP)["items"] if i.get("nodeId"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.screen.table.move_to_key(busy["nodeId"])
        await pilot.press("enter")
        await settle(pilot)
        detail = app.screen
        assert isinstance(detail, HostDetail)
        guests = detail.query_one("#guests")
        guests.focus()
        key = next(k for k, g in detail.guests.items() if g["id"] == busy["id"])
        guests.move_cursor(row=guests.get_row_index(key))
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DescribeScreen)
        assert screen.data["id"] == busy["id"]
        assert screen.data["host"] == names[busy["nodeId"]]
        assert "does not declare an instance" in screen.data["FleetConfig"]


async def test_d_in_the_host_drill_down_describes_the_host_with_its_yaml(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db)
    host = next(h for h in fleet.api.hosts.list(OP)["items"] if h["name"] == "fra-01")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.screen.table.move_to_key(host["id"])
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DescribeScreen)
        declared = yaml.safe_load(screen.data["FleetConfig"])["hosts"][0]
        assert (declared["name"], declared["pool"]) == ("fra-01", host["pool"])
        assert screen.data["tenantControlled"] == "no"
        await pilot.press("q")
        await settle(pilot)
        assert isinstance(app.screen, HostDetail)

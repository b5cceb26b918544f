"""The `:instances` view: state, flavor, host as the caller may see it, the pending reason in a
column, and Enter describing the instance (every field, conditions, events); local and remote."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.fleet import Fleet
from bcfleet.tui.format import plain
from bcfleet.tui.remote_source import RemoteSource
from bcfleet.tui.screens.detail import DetailScreen
from bcfleet.tui.screens.instances import InstancesView, instance_row
from bcfleet.tui.source import LocalSource
from tests.support.tui import make_app, open_test_fleet, settle

pytestmark = pytest.mark.anyio


def with_pending(path: Path) -> tuple[Fleet, str]:
    """The test fleet, plus an instance asking for a GPU on the full gpu-burst pool."""
    fleet = open_test_fleet(path)
    pool = next(p for p in fleet.api.pools.list(OP)["items"] if p["name"] == "gpu-burst")
    made = fleet.api.instances.create(
        OP, tenant_id="acme", pool_id=pool["id"], flavor="gpu1.l40s", name="waiting-1"
    )
    assert made["state"] == "pending"
    return fleet, made["id"]


def instances_app(fleet: Fleet, **options: Any) -> Any:
    return make_app(LocalSource(fleet, label="sqlite:///fleet.db"), **options)


def test_a_row_says_why_it_waits_and_hides_a_host_it_cannot_see() -> None:
    instance = {
        "id": "ins_1",
        "name": "w",
        "tenantId": "acme",
        "state": "pending",
        "flavor": "gpu1.l40s",
        "host": None,
        "nodeId": None,
        "createdAt": "2026-11-30T10:00:00Z",
        "conditions": [
            {"type": "Unschedulable", "status": "True", "message": "no node fits: 2 no GPU"}
        ],
    }
    from datetime import UTC, datetime

    row = instance_row(instance, datetime(2026, 11, 30, 10, 5, tzinfo=UTC))
    cells = [plain(c) for c in row.cells]
    assert cells == ["w", "acme", "pending", "gpu1.l40s", "-", "5m", "no node fits: 2 no GPU"]


async def test_colon_instances_opens_the_view_with_the_pending_reason(fleet_db: Path) -> None:
    fleet, pending = with_pending(fleet_db)
    app = instances_app(fleet)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("colon", *"instances", "enter")
        await settle(pilot)
        view = app.screen
        assert isinstance(view, InstancesView)
        assert len(view.table.all_rows) == len(fleet.api.instances.list(OP)["items"])
        assert view.table.cursor_key == pending  # waiting instances come first
        row = view.table.all_rows[pending]
        why = fleet.api.instances.show(OP, pending)["conditions"][0]["message"]
        assert plain(row.cells[2]) == "pending" and plain(row.cells[6]) == why
        assert "REASON" in view.table.ordered_columns[-1].label.plain
        assert "reason" not in view.table.hidden_columns


async def test_enter_describes_the_instance_with_conditions_and_events(fleet_db: Path) -> None:
    fleet, pending = with_pending(fleet_db)
    app = instances_app(fleet, start="instances")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DetailScreen)
        assert screen.crumbs() == ["Instances", "waiting-1"]
        doc = screen.data
        assert doc["id"] == pending and doc["conditions"][0]["type"] == "Unschedulable"
        assert any("instance.unschedulable" in line for line in doc["events"])
        await pilot.press("q")
        await settle(pilot)
        assert isinstance(app.screen, InstancesView)


async def test_running_instances_show_their_host_by_name(fleet_db: Path) -> None:
    fleet = open_test_fleet(fleet_db)
    app = instances_app(fleet, start="instances")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        names = {h["id"]: h["name"] for h in fleet.api.hosts.list(OP)["items"]}
        for instance in fleet.api.instances.list(OP)["items"]:
            row = app.screen.table.all_rows[instance["id"]]
            assert plain(row.cells[4]) == names[instance["nodeId"]]


def test_remote_instances_match_local(fleet: Fleet, remote: RemoteSource) -> None:  # noqa: F811
    local = LocalSource(fleet)
    assert remote.instances() == local.instances()
    assert all(i["host"] for i in local.instances() if i.get("nodeId"))


async def _open(pilot: Pilot[Any]) -> None:
    await settle(pilot)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
def test_instances_snapshot(snap_compare: Any, fleet_db: Path, size: tuple[int, int]) -> None:
    fleet, _ = with_pending(fleet_db)
    app = instances_app(fleet, start="instances")
    assert snap_compare(app, terminal_size=size, run_before=_open)


async def test_a_large_fleet_shows_the_ones_that_matter_first_and_says_how_many_in_all(
    fleet_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet, pending = with_pending(fleet_db)
    total = len(fleet.api.instances.list(OP)["items"])
    monkeypatch.setattr("bcfleet.tui.instance_pages.PAGE_MAX", 3)  # as if 1,000 of many more
    monkeypatch.setattr("bcfleet.tui.instance_pages.NEAR_END", 0)  # the cursor reads no more
    app = instances_app(fleet, start="instances")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        view = app.screen
        assert isinstance(view, InstancesView)
        assert len(view.table.all_rows) == 3 and pending in view.table.all_rows
        assert view.summary().plain.startswith(f"3 of {total:,} instances")
        assert view.table.cursor_key == pending  # pending ones first, then the newest


def test_remote_instance_pages_match_local(fleet: Fleet, remote: RemoteSource) -> None:
    local = LocalSource(fleet)
    items, total = remote.instances_page(5)
    assert total == local.instances_page(5)[1] == len(local.instances())
    assert [i["id"] for i in items] == [i["id"] for i in local.instances_page(5)[0]]

"""Drill-downs as in k9s (pool → its hosts, tenant → its instances, reservation → its host,
host → its guests), `[` and `]` through the places visited with their filters, and `y` copying
an id."""

from __future__ import annotations

from pathlib import Path

import pytest

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.tui.format import plain
from bcfleet.tui.history import History, Place, exactly
from bcfleet.tui.screens.host_detail import HostDetail
from bcfleet.tui.screens.table import TableView
from tests.support.tui import local_app, settle
from tests.support.tui_actions import said

pytestmark = pytest.mark.anyio


def column(app: object, index: int) -> set[str]:
    screen = app.screen  # type: ignore[attr-defined]
    assert isinstance(screen, TableView)
    table = screen.table
    return {plain(table.all_rows[key].cells[index]) for key in table._shown}


async def test_enter_on_a_pool_shows_its_hosts_and_brackets_walk_back_and_forth(
    fleet_db: Path,
) -> None:
    app, fleet = local_app(fleet_db, start="pools")
    hosts = fleet.api.hosts.list(OP)["items"]
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"vps", "enter")  # the pools' own filter, restored by [
        app.screen.table.move_to_key(fleet.api.pools.show(OP, pool="vps-fra")["id"])
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.TITLE == "Hosts"
        assert app.screen.table.filter_text == exactly("pool", "vps-fra")
        assert column(app, 0) == {h["name"] for h in hosts if h["pool"] == "vps-fra"}
        await pilot.press("left_square_bracket")
        await settle(pilot)
        assert app.screen.TITLE == "Pools" and app.screen.table.filter_text == "vps"
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert app.screen.TITLE == "Hosts"
        assert app.screen.table.filter_text == exactly("pool", "vps-fra")
        await pilot.press("right_square_bracket")  # nothing ahead: said, nothing moves
        assert app.screen.TITLE == "Hosts"
        assert "History: Nothing further forward." in said(app)


async def test_enter_on_a_tenant_shows_its_instances_only(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db, start="tenants")
    mine = {i["name"] for i in fleet.api.instances.list(OP, tenant_id="acme")["items"]}
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.screen.table.move_to_key("acme")
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen.TITLE == "Instances"
        assert column(app, 1) == {"acme"} and column(app, 0) == mine
        await pilot.press("escape")  # Esc clears the drill's filter, as any filter
        assert app.screen.table.filter_text == ""


async def test_enter_on_a_placed_reservation_opens_its_host_by_name(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db, start="reservations")
    placed = next(r for r in fleet.api.reservations.list(OP)["items"] if r.get("nodeIds"))
    host = fleet.api.hosts.show(OP, host=placed["nodeIds"][0])
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.screen.table.move_to_key(placed["id"])
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, HostDetail) and app.screen.host_id == host["id"]
        assert app.screen.crumbs() == ["Hosts", host["name"]]
        await pilot.press("left_square_bracket")  # back to where it was opened from
        await settle(pilot)
        assert app.screen.TITLE == "Reservations"
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert isinstance(app.screen, HostDetail) and app.screen.host_id == host["id"]


async def test_y_copies_the_id_of_the_row_and_of_the_host_shown(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db, start="instances")
    instance = fleet.api.instances.list(OP)["items"][0]
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.screen.table.move_to_key(instance["id"])
        await pilot.press("y")
        assert app.clipboard == instance["id"]
        assert f"Copy: copied {instance['id']}" in said(app)
        await pilot.press("1")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, HostDetail)
        await pilot.press("y")
        assert app.clipboard == app.screen.host_id


def test_history_drops_the_places_ahead_when_a_new_one_is_visited() -> None:
    history = History()
    for view in ("hosts", "pools", "tenants"):
        history.visit(Place(view))
    history.note_filter("acme")
    assert history.step(-1) == Place("pools")
    history.visit(Place("events"))
    assert history.step(1) is None
    assert history.step(-1) == Place("pools")
    assert history.step(-1) == Place("hosts")
    assert history.step(-1) is None
    assert [p.view for p in history.places] == ["hosts", "pools", "events"]


@pytest.mark.parametrize(
    ("value", "matches", "misses"),
    [
        pytest.param("vps-fra", "vps-fra", "vps-fra-2", id="a-longer-name-is-not-it"),
        pytest.param("g1.small", "g1.small", "g1xsmall", id="a-dot-is-a-dot"),
    ],
)
def test_an_exact_term_matches_the_whole_cell_only(value: str, matches: str, misses: str) -> None:
    import re

    pattern = exactly("pool", value).split(":~", 1)[1]
    assert re.search(pattern, matches) and not re.search(pattern, misses)

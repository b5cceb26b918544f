"""Keys people bring from vi, less and k9s: j/k/g/G, q back from a drill-down, 1 and :hosts open
the list, ! inverts a filter, and an unknown `column:value` filter says so."""

from __future__ import annotations

from pathlib import Path

import pytest

from bcfleet.tui.screens.base import DrillDown
from bcfleet.tui.screens.host_detail import HostDetail
from bcfleet.tui.screens.hosts import HostsView
from bcfleet.tui.screens.reservations import ReservationsView
from bcfleet.tui.widgets.keyed_table import Column, Row, matches, parse_filter, unknown_columns
from tests.support.tui import local_app, settle

pytestmark = pytest.mark.anyio


COLUMNS = (Column("name", "NAME"), Column("state", "STATE"))
ROWS = [Row("1", ("fra-01", "ready")), Row("2", ("fra-07", "draining")), Row("3", ("ams", "ready"))]


def shown(text: str) -> set[str]:
    return {str(r.cells[0]) for r in ROWS if matches(r, parse_filter(text, COLUMNS))}


def test_a_bang_inverts_a_term() -> None:
    assert shown("!state:ready") == {"fra-07"}
    assert shown("fra !draining") == {"fra-01"}
    assert shown("!") == {"fra-01", "fra-07", "ams"}  # a lone ! is no term


def test_an_unknown_column_is_named_only_when_nothing_matches() -> None:
    assert unknown_columns("pool:fra", COLUMNS, ROWS) == ["pool"]
    assert unknown_columns("state:ready", COLUMNS, ROWS) == []
    assert unknown_columns("10:02", COLUMNS, ROWS) == []  # a time, not a column
    assert unknown_columns("!pool:fra", COLUMNS, ROWS) == ["pool"]


async def test_j_k_g_and_shift_g_move_the_cursor(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.table
        assert table.cursor_row == 0
        await pilot.press("j", "j", "j")
        assert table.cursor_row == 3
        await pilot.press("k")
        assert table.cursor_row == 2
        await pilot.press("G")
        assert table.cursor_row == table.row_count - 1 > 20
        await pilot.press("g")
        assert table.cursor_row == 0


async def test_q_in_a_drill_down_goes_back_and_q_on_a_view_quits(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, HostDetail)
        await pilot.press("q")
        await settle(pilot)
        assert isinstance(app.screen, HostsView)
        assert app.is_running
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running


@pytest.mark.parametrize("keys", [["1"], ["colon", *"hosts", "enter"]], ids=["1", ":hosts"])
async def test_1_and_hosts_open_the_list_not_the_last_drill_down(
    fleet_db: Path, keys: list[str]
) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # into a host
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        assert isinstance(app.screen, ReservationsView)
        await pilot.press(*keys)
        await settle(pilot)
        assert isinstance(app.screen, HostsView)
        await pilot.press("1")  # and from a drill-down of the hosts themselves
        await settle(pilot)
        assert isinstance(app.screen, HostsView)


async def test_q_leaves_a_reservations_detail_too(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db, start="reservations")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("enter")  # the first row's host, or the row described
        await settle(pilot)
        assert isinstance(app.screen, DrillDown)
        await pilot.press("q")
        await settle(pilot)
        assert isinstance(app.screen, ReservationsView)


async def test_an_inverted_filter_hides_what_it_names(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db, start="reservations")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.table
        total = table.row_count
        await pilot.press("slash", *"state:active", "enter")
        active = table.row_count
        await pilot.press("escape")
        await pilot.press("slash", *"!state:active", "enter")
        assert table.row_count == total - active > 0
        assert all("active" not in str(table.get_row_at(i)[5]) for i in range(table.row_count))


async def test_an_unknown_column_filter_says_so(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db, start="reservations")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"flavor:gpu", "enter")
        await pilot.pause()
        assert app.screen.table.row_count == 0
        assert "no column 'flavor'" in app.screen.summary().plain
        said = [n.message for n in app._notifications]
        assert any("No column 'flavor' in Reservations. Columns: id, tenant" in m for m in said)
        await pilot.press("escape")  # clears the filter, and the complaint with it
        assert "no column" not in app.screen.summary().plain

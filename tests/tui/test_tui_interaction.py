"""Driving the dashboard as an operator does: filter, sort, drill down, switch views, read-only, refresh."""

from __future__ import annotations

import gc
import threading
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.tui.screens.base import ViewScreen
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.screens.host_detail import HostDetail
from bcfleet.tui.screens.hosts import HostsView
from bcfleet.tui.source import LocalSource, NotAvailable
from bcfleet.tui.widgets.bars import StatusLine
from bcfleet.tui.widgets.keyed_table import KeyedTable
from tests.support.tui import local_app, make_app, open_test_fleet, settle

pytestmark = pytest.mark.anyio


def table(app: Any) -> KeyedTable:
    return app.screen.query_one(KeyedTable)


def names(app: Any) -> list[str]:
    """The NAME column as shown, top to bottom."""
    t = table(app)
    return [str(t.get_row_at(i)[0]) for i in range(t.row_count)]


def status(app: Any) -> str:
    line = app.screen.query_one(StatusLine)
    summary, freshness = line._last
    return f"{summary} | {freshness.text().plain}"


async def test_slash_filters_by_words_and_by_column(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"state:draining", "enter")
        assert names(app) == ["fra-07"]
        assert status(app).startswith("1 of 52 hosts · filter state:draining")
        await pilot.press("escape")  # clears the filter
        assert len(names(app)) == 52
        await pilot.press("slash", *"burst", "enter")
        assert names(app) == ["burst-01", "burst-02"]


async def test_the_mouse_sorts_by_a_header_moves_the_cursor_and_opens_a_row(
    fleet_db: Path,
) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        t = table(app)
        await pilot.click(KeyedTable, offset=(2, 0))  # the NAME header
        assert (t.sort_index, t.sort_reverse) == (0, False)
        await pilot.click(KeyedTable, offset=(2, 0))
        assert (t.sort_index, t.sort_reverse) == (0, True)
        top = int(t.scroll_y)  # the cursor stayed on its row, now the last one
        await pilot.click(KeyedTable, offset=(2, 3))  # the third row on screen
        assert t.cursor_row == top + 2
        key = t.cursor_key
        await pilot.click(KeyedTable, offset=(2, 3))  # again: open it
        await settle(pilot)
        assert isinstance(app.screen, HostDetail)
        assert app.screen.host_id == key


async def test_escape_in_the_filter_prompt_drops_the_filter(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"ams")
        assert len(names(app)) == 10
        await pilot.press("escape")
        assert len(names(app)) == 52
        assert table(app).has_focus


async def test_sort_by_any_column_and_reverse(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("s", "s", "s", "s")  # NAME, POOL, STATE, VCPU
        assert table(app).sort_index == 3
        await pilot.press("S")  # fullest first
        assert names(app)[:2] == ["burst-01", "burst-02"]  # 8 of 62 vCPU, no overcommit
        assert "sort VCPU ▼" in status(app)
        assert str(table(app).columns[table(app).ordered_columns[3].key].label) == "VCPU ▼"


async def test_enter_opens_the_host_and_escape_comes_back_to_the_same_row(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"fra-01", "enter", "enter")
        await settle(pilot)
        assert isinstance(app.screen, HostDetail)
        detail = app.screen
        assert detail.crumbs() == ["Hosts", "fra-01"]
        guests = detail.query_one("#guests")
        assert guests.get_row_at(0)[0] == "acme-train-1"
        assert "pinned" in guests.get_row_at(0)[2]
        await pilot.press("escape")
        assert isinstance(app.screen, HostsView)
        assert table(app).cursor_key == detail.host_id


async def test_refresh_keeps_the_cursor_on_its_row_when_rows_appear_above(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        t = table(app)
        t.move_cursor(row=20)
        key, index = t.cursor_key, t.cursor_row
        pool = fleet.api.pools.show(OP, pool="vps-ams")["id"]
        fleet.api.hosts.adopt(OP, tenant_id="root", pool=pool, name="aaa-00")
        await pilot.press("r")
        await settle(pilot)
        assert names(app)[0] == "aaa-00"
        assert t.cursor_key == key
        assert t.cursor_row == index + 1


async def test_colon_switches_view_with_completion_and_number_keys_too(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("colon", "e", "v", "tab", "enter")
        await settle(pilot)
        assert app.current_mode == "events"
        await pilot.press("2")
        await settle(pilot)
        assert app.current_mode == "degraded"
        assert [str(table(app).get_row_at(i)[4]) for i in range(table(app).row_count)] == [
            "GpuNumaUnknown"
        ]
        await pilot.press("colon", *"nonsense", "enter")
        assert app.current_mode == "degraded"


class WithoutJobs(LocalSource):
    """A source whose fleet has no jobs API (an HTTP server of an older build, say)."""

    def jobs(self) -> list[dict[str, Any]]:
        raise NotAvailable("Jobs")


async def test_views_without_an_api_say_so(fleet_db: Path) -> None:
    app = make_app(WithoutJobs(open_test_fleet(fleet_db), label="x"), start="jobs")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        notice = app.screen.query_one("#notice")
        assert notice.display
        assert "Jobs: not available in this build." in str(notice.render())
        assert "not available in this build" in status(app)


async def test_drain_asks_first_and_read_only_has_no_drain(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"fra-01", "enter", "c")
        await settle(pilot)
        assert isinstance(app.screen, Confirm)
        await pilot.press("y")
        await settle(pilot)
        assert fleet.api.hosts.show(OP, host="fra-01")["state"] == "draining"
        assert "draining" in str(table(app).get_row_at(0)[2])

    app, fleet = local_app(fleet_db, read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"fra-02", "enter", "c")
        await settle(pilot)
        assert isinstance(app.screen, HostsView)
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert not [c for c in commands if "rain" in c]
        assert fleet.api.hosts.show(OP, host="fra-02")["state"] == "ready"


async def test_the_palette_reaches_every_view_and_the_actions_of_this_one(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for view in ("Hosts", "Degraded placements", "Reservations", "Preemption preview",
                     "Compute settings", "Usage and credits", "Events", "Jobs"):  # fmt: skip
            assert f"View: {view}" in titles
        assert {
            "Refresh",
            "Filter",
            "Sort by VCPU",
            "Open host ams-05",
            "Drain host ams-05",
        } <= set(titles)


class FlakySource(LocalSource):
    """The fleet, until the database goes away."""

    broken = False

    def revision(self) -> int | None:
        if self.broken:
            raise OSError("database is locked")
        return super().revision()


async def test_a_failing_source_shows_disconnected_and_keeps_the_rows(fleet_db: Path) -> None:
    source = FlakySource(open_test_fleet(fleet_db), label="sqlite:///fleet.db")
    app = make_app(source)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        source.broken = True
        await pilot.press("r")
        await settle(pilot)
        assert len(names(app)) == 52
        assert "DISCONNECTED" in status(app)
        assert "database is locked" in status(app)
        assert "updated 10:00:40" in status(app)
        source.broken = False
        await pilot.press("r")
        await settle(pilot)
        assert "DISCONNECTED" not in status(app)


async def test_an_unchanged_fleet_is_not_fetched_again(fleet_db: Path) -> None:
    fetched: list[str] = []

    class Counting(LocalSource):
        def hosts(self) -> list[dict[str, Any]]:
            fetched.append("hosts")
            return super().hosts()

    app = make_app(Counting(open_test_fleet(fleet_db), label="x"))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ViewScreen)
        screen.tick()
        await settle(pilot)
        assert fetched == ["hosts"]
        await pilot.press("r")  # r always fetches
        await settle(pilot)
        assert fetched == ["hosts", "hosts"]


async def test_a_refresh_asked_for_while_a_fetch_runs_fetches_again_after_it(
    fleet_db: Path,
) -> None:
    """An action that ends while a fetch (say, on coming back from its confirm) still runs must
    not lose its refresh: that fetch may have read before the change."""
    held = threading.Event()
    release = threading.Event()

    class Held(LocalSource):
        def hosts(self) -> list[dict[str, Any]]:
            rows = super().hosts()
            if held.is_set():
                release.wait(30)
            return rows

    fleet = open_test_fleet(fleet_db)
    app = make_app(Held(fleet, label="x"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"fra-01", "enter")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ViewScreen)
        held.set()
        screen.request_refresh(force=True)  # reads the hosts, then waits
        await pilot.pause(0.1)
        fleet.api.hosts.set_state(OP, host="fra-01", draining=True)
        held.clear()
        screen.request_refresh(force=True)  # asked for while the first one still runs
        release.set()
        await settle(pilot)
        assert "draining" in str(table(app).get_row_at(0)[2])


async def test_refreshes_that_stop_arriving_show_stale(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db, refresh_seconds=2.0)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, ViewScreen)
        assert "STALE" not in status(app)
        screen._last_ok -= 60  # the last good refresh was a minute ago
        screen._check_stale()
        assert "STALE" in status(app)
        assert "updated 10:00:40" in status(app)


async def test_escape_leaves_a_form_field_so_number_keys_switch_views(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db, start="preview")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.screen.query_one("#gpus").focus()
        await pilot.press("2")  # typed into the field
        assert app.current_mode == "preview"
        await pilot.press("escape", "1")
        await settle(pilot)
        assert app.current_mode == "hosts"


async def test_the_keys_panel_lists_this_views_keys_and_read_only_drops_drain(
    fleet_db: Path,
) -> None:
    for read_only, drain in ((False, True), (True, False)):
        app, _ = local_app(fleet_db, read_only=read_only)
        async with app.run_test(size=(120, 40)) as pilot:
            await settle(pilot)
            await pilot.press("question_mark")
            await pilot.pause()
            console = Console(width=100)
            with console.capture() as captured:
                console.print(app.screen.keys)
            shown = captured.get()
            assert "Filter" in shown and "Sort" in shown
            assert ("Drain" in shown and "Undrain" in shown) is drain
            await pilot.press("escape")
            assert isinstance(app.screen, HostsView)


async def test_a_refresh_rebuilds_only_the_rows_of_hosts_that_changed(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        before = dict(table(app).all_rows)
        fleet.api.hosts.set_state(OP, host="fra-01", draining=True)
        await pilot.press("r")
        await settle(pilot)
        after = table(app).all_rows
        changed = [key for key, row in after.items() if row is not before[key]]
        assert [str(after[key].cells[0]) for key in changed] == ["fra-01"]
        assert str(table(app).get_row(changed[0])[2]) == "draining"  # and the table shows it


async def test_a_clock_tick_moves_only_the_ages_that_change(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, HostsView)
        before = dict(table(app).all_rows)
        ages = {str(r.cells[0]): str(r.cells[-1]) for r in before.values()}
        # fra-03 reported at T0 + 30s; fra-01 two hours ago, which is stale
        assert (ages["fra-03"], ages["fra-01"]) == ("10s", "2h stale")
        fleet.clock.advance(seconds=60)  # type: ignore[attr-defined]
        screen.request_refresh()  # what the timer asks: nothing changed, so only the clock moved
        await settle(pilot)
        after = table(app).all_rows
        moved = {str(r.cells[0]): str(r.cells[-1]) for k, r in after.items() if r is not before[k]}
        assert moved == {"fra-03": "1m"}


async def test_a_refresh_draws_again_only_the_cells_that_changed(
    fleet_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, fleet = local_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        drawn: list[int] = []
        original = KeyedTable.render_row

        def counted(self: Any, row_index: int) -> Any:
            drawn.append(row_index)
            return original(self, row_index)

        monkeypatch.setattr(KeyedTable, "render_row", counted)
        fleet.api.hosts.set_state(OP, host="fra-01", draining=True)
        await pilot.press("r")
        await settle(pilot)
        assert "fra-01" in names(app)
        fra_01 = names(app).index("fra-01")
        assert drawn and set(drawn) <= {-1, fra_01}  # the header and the row that changed


async def test_a_timer_tick_that_finds_nothing_changed_draws_nothing(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        line = app.screen.query_one(StatusLine)
        updates: list[Any] = []
        original = line.update
        line.update = lambda *a, **k: (updates.append(a), original(*a, **k))[1]  # type: ignore[method-assign]
        screen = app.screen
        assert isinstance(screen, ViewScreen)
        screen.request_refresh()  # what the timer asks
        await settle(pilot)
        assert updates == []
        await pilot.press("r")  # asked for: says refreshing…, then updated
        await settle(pilot)
        assert len(updates) == 2


async def test_the_command_line_dashboard_freezes_its_heap_after_the_first_paint(
    fleet_db: Path,
) -> None:
    app, _ = local_app(fleet_db, freeze_heap=True)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await settle(pilot)
            await pilot.pause()
            assert app._frozen_after_load and gc.get_freeze_count() > 0
            assert len(names(app)) == 52
    finally:
        gc.unfreeze()  # the rest of this test process collects as usual


def test_a_refresh_tick_with_no_screen_on_the_stack_does_nothing(fleet_db: Path) -> None:
    """The timer can fire while the app exits (or before its first screen): no ScreenStackError."""
    app, fleet = local_app(fleet_db)
    try:
        assert app.screen_stack == []
        app._tick()
    finally:
        fleet.close()


async def test_hosts_sort_naturally_by_default_and_by_a_column(fleet_db: Path) -> None:
    """ams-9 < ams-10 < ams-99 < ams-100, in the view's own order and when sorted by NAME."""
    app, fleet = local_app(fleet_db)
    pool = fleet.api.pools.show(OP, pool="vps-ams")["id"]
    for name in ("zz-100", "zz-10", "zz-99", "zz-9"):
        fleet.api.hosts.adopt(OP, tenant_id="root", pool=pool, name=name)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert [n for n in names(app) if n.startswith("zz-")] == [
            "zz-9",
            "zz-10",
            "zz-99",
            "zz-100",
        ]
        await pilot.press("s", "S")  # NAME, then reversed
        assert [n for n in names(app) if n.startswith("zz-")] == [
            "zz-100",
            "zz-99",
            "zz-10",
            "zz-9",
        ]


@pytest.mark.parametrize("view", ["compute", "preview"])
async def test_the_keys_panel_of_a_form_lists_no_row_keys(fleet_db: Path, view: str) -> None:
    app, _ = local_app(fleet_db, start=view, tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        console = Console(width=100)
        with console.capture() as captured:
            console.print(app.screen.keys)
        shown = captured.get()
        assert "Next field, previous field" in shown and "Run the form" in shown
        assert not any(word in shown for word in ("Filter", "First row", "drill down", "~re"))

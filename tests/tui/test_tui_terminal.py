"""The dashboard at 80×24 and after a resize: the columns that matter stay, the rest give way."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Select

from bcfleet.tui.widgets.fit import Fit, fit_columns
from bcfleet.tui.widgets.keyed_table import KeyedTable
from tests.support.tui import flip, local_app, screen_text, settle

pytestmark = pytest.mark.anyio


def header(app: Any) -> list[str]:
    """The table's column labels as drawn on screen (line 2, under the title bar)."""
    return screen_text(app)[1].split()


# -- the pure fitting ----------------------------------------------------------------------------


def test_everything_fits_when_there_is_room() -> None:
    assert fit_columns([Fit(4), Fit(6, give_way=1)], available=20, padding=1) == [4, 6]


def test_the_highest_give_way_goes_first_then_the_next() -> None:
    columns = [Fit(10, give_way=1), Fit(10, give_way=2), Fit(10)]
    assert fit_columns(columns, available=24, padding=1) == [10, None, 10]
    assert fit_columns(columns, available=12, padding=1) == [None, None, 10]


def test_a_croppable_column_is_cropped_before_anything_is_hidden() -> None:
    columns = [Fit(10, give_way=1), Fit(40, crop_to=12)]
    assert fit_columns(columns, available=30, padding=1) == [10, 16]
    assert fit_columns(columns, available=20, padding=1) == [None, 18]


def test_columns_that_never_give_way_stay_even_when_too_wide() -> None:
    assert fit_columns([Fit(50), Fit(50)], available=40, padding=1) == [50, 50]


# -- the views at 80×24 --------------------------------------------------------------------------


async def test_reservations_keep_state_when_during_and_reason_at_80(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db, start="reservations")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        labels = header(app)
        for label in ("STATE", "WHEN", "DURING", "REASON"):
            assert label in labels
        assert "KIND" not in labels
        row = next(line for line in screen_text(app) if "deadline in 1m 20s" in line)
        assert "08:00 → 10:02" in row
        assert row.rstrip().endswith("…")  # the reason is cropped, and says so
        await pilot.resize_terminal(120, 40)
        await settle(pilot)
        assert {"ID", "TENANT", "KIND"} <= set(header(app))
        assert app.screen.query_one(KeyedTable).hidden_columns == []


async def test_events_keep_their_subject_by_name_and_their_data_at_80(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db, start="events")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert header(app) == ["SEQ", "AT", "TYPE", "SUBJECT", "DATA"]
        row = next(line for line in screen_text(app) if "host.draining" in line)
        assert row.split()[4:6] == ["fra-07", "name=fra-07"]


async def test_hosts_resized_from_120_to_80_reflow_and_keep_age(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        wide = header(app)
        await pilot.resize_terminal(80, 24)
        await settle(pilot)
        narrow = screen_text(app)
        assert narrow[1].split() == ["NAME", "POOL", "STATE", "VCPU", "MEM", "GiB", "GPU", "DEGR",
                                     "AGE"]  # fmt: skip
        assert "DISK" in wide
        row = next(line for line in narrow if line.startswith(" ams-05"))
        assert row.split()[-2:] == ["2h", "stale"]  # the AGE cell is on screen, flagged stale
        assert app.screen.query_one(KeyedTable).hidden_columns == ["disk"]
        await pilot.resize_terminal(120, 40)
        await settle(pilot)
        assert header(app) == wide  # and back again


async def test_the_compute_warnings_scroll_into_sight_at_80x24(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db, start="compute", tenant="acme")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        app.screen.query_one("#default", Select).value = "medium"
        await pilot.pause()
        await flip(pilot, "large")
        await pilot.press("ctrl+s")
        await settle(pilot)
        body, warnings = app.screen.query_one("#compute"), app.screen.query_one("#warnings")
        assert body.max_scroll_y > 0  # it did not fit: the form scrolls
        assert body.region.contains_region(warnings.region)
        text = "\n".join(screen_text(app))
        assert "In use: Size Large is in use" in text
        assert "move them to another size." in text


async def _resized(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    await pilot.resize_terminal(80, 24)
    await settle(pilot)


@pytest.mark.parametrize("view", ["hosts", "reservations", "events"])
def test_view_resized_from_120x40_to_80x24(snap_compare: Any, fleet_db: Path, view: str) -> None:
    app, _ = local_app(fleet_db, start=view)
    assert snap_compare(app, terminal_size=(120, 40), run_before=_resized)


def test_a_name_crops_only_after_the_columns_that_give_way_are_hidden() -> None:
    """NAME 60 wide, POOL gives way, STATE and VCPU may not: at 40 cells POOL goes, NAME
    crops (down to 14 at 36 cells); at 100 every column is whole."""
    columns = [Fit(60, name_to=14), Fit(8, give_way=1), Fit(8), Fit(8)]
    assert fit_columns(columns, 36, 1) == [14, None, 8, 8]
    assert fit_columns(columns, 60, 1) == [38, None, 8, 8]
    assert fit_columns(columns, 100, 1) == [60, 8, 8, 8]


@pytest.mark.parametrize("view", ["hosts", "instances", "reservations", "services", "quotas"])
async def test_the_footer_keeps_keys_and_quit_at_80(fleet_db: Path, view: str) -> None:
    app, _ = local_app(fleet_db, start=view)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        footer = screen_text(app)[-1]
        assert "? Keys" in footer and "q Quit" in footer, footer

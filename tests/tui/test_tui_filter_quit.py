"""The regex filter (`~re`, `column:~re`, `!~re`; a bad one says so and changes no rows), the
action values read before a confirm, and Ctrl+C: it quits, asking first about unsaved edits."""

from __future__ import annotations

from pathlib import Path

import pytest

from bcfleet.errors import InvalidInputError
from bcfleet.tui.actions import read_limits
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.screens.hosts import HostsView
from bcfleet.tui.widgets.bars import StatusLine
from bcfleet.tui.widgets.keyed_table import Column, FilterError, Row, matches, parse_filter
from tests.support.tui import local_app, settle
from tests.support.tui_actions import said

pytestmark = pytest.mark.anyio

COLUMNS = (Column("name", "NAME"), Column("state", "STATE"))
ROWS = [
    Row(str(i), (name, state))
    for i, (name, state) in enumerate(
        [("fra-01", "ready"), ("fra-03", "ready"), ("fra-04", "draining"), ("fra-13", "ready"),
         ("ams-02", "ready"), ("FRA-02", "ready")]
    )
]  # fmt: skip


def shown(text: str) -> list[str]:
    return [str(r.cells[0]) for r in ROWS if matches(r, parse_filter(text, COLUMNS))]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        pytest.param("~^fra-0[1-3]$", ["fra-01", "fra-03", "FRA-02"], id="anchored-any-case"),
        pytest.param("name:~^ams", ["ams-02"], id="one-column"),
        pytest.param("state:~^ready$ ~3$", ["fra-03", "fra-13"], id="with-another-term"),
        pytest.param("!~^fra", ["ams-02"], id="inverted"),
        pytest.param(r"~\d{2}$ !state:ready", ["fra-04"], id="escapes-keep-their-case"),
        pytest.param(
            "~",
            ["fra-01", "fra-03", "fra-04", "fra-13", "ams-02", "FRA-02"],
            id="a-lone-tilde-is-no-term",
        ),  # fmt: skip
    ],
)
def test_a_tilde_starts_a_regular_expression(text: str, names: list[str]) -> None:
    assert shown(text) == names


def test_a_bad_regex_raises_a_filter_error_that_says_why() -> None:
    with pytest.raises(FilterError, match=r"bad regex '\^fra-0\[1-': unterminated character set"):
        parse_filter("~^fra-0[1-", COLUMNS)


async def test_a_bad_regex_is_named_in_the_status_line_and_changes_no_rows(
    fleet_db: Path,
) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.table
        await pilot.press("slash", *"~^fra-0[1-3]$", "enter")
        assert sorted(table.get_row_at(i)[0] for i in range(table.row_count)) == [
            "fra-01", "fra-02", "fra-03"
        ]  # fmt: skip
        await pilot.press("slash", "ctrl+u", *"~fra-0[", "enter")
        await pilot.pause()
        summary = str(app.screen.query_one(StatusLine)._last[0])
        assert "bad regex 'fra-0[': unterminated character set" in summary
        assert table.shown_count == len(table.all_rows)  # the bad term filters nothing
        assert any("Filter: bad regex" in s for s in said(app))


def test_limits_are_read_as_name_equals_a_whole_number_or_none() -> None:
    assert read_limits("gpu=8 vcpu=none, memoryGiB=-") == {
        "gpu": 8, "vcpu": None, "memoryGiB": None
    }  # fmt: skip
    for bad, says in (("gpu", "not name=value"), ("gpu=lots", "not a whole number"), ("", "no")):
        with pytest.raises(InvalidInputError, match=says):
            read_limits(bad)


async def test_ctrl_c_quits(fleet_db: Path) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("slash")  # even from the filter prompt
        await pilot.press("ctrl+c")
        await pilot.pause()
    assert app.return_code == 0 and not app.is_running


async def test_ctrl_c_and_q_ask_first_when_a_view_has_unsaved_edits(
    fleet_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(HostsView, "has_unsaved_edits", lambda self: True)
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("3")  # another view on top: the hosts view still holds its edits
        await settle(pilot)
        for key in ("q", "ctrl+c"):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, Confirm)
            assert app.screen.question == "Quit? Unsaved changes in Hosts are lost."
            await pilot.press("n")
            await pilot.pause()
            assert app.is_running
        await pilot.press("ctrl+c", "ctrl+c")  # asked, then Ctrl+C again quits
        await pilot.pause()
    assert not app.is_running

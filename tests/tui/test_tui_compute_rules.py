"""The Compute tab's rules of document 004 on the demo's acme: the default always says locked,
unsaved edits are never dropped without asking, spares fields take only what is meant for them,
and the headings keep the document's words at 80 columns."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Select, Static

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.fleet import Fleet
from bcfleet.tui.screens.base import ViewScreen
from bcfleet.tui.screens.compute import ComputeView
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.source import LocalSource
from tests.support.tui import build_fleet, make_app, open_test_fleet, screen_text, settle

pytestmark = pytest.mark.anyio


@pytest.fixture
def fleet(tmp_path: Path) -> Fleet:
    return open_test_fleet(build_fleet(tmp_path))


def compute_app(fleet: Fleet) -> Any:
    return make_app(LocalSource(fleet, label="x"), start="compute", tenant="acme")


def text(app: Any, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def line_of(app: Any, size_label: str) -> str:
    """The screen line of a size's row (its label, switch, spares and credits)."""
    return next(line for line in screen_text(app) if line.split()[:1] == [size_label])


def stored_spares(fleet: Fleet, size: str) -> int:
    return int(fleet.api.settings.compute_show(OP, tenant_id="acme")["sizes"][size]["spares"])


async def choose_default(pilot: Any, size: str) -> None:
    pilot.app.screen.query_one("#default", Select).value = size
    await pilot.pause()


async def edit_small_spares(pilot: Any, digits: str = "3") -> Input:
    field: Input = pilot.app.screen.query_one("#spares-small", Input)
    field.focus()
    await pilot.pause()
    await pilot.press(*digits)
    await pilot.pause()
    return field


# -- the default's switch ------------------------------------------------------------------------


async def test_the_default_row_says_locked_after_the_default_moves_back_and_forth(
    fleet: Fleet,
) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "locked" in line_of(app, "Large")
        await choose_default(pilot, "medium")
        assert "● on  locked" in line_of(app, "Medium")
        assert "locked" not in line_of(app, "Large")
        await choose_default(pilot, "large")
        await choose_default(pilot, "medium")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "● on  locked" in line_of(app, "Medium")
        await pilot.press("escape", "r")
        await settle(pilot)
        assert "● on  locked" in line_of(app, "Medium")
        assert "locked" not in line_of(app, "Large")


# -- the headings --------------------------------------------------------------------------------


async def test_the_headings_keep_document_004s_words_at_80_columns(fleet: Fleet) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        lines = screen_text(app)
        top = next(i for i, line in enumerate(lines) if line.split()[:2] == ["Size", "Enabled"])
        assert lines[top].split() == ["Size", "Enabled", "Spare", "Credits"]
        assert lines[top + 1].split() == ["instances", "per", "month"]
        assert "Svc 4 vCPU 16 GiB · Idx 3.5+ vCPU 32 GiB" in "\n".join(lines)
        assert all(len(line) <= 80 for line in lines)
        await pilot.resize_terminal(120, 40)
        await settle(pilot)
        wide = "\n".join(screen_text(app))
        assert "Spare instances" in wide and "Credits per month" in wide


# -- unsaved edits -------------------------------------------------------------------------------


async def test_r_with_unsaved_edits_asks_and_keeps_them_unless_discarded(fleet: Fleet) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        field = await edit_small_spares(pilot)
        view = app.screen
        assert isinstance(view, ComputeView) and view.has_unsaved_edits()
        await pilot.press("escape", "r")
        await pilot.pause()
        assert isinstance(app.screen, Confirm)
        assert "acme's compute settings have unsaved changes" in text(app, "#question")
        await pilot.press("n")
        await settle(pilot)
        assert app.screen is view and field.value == "3" and view.has_unsaved_edits()
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert field.value == "0" and not view.has_unsaved_edits()
        assert stored_spares(fleet, "small") == 0


async def test_ctrl_t_with_unsaved_edits_asks_before_the_next_tenant(fleet: Fleet) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        view = app.screen
        assert isinstance(view, ComputeView)
        await edit_small_spares(pilot)
        await pilot.press("ctrl+t")
        await pilot.pause()
        assert isinstance(app.screen, Confirm)
        await pilot.press("n")
        await settle(pilot)
        assert view.tenant == "acme" and view.has_unsaved_edits()
        assert view.query_one("#tenant", Select).value == "acme"
        await pilot.press("ctrl+t")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert view.tenant != "acme" and not view.has_unsaved_edits()
        assert view.query_one("#tenant", Select).value == view.tenant


async def test_leaving_the_view_with_unsaved_edits_asks_first(fleet: Fleet) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        view = app.screen
        assert isinstance(view, ComputeView)
        await edit_small_spares(pilot)
        await pilot.press("escape", "1")
        await pilot.pause()
        assert isinstance(app.screen, Confirm)
        await pilot.press("escape")  # Esc answers no
        await pilot.pause()
        assert app.current_mode == "compute" and view.has_unsaved_edits()
        await pilot.press("1")
        await pilot.pause()
        await pilot.press("y")
        await settle(pilot)
        assert app.current_mode == "hosts"
        hosts = app.screen
        assert isinstance(hosts, ViewScreen) and hosts.has_unsaved_edits() is False
        app.show_view("compute")
        await settle(pilot)
        assert view.query_one("#spares-small", Input).value == "0"  # discarded, as agreed
        assert stored_spares(fleet, "small") == 0


async def test_without_edits_nothing_is_asked(fleet: Fleet) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("r")
        await settle(pilot)
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert not isinstance(app.screen, Confirm)
        await pilot.press("1")
        await settle(pilot)
        assert app.current_mode == "hosts"


# -- typing into a spares field ------------------------------------------------------------------


async def test_a_digit_meant_for_a_view_never_lands_in_a_spares_field(fleet: Fleet) -> None:
    """The report: 2 typed, then 7 for Events made 27, capped to 10 and saved."""
    app = compute_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        field: Input = app.screen.query_one("#spares-medium", Input)
        field.focus()
        await pilot.pause()
        await pilot.press("2")  # the field's "1" was selected on focus: typing replaces it
        assert field.value == "2" and app.current_mode == "compute"
        await pilot.press("enter")  # Enter leaves the field
        await pilot.pause()
        assert not field.has_focus
        await pilot.press("7")
        await pilot.pause()
        assert field.value == "2"
        assert isinstance(app.screen, Confirm)  # leaving asks: the 2 is not saved yet
        await pilot.press("n")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert stored_spares(fleet, "medium") == 2


async def test_text_that_is_no_count_names_its_size_and_credits_follow_the_field(
    fleet: Fleet,
) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.screen.query_one("#spares-medium", Input).value = "abc"
        await pilot.pause()
        assert "Spare instances of Medium must be a whole number of 0 or more, not 'abc'" in (
            text(app, "#warnings")
        )
        assert text(app, "#credits-medium") == "?" and text(app, "#total") == "?"
        assert text(app, "#credits-large") == "1,440"
        app.screen.query_one("#spares-medium", Input).value = ""
        await pilot.pause()
        assert "Enter a number of spare instances for Medium" in text(app, "#warnings")
        assert text(app, "#credits-medium") == "?"
        app.screen.query_one("#spares-medium", Input).value = "3"
        await pilot.pause()
        assert text(app, "#credits-medium") == "2,160" and text(app, "#total") == "3,600"
        assert "Can't save" not in text(app, "#warnings")


async def test_choosing_another_tenant_in_the_list_with_edits_asks_and_n_puts_it_back(
    fleet: Fleet,
) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        view = app.screen
        assert isinstance(view, ComputeView)
        await edit_small_spares(pilot)
        tenants = view.query_one("#tenant", Select)
        tenants.value = "globex"
        await pilot.pause()
        assert isinstance(app.screen, Confirm)
        assert "Opening globex's settings discards them." in text(app, "#question")
        await pilot.press("n")
        await settle(pilot)
        assert tenants.value == "acme" and view.tenant == "acme" and view.has_unsaved_edits()
        assert view.query_one("#spares-small", Input).value == "3"

"""Keys typed ahead (a paste, tmux send-keys, a slow link catching up) act one after the other:
every key from `/` or `:` to Enter or Esc is the prompt's, a confirm takes only keys typed after
it appeared, and keys behind a quit do nothing."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.fleet import Fleet
from bcfleet.tui.actions import ACTIONS
from bcfleet.tui.screens.base import ViewScreen
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.screens.instances import InstancesView
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.views import VIEWS
from tests.support.tui import local_app, settle, type_ahead
from tests.support.tui_actions import said

pytestmark = pytest.mark.anyio

ACTION_KEYS = sorted({k.strip() for a in ACTIONS for k in a.key.split(",")})
"""Every key that starts a change in some view: typed inside a prompt, each is only text."""


def store(path: Path) -> list[str]:
    """Every row of the fleet's database, as SQL."""
    with sqlite3.connect(path) as db:
        return list(db.iterdump())


def vocabulary(view: object) -> list[str]:
    """A view's filter words: each column as `column:word`, a regex, a negation, and every
    action key, typed into the filter prompt, Enter, then Esc to clear it."""
    if not (isinstance(view, type) and issubclass(view, TableView)):
        return []
    words = ["proxy", *(f"{c.key}:y" for c in view.COLUMNS), "~^ams", "!x"]
    keys = [char for word in words for char in (*word, " ")]
    return ["/", *keys, *ACTION_KEYS, "space", "enter", "escape"]


def burst() -> list[str]:
    """Every view's command and filter vocabulary, one view after another."""
    keys: list[str] = []
    for view in VIEWS:
        keys += ["escape", ":", *view.name, "enter", *vocabulary(view.screen)]
    return keys


@pytest.mark.parametrize(
    "start", ["hosts", pytest.param("instances", marks=pytest.mark.full)]
)  # the burst walks every view from either start; the second start runs under --full
async def test_every_command_and_filter_typed_in_one_burst_changes_nothing(
    fleet_db: Path, start: str
) -> None:
    app, _fleet = local_app(fleet_db, start=start)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        before = store(fleet_db)
        type_ahead(app, burst())
        await settle(pilot, timeout=600)
        assert app.is_running
        assert isinstance(app.screen, ViewScreen)  # no confirm, no question left open
        assert app.screen.TITLE == "Provider accounts"  # the last command reached its view
        assert not [s for s in said(app) if "Not changed" in s or "done" in s]
    assert store(fleet_db) == before


async def test_a_filter_typed_fast_never_runs_the_keys_it_contains(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db, start="instances")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        before = store(fleet_db)
        screen = app.screen
        assert isinstance(screen, InstancesView) and screen.table.cursor_key is not None
        type_ahead(app, ["/", *"proxy"])  # x Stop, then y Yes, had stopped the cursor's row
        await settle(pilot)
        assert app.screen is screen and screen.table.filter_text == "proxy"
        type_ahead(app, ["escape", ":", *"jobs", "enter"])  # Enter had opened a row
        await settle(pilot)
        assert app.screen.TITLE == "Jobs"
        type_ahead(app, [":", *"quotas", "enter"])  # q had quit
        await settle(pilot)
        assert app.is_running and app.screen.TITLE == "Quotas"
    assert store(fleet_db) == before
    fleet.close()


async def test_a_yes_typed_before_the_confirm_appeared_never_confirms(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        type_ahead(app, ["/", *"ams-05", "enter", "c", "y"])
        await settle(pilot)
        confirm = app.screen
        assert isinstance(confirm, Confirm) and confirm.question.startswith("Drain host ams-05?")
        assert not _draining(fleet, "ams-05")
        await pilot.press("y")  # a key pressed once it is shown answers it
        await settle(pilot)
        assert not isinstance(app.screen, Confirm)
        assert _draining(fleet, "ams-05")


def _draining(fleet: Fleet, host: str) -> bool:
    return fleet.api.hosts.show(OP, host=host)["state"] == "draining"


@pytest.mark.parametrize("second", ["u", "c", "y", "/", ":", "?", "enter", "r", "1"])
async def test_a_key_right_behind_q_does_nothing(fleet_db: Path, second: str) -> None:
    app, _ = local_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        type_ahead(app, ["q", second])  # u behind q had opened a confirm on a closing app
        await pilot.pause()
    assert app.return_code == 0 and app._exception is None

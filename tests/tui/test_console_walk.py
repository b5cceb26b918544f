"""The console walk: every view × every key it binds × {80×24, 120×40} × {colour, NO_COLOR}.

Like the hostile CLI walk (tests/cli/test_cli_hostile_walk.py), it is generated: the views come
from bcfleet/tui/views.VIEWS and each view's keys from the bindings its classes declare (the
actions of bcfleet/tui/actions.py become bindings of their view), so a view or an action added
later is walked without a word here. For each key, in a Pilot session of that size and colour:

- nothing raises, and the console is still running;
- the fleet is unchanged after the key unless a confirm appeared; at a confirm, Esc leaves the
  fleet unchanged (an action asking a value first is given one: its current value, or ANSWERS);
- then the same key is pressed again and confirmed with y, and `doctor --invariants` is clean.

"Unchanged" is SQLite's own word for it: `PRAGMA data_version` on a connection of the walk's own
moves when any other connection commits a change to the file.

Every run walks a seeded sample that still holds every view, every action (a binding's action),
and each size with each colour (tests/support/sampling.py; the seed is BCFLEET_WALK_SEED);
BCFLEET_FULL_SUITE=1 walks every case (the test marked `full`). A session is one colour, resized
from one size to the other.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from textual.binding import Binding
from textual.pilot import Pilot
from textual.widgets import Input

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.fleet import Fleet
from bcfleet.tui.app import FleetApp
from bcfleet.tui.screens.ask import AskValue
from bcfleet.tui.screens.base import ViewScreen
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.views import VIEWS
from bcfleet.tui.widgets.prompt import Prompt
from tests.support.sampling import covering_sample, walk_seed
from tests.support.tui import local_app, settle

pytestmark = pytest.mark.anyio

SIZES = ((80, 24), (120, 40))
COLOURS = (True, False)  # False: NO_COLOR
LEAVES = frozenset({"quit", "app.quit"})
"""Actions that end the session; the typed-ahead and quit tests walk them."""
ANSWERS = {
    "act('resize')": "g1.medium",
    "act('offer')": "initech",
    "act('unoffer')": "initech",
}
"""What the walk answers an action that asks a value, where the prompt starts empty."""


@dataclass(frozen=True)
class Case:
    view: str
    key: str
    action: str
    size: tuple[int, int]
    colour: bool

    @property
    def id(self) -> str:
        width, height = self.size
        return f"{self.view}-{self.key}-{width}x{height}-{'colour' if self.colour else 'nocolor'}"


def declared_keys(screen: type[ViewScreen]) -> dict[str, str]:
    """key → action of every binding bcfleet's own classes declare for the view (its first key
    each), with the app's keys panel, and Enter on a list (open the row)."""
    found: dict[str, str] = {}
    for cls in reversed(screen.__mro__):
        if not cls.__module__.startswith("bcfleet."):
            continue
        for binding in cls.__dict__.get("BINDINGS", []):
            if isinstance(binding, Binding) and binding.action not in LEAVES:
                found[binding.key.split(",")[0].strip()] = binding.action
    found["question_mark"] = "keys"
    if issubclass(screen, TableView):
        found.setdefault("enter", "open_row")
    return found


def all_cases() -> list[Case]:
    return [
        Case(view.name, key, action, size, colour)
        for size in SIZES
        for colour in COLOURS
        for view in VIEWS
        for key, action in declared_keys(screen_class(view.screen)).items()
    ]


def screen_class(screen: Any) -> type[ViewScreen]:
    """A view's screen class (VIEWS gives the class as the factory of its mode)."""
    assert isinstance(screen, type) and issubclass(screen, ViewScreen)
    return screen


def classes(case: Case) -> Iterable[Hashable]:
    return (
        ("view", case.view),
        ("action", case.action),
        ("size", case.size),
        ("colour", case.colour),
        ("size and colour", case.size, case.colour),
    )


def sample() -> list[Case]:
    return covering_sample(all_cases(), classes, walk_seed())


class Watch:
    """The fleet's file, watched: data_version moves when another connection commits."""

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path)

    def version(self) -> int:
        return int(self.db.execute("PRAGMA data_version").fetchone()[0])


async def arrive(pilot: Pilot[Any], view: str) -> None:
    """The view's list itself: nothing over it, no prompt, no filter, no marks, the first row."""
    app = pilot.app
    assert isinstance(app, FleetApp)
    if app.current_mode != view:
        app.switch_mode(view)
        await settle(pilot)
    while len(app.screen_stack) > 1:
        app.pop_screen()
    screen = app.screen
    assert isinstance(screen, ViewScreen)
    prompt = screen.query_one(Prompt)
    if prompt.display:
        prompt.close()
    if isinstance(screen, TableView):
        screen.table.set_filter("")
        screen.table.clear_marks()
        screen.table.move_cursor(row=0)
    screen.focus_body()
    await settle(pilot)


async def press(pilot: Pilot[Any], case: Case) -> bool:
    """The case's key, and a value for an action that asks one; whether a confirm is up."""
    app = pilot.app
    await pilot.press(case.key)
    await settle(pilot)
    if isinstance(app.screen, AskValue):
        field = app.screen.query_one(Input)
        field.value = field.value or ANSWERS.get(case.action, "x")
        await pilot.press("enter")
        await settle(pilot)
    return isinstance(app.screen, Confirm)


def alive(app: FleetApp, case: Case) -> None:
    assert app._exception is None, f"{case.id}: {app._exception!r}"
    assert app.is_running, f"{case.id}: the console quit"


def invariants(fleet: Fleet, case: Case) -> None:
    report = fleet.api.doctor.check(OP, invariants=True)["invariants"]
    assert report["ok"], f"{case.id}: {report['problems']}"


async def walk(fleet_db: Path, cases: list[Case], monkeypatch: pytest.MonkeyPatch) -> None:
    """One Pilot session of the cases' colour, resized to each case's size (they come grouped
    by size), each case from its view's list."""
    size, colour = cases[0].size, cases[0].colour
    monkeypatch.chdir(fleet_db.parent)  # the usage export's `w` writes into the current folder
    if colour:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", "1")
    app, fleet = local_app(fleet_db, start=cases[0].view)
    assert app.no_color is not colour
    watch = Watch(fleet_db)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for case in cases:
            if case.size != size:
                size = case.size
                await pilot.resize_terminal(*size)
                await settle(pilot)
            await arrive(pilot, case.view)
            before = watch.version()
            asked = await press(pilot, case)
            alive(app, case)
            if not asked:
                assert watch.version() == before, f"{case.id}: the fleet changed, no confirm"
                continue
            await pilot.press("escape")
            await settle(pilot)
            assert watch.version() == before, f"{case.id}: the fleet changed after Esc"
            if await press(pilot, case):  # the same rows: Esc left cursor and marks as they were
                await pilot.press("y")
                await settle(pilot)
            alive(app, case)
            invariants(fleet, case)
    fleet.close()


def sessions(cases: list[Case]) -> list[Any]:
    """One Pilot session per colour (NO_COLOR is read when the app starts); inside it the cases
    of one size, then the other, each view's keys one after another (fewer switches)."""
    grouped: dict[bool, list[Case]] = {}
    for case in cases:
        grouped.setdefault(case.colour, []).append(case)
    order = {view.name: index for index, view in enumerate(VIEWS)}
    for group in grouped.values():
        group.sort(key=lambda case: (case.size, order[case.view]))
    return [
        pytest.param(group, id="colour" if colour else "nocolor")
        for colour, group in grouped.items()
    ]


@pytest.mark.parametrize("cases", sessions(sample()))
async def test_the_sampled_walk(
    fleet_db: Path, cases: list[Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    await walk(fleet_db, cases, monkeypatch)


@pytest.mark.full
@pytest.mark.parametrize("cases", sessions(all_cases()))
async def test_the_whole_walk(
    fleet_db: Path, cases: list[Case], monkeypatch: pytest.MonkeyPatch
) -> None:
    await walk(fleet_db, cases, monkeypatch)


def test_the_sample_walks_every_view_and_every_action() -> None:
    walked = sample()
    assert {c.view for c in walked} == {v.name for v in VIEWS}
    assert {c.action for c in walked} == {c.action for c in all_cases()}
    assert {(c.size, c.colour) for c in walked} == {(s, c) for s in SIZES for c in COLOURS}
    confirmed = {a.binding_action for v in VIEWS for a in getattr(v.screen, "ACTIONS", ())}
    assert confirmed and confirmed <= {c.action for c in walked}

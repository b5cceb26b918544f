"""The small things an operator saw, seen again: a reservation's state read by one rule in the
list and in describe, HELD BY cropped after a whole word, instances named in Events, and the
header saying whom the console acts as."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.tui.format import crop_words, plain
from bcfleet.tui.screens.describe import DescribeScreen
from bcfleet.tui.screens.events import EventsView
from bcfleet.tui.screens.host_detail import held_by_fitted
from bcfleet.tui.screens.reservations import shown_state
from bcfleet.tui.widgets.bars import TitleBar, acting_as
from tests.support.builders import token
from tests.support.tui import local_app, make_app, screen_text, settle

pytestmark = pytest.mark.anyio


async def test_the_preempted_reservation_reads_the_same_in_the_list_and_in_describe(
    fleet_db: Path,
) -> None:
    app, fleet = local_app(fleet_db, start="reservations")
    preempted = next(r for r in fleet.api.reservations.list(OP)["items"] if r.get("deadline"))
    assert preempted["state"] == "active" and shown_state(preempted) == "preempted"
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        table = app.screen.table
        listed = plain(table.all_rows[preempted["id"]].cells[5])
        table.move_to_key(preempted["id"])
        await pilot.press("d")
        await settle(pilot)
        assert isinstance(app.screen, DescribeScreen)
        described = app.screen.data["state"]
    assert listed == "preempted"
    assert described == "preempted (active until its deadline)"


@pytest.mark.parametrize(
    ("width", "expected"),
    [
        pytest.param(200, "rsv_…gprcf5 globex spot until 11-30 10:02, rsv_…w9hdv3 acme", id="fits"),
        pytest.param(50, "rsv_…gprcf5 globex spot until 11-30 10:02…", id="after-a-whole-id"),
        pytest.param(8, "rsv_…gp…", id="a-first-word-too-long-for-any-room"),
    ],
)
def test_held_by_is_cropped_after_a_whole_word(width: int, expected: str) -> None:
    held = "rsv_…gprcf5 globex spot until 11-30 10:02, rsv_…w9hdv3 acme"
    assert crop_words(held, width) == expected
    assert len(crop_words(held, width)) <= width


def test_the_gpu_table_leaves_held_by_what_the_other_columns_do_not_take() -> None:
    rows = [("0000:50:00.0", "L40S", "0", "rsv_…gprcf5 globex spot until 11-30 10:02, rsv_…w9")]
    (fitted,) = held_by_fitted(rows, 70)
    assert fitted[3] == "rsv_…gprcf5 globex spot until 11-30…"
    assert sum(len(c) + 2 for c in fitted) <= 70


async def test_events_name_the_instances_they_are_about(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db, start="events")
    names = {i["id"]: i["name"] for i in fleet.api.instances.list(OP)["items"]}
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        view = app.screen
        assert isinstance(view, EventsView)
        about = [e for e in view.tail.values() if str(e.get("subjectId")).startswith("ins_")]
        assert about
        for event in about:
            row = view.table.all_rows[str(event["seq"])]
            assert plain(row.cells[3]) == names[event["subjectId"]]
            assert event["subjectId"].lower() in row.searchable()[3]  # the filter finds the id


async def test_the_header_says_whom_the_console_acts_as(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert "as operator (root admin)" in screen_text(app)[0]
    from bcfleet.tui.source import LocalSource

    alice = token(fleet, "acme", "alice", role="viewer")
    as_alice = make_app(LocalSource(fleet, alice, label="sqlite:///fleet.db"))
    async with as_alice.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "as alice (acme viewer)" in screen_text(as_alice)[0]
        assert as_alice.screen.query_one(TitleBar)


def test_whom_the_header_names() -> None:
    operator = {"tenantId": "root", "role": "admin", "principal": None, "operator": True}
    assert acting_as(operator) == "as operator (root admin)"
    bob = {"tenantId": "acme", "role": "member", "principal": "bob", "operator": False}
    assert acting_as(bob) == "as bob (acme member)"


async def test_over_http_the_header_names_the_tokens_principal(remote: Any) -> None:
    app = make_app(remote)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "as ops (root admin)" in screen_text(app)[0]

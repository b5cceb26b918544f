"""The preemption preview in the dashboard: its reason is the planner's, and each run stamps its own
time, countdown and errors."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, Select, Static

from bcfleet.domain.preemption import epoch_ms
from bcfleet.fleet import Fleet
from bcfleet.tui.format import clock_time
from bcfleet.tui.screens.preview import answer_text
from bcfleet.tui.source import JSON, LocalSource, PreviewRequest
from bcfleet.tui.widgets.bars import StatusLine
from tests.support.tui import make_app, open_test_fleet, settle

pytestmark = pytest.mark.anyio


class FailingFirst(LocalSource):
    """The fleet, except that the first preview finds the database gone."""

    failures = 1

    def preview(self, request: PreviewRequest) -> JSON:
        if self.failures:
            self.failures -= 1
            raise OSError("database is locked")
        return super().preview(request)


class FixedStart(LocalSource):
    """Every preview answers: preempting one spot reservation, starting at `starts`."""

    starts = datetime(2026, 1, 1, tzinfo=UTC)

    def preview(self, request: PreviewRequest) -> JSON:
        del request
        return {"fits": False, "candidates": [], "reason": "no node fits",
                "preemptible": {"reservations": 1, "startsAt": epoch_ms(self.starts)}}  # fmt: skip


@pytest.fixture
def fleet(fleet_db: Path) -> Fleet:
    return open_test_fleet(fleet_db)


def answer(app: Any) -> str:
    return str(app.screen.query_one("#answer", Static).render())


def status(app: Any) -> str:
    return str(app.screen.query_one(StatusLine).render())


async def run(pilot: Any, *, pool: str | None = None, nodes: str | None = None) -> None:
    screen = pilot.app.screen
    if pool is not None:
        screen.query_one("#pool", Select).value = pool
    if nodes is not None:
        screen.query_one("#nodes", Input).value = nodes
    await pilot.press("ctrl+r")
    await settle(pilot)


def test_the_answer_gives_the_planners_reason() -> None:
    reason = "preempting all 4 spot reservations in its window still would not make it fit"
    shown = answer_text(
        {"fits": False, "candidates": [], "reason": "no node fits", "preemptReason": reason},
        now=datetime(2026, 1, 1, tzinfo=UTC),
    )
    assert f"By preempting spot work: no ({reason})" in str(shown)
    assert "never preempts" not in str(shown)


async def test_a_regular_gang_too_big_for_all_spot_work_says_so(fleet: Fleet) -> None:
    """vps-fra holds 4 spot reservations; 40 nodes × 4 GPUs would not fit without any of them."""
    app = make_app(LocalSource(fleet, label="x"), start="preview", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await run(pilot, pool="vps-fra", nodes="40")
        shown = answer(app)
        assert "Fits now: no" in shown
        assert (
            "By preempting spot work: no (preempting all 4 spot reservations in its window "
            "still would not make it fit)"
        ) in shown
        assert "a spot request never preempts" not in shown


async def test_each_run_stamps_its_own_time(fleet: Fleet) -> None:
    app = make_app(LocalSource(fleet, label="x"), start="preview", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        loaded = fleet.now()
        assert f"updated {clock_time(loaded)}" in status(app)
        fleet.clock.advance(seconds=185)  # type: ignore[attr-defined]
        await run(pilot)
        assert f"updated {clock_time(loaded + timedelta(seconds=185))}" in status(app)


async def test_countdowns_are_relative_to_each_run(fleet: Fleet) -> None:
    source = FixedStart(fleet, label="x")
    source.starts = fleet.now() + timedelta(minutes=2)
    app = make_app(source, start="preview", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await run(pilot)
        assert "(in 2m), after their notice." in answer(app)
        fleet.clock.advance(seconds=61)  # type: ignore[attr-defined]
        await run(pilot)
        assert "(in 59s), after their notice." in answer(app)


async def test_a_new_run_clears_an_old_error(fleet: Fleet) -> None:
    app = make_app(FailingFirst(fleet, label="x"), start="preview", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await run(pilot)
        assert "Could not ask: database is locked" in answer(app)
        assert "DISCONNECTED" in status(app)
        await run(pilot)
        assert "Fits now:" in answer(app) and "Could not ask" not in answer(app)
        assert "DISCONNECTED" not in status(app)

"""The Compute tab's serverless pool (shown, set as `settings compute set --serverless-pool` does),
a tenant without one read as the CLI reads it, and a save made in the CLI seen by the timer: a form
without edits reloads, one with edits is marked stale and does not save over it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Select, Static

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.cli.settings import settings_text
from bcfleet.fleet import Fleet
from bcfleet.tui.screens.compute import CHANGED_ELSEWHERE
from bcfleet.tui.source import LocalSource
from tests.support.fleet import run_cli
from tests.support.tui import build_fleet, make_app, open_test_fleet, settle
from tests.tui.test_tui_compute_settings import type_spares

pytestmark = pytest.mark.anyio


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return build_fleet(tmp_path)


@pytest.fixture
def fleet(db: Path) -> Fleet:
    return open_test_fleet(db)


def compute_app(fleet: Fleet, tenant: str = "acme") -> Any:
    return make_app(LocalSource(fleet, label="x"), start="compute", tenant=tenant)


def text(app: Any, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def stored(fleet: Fleet, tenant: str = "acme") -> dict[str, Any]:
    return fleet.api.settings.compute_show(OP, tenant_id=tenant)


def title(app: Any) -> str:
    return " ".join(app.screen.crumbs())


def cli_set(db: Path, *flags: str) -> None:
    result = run_cli("settings", "compute", "set", "--tenant", "acme", *flags, db=str(db))
    assert result.exit_code == 0, result.stderr


async def tick(pilot: Any) -> None:
    """One beat of the console's timer, its spacing after the last fetch (a clock) passed."""
    screen = pilot.app.screen
    screen._fetched_at = 0.0  # noqa: SLF001 - long ago: the beat fetches, as the timer's would
    screen.tick()
    await settle(pilot)


async def test_the_serverless_pool_is_shown_and_set_as_the_cli_sets_it(fleet: Fleet) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        pool: Select[str] = app.screen.query_one("#pool", Select)
        assert stored(fleet)["serverlessPool"] == "vps-ams"  # the demo's
        assert pool.value == stored(fleet)["serverlessPoolId"]
        names = [str(label) for label, _ in pool._options]
        assert "vps-ams" in names and "vps-fra" in names
        kinds = {p["name"]: p["kind"] for p in fleet.api.pools.list(OP)["items"]}
        assert {n for n in names if n} == {n for n, k in kinds.items() if k == "vps-host"}
        fra = next(p["id"] for p in fleet.api.pools.list(OP)["items"] if p["name"] == "vps-fra")
        pool.value = fra
        await pilot.pause()
        assert "unsaved changes" in str(app.screen.summary())
        assert stored(fleet)["serverlessPool"] == "vps-ams"  # nothing saved yet
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert text(app, "#message").startswith("Your compute settings are saved.")
        assert stored(fleet)["serverlessPool"] == "vps-fra"
        assert app.screen.query_one("#save", Button).disabled


async def test_a_tenant_without_a_serverless_pool_reads_as_the_cli_reads(fleet: Fleet) -> None:
    fleet.api.settings.compute_set(OP, tenant_id="globex", spares={"small": 1})
    body = stored(fleet, "globex")
    assert body["serverlessPool"] is None
    cli = settings_text(body)
    assert "Total credits per month: 720" in cli
    assert "Serverless pool: - (no spare instances are kept)" in cli
    app = compute_app(fleet, tenant="globex")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        pool: Select[str] = app.screen.query_one("#pool", Select)
        assert pool.is_blank()
        assert str(pool.prompt) == "- (no spare instances are kept)"
        assert text(app, "#total") == "720"
        summary = str(app.screen.summary())
        assert "total 720 credits/month" in summary
        assert "no serverless pool: no spares kept" in summary


async def test_a_cli_save_reloads_a_form_without_edits(fleet: Fleet, db: Path) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert text(app, "#credits-small") == "0"
        cli_set(db, "--spares", "small=3")
        await tick(pilot)
        assert text(app, "#credits-small") == "2,160"
        assert text(app, "#total") == "4,320"
        assert "changed elsewhere" in text(app, "#message")
        assert CHANGED_ELSEWHERE not in title(app)


async def test_a_cli_save_marks_a_form_with_edits_stale_and_is_not_overwritten(
    fleet: Fleet, db: Path
) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await type_spares(pilot, "xlarge", "2")
        cli_set(db, "--spares", "small=3")
        await tick(pilot)
        assert CHANGED_ELSEWHERE in title(app)
        assert text(app, "#credits-xlarge") == "1,440"  # the edits stay
        assert not app.screen.query_one("#load-failed").display  # the form, not Retry
        assert app.screen.query_one("#save", Button).disabled
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "r reloads" in text(app, "#message")
        after = stored(fleet)["sizes"]
        assert after["small"]["spares"] == 3 and after["xlarge"]["spares"] == 0
        await pilot.press("enter", "r")  # out of the spares field; r asks before discarding
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert CHANGED_ELSEWHERE not in title(app)
        assert text(app, "#credits-small") == "2,160"
        assert text(app, "#credits-xlarge") == "0"


async def test_a_save_between_two_timer_beats_is_refused_too(fleet: Fleet, db: Path) -> None:
    """The CLI saved after the last refresh: the save itself compares and writes nothing."""
    app = compute_app(fleet)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await type_spares(pilot, "xlarge", "2")
        cli_set(db, "--spares", "small=3")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert CHANGED_ELSEWHERE in title(app)
        assert "r reloads" in text(app, "#message")
        after = stored(fleet)["sizes"]
        assert after["small"]["spares"] == 3 and after["xlarge"]["spares"] == 0

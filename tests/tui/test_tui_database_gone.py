"""The database under the console: a file deleted under it, or held locked by another process.
An action never says done for a write that did not happen; the failure is said in the CLI's
codes, the header names the file's trouble, and a busy database says busy, retrying."""

from __future__ import annotations

import os
import sqlite3
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.clock import FakeClock
from bcfleet.errors import DatabaseUnavailableError
from bcfleet.fleet import Fleet
from bcfleet.ids import IdFactory
from bcfleet.settings import FleetSettings
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.source import LocalSource
from bcfleet.tui.widgets.bars import StatusLine, TitleBar
from tests.support.fleet import T0
from tests.support.tui import make_app, settle, settle_until
from tests.support.tui_actions import said

pytestmark = pytest.mark.anyio


def console(path: Path) -> tuple[Any, Fleet]:
    url = f"sqlite:///{path}"
    fleet = Fleet.open(
        url,
        clock=FakeClock(T0 + timedelta(seconds=40)),
        settings=FleetSettings(db_url=url),
        ids=IdFactory(seed=7),
        busy_timeout_s=0.2,
    )
    return make_app(LocalSource(fleet, label="sqlite:///fleet.db")), fleet


def header(app: Any) -> str:
    return str(app.screen.query_one(TitleBar).render())


def status(app: Any) -> str:
    return str(app.screen.query_one(StatusLine)._last[1].text())


async def undrain_fra_07(pilot: Any) -> None:
    await pilot.press("slash", *"fra-07", "enter", "u")
    await settle(pilot)
    assert isinstance(pilot.app.screen, Confirm)
    await pilot.press("y")
    await settle(pilot)


async def test_an_action_on_a_deleted_file_is_refused_and_the_header_says_so(
    fleet_db: Path,
) -> None:
    app, fleet = console(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for name in os.listdir(fleet_db.parent):  # rm fleet.db*
            if name.startswith("fleet.db"):
                os.remove(fleet_db.parent / name)
        await undrain_fra_07(pilot)
        await settle_until(pilot, lambda: said(app))
        notes = said(app)
        assert any(
            "fra-07: DATABASE_UNAVAILABLE: the database file" in n and "was deleted" in n
            for n in notes
        ), notes
        assert not any("is ready" in n for n in notes)  # never a write that did not happen
        await pilot.press("r")
        await settle(pilot)
        assert "FILE DELETED" in header(app)
        assert "DISCONNECTED" in status(app) and "DATABASE_UNAVAILABLE" in status(app)
        assert app.screen.table.row_count > 0  # the rows stay
    fleet.close()


async def test_a_locked_database_says_busy_retrying_and_saves_nothing(
    fleet_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app, fleet = console(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        holder = sqlite3.connect(fleet_db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")  # another process writing: no other writer gets in
        try:
            await undrain_fra_07(pilot)
            assert any(
                "fra-07: DATABASE_UNAVAILABLE: the database is busy" in n for n in said(app)
            ), said(app)
            with pytest.raises(DatabaseUnavailableError) as busy:
                fleet.api.hosts.set_state(OP, host="fra-07", draining=False)
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert fleet.api.hosts.show(OP, host="fra-07")["state"] == "draining"  # nothing saved

        # A refresh that meets the same error (WAL readers are seldom locked out: a holder
        # in exclusive locking mode does it) says busy, retrying, and the next one recovers.
        source = app.source
        monkeypatch.setattr(source, "revision", lambda: (_ for _ in ()).throw(busy.value))
        await pilot.press("r")
        await settle(pilot)
        assert "BUSY, RETRYING" in header(app)
        assert "busy, retrying" in status(app)
        monkeypatch.undo()
        await pilot.press("r")
        await settle(pilot)
        assert "BUSY" not in header(app) and "updated" in status(app)
    fleet.close()

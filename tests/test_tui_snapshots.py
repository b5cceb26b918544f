"""Snapshots of every dashboard view at 80×24 and 120×40, on the test fleet at a fixed time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input

from bcfleet.domain.compute_settings import ComputeSettings, ServiceUse, SizeUsers
from bcfleet.tui.widgets.onoff import OnOff
from tests.test_tui_support import (
    ComputeFake,
    build_fleet,
    local_app,
    make_app,
    open_test_fleet,
    settle,
)

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]
VIEWS = ["hosts", "degraded", "reservations", "preview", "compute", "usage", "events", "jobs"]


@pytest.fixture
def fleet_db(tmp_path: Path) -> Path:
    return build_fleet(tmp_path)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("view", VIEWS)
def test_view(snap_compare: Any, fleet_db: Path, view: str, size: tuple[int, int]) -> None:
    app, _ = local_app(fleet_db, start=view)
    assert snap_compare(app, terminal_size=size, run_before=settle)


@pytest.mark.parametrize("size", SIZES)
def test_host_detail(snap_compare: Any, fleet_db: Path, size: tuple[int, int]) -> None:
    """Enter on a GPU host: NUMA nodes, reserved and isolated CPUs, huge pages, GPUs, guests."""
    app, _ = local_app(fleet_db)

    async def open_host(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("slash", *"fra-01", "enter", "enter")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=open_host)


@pytest.mark.parametrize("size", SIZES)
def test_keys_panel(snap_compare: Any, fleet_db: Path, size: tuple[int, int]) -> None:
    app, _ = local_app(fleet_db, read_only=True)

    async def keys(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("question_mark")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=keys)


@pytest.mark.parametrize("size", SIZES)
def test_compute_form(snap_compare: Any, fleet_db: Path, size: tuple[int, int]) -> None:
    """The Compute tab with Medium as the default (locked), two Large spares typed, xlarge off."""
    source = ComputeFake(
        open_test_fleet(fleet_db),
        SizeUsers(services=(ServiceUse("svc_1", "prod", "web", "serverless", True, "xlarge"),)),
    )
    source.stored["acme"] = ComputeSettings(default_size="medium").with_size("small", spares=1)
    app = make_app(source, start="compute", tenant="acme")

    async def edit(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        field = app.screen.query_one("#spares-large", Input)
        field.focus()
        field.value = "2"
        app.screen.query_one("#enabled-xlarge", OnOff).focus()
        await pilot.press("space")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=edit)

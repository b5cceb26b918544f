"""Snapshots of every dashboard view at 80×24 and 120×40, on the test fleet at a fixed time."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Select

from bcfleet.tui.widgets.onoff import OnOff
from tests.support.tui import local_app, settle

SIZES = [pytest.param((80, 24), id="80x24"), pytest.param((120, 40), id="120x40")]
VIEWS = ["hosts", "degraded", "reservations", "preview", "compute", "usage", "events", "jobs"]


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
def test_compute_form_while_editing(
    snap_compare: Any, fleet_db: Path, size: tuple[int, int]
) -> None:
    """acme's Compute tab with Medium chosen as default, Large switched off (in use), 3 Small spares."""
    app, _ = local_app(fleet_db, start="compute", tenant="acme")

    async def edit(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        app.screen.query_one("#default", Select).value = "medium"
        field = app.screen.query_one("#spares-small", Input)
        field.focus()
        field.value = "3"
        app.screen.query_one("#enabled-large", OnOff).focus()
        await pilot.press("space")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=edit)


@pytest.mark.parametrize("size", SIZES)
def test_preview_answer(snap_compare: Any, fleet_db: Path, size: tuple[int, int]) -> None:
    """A gang of 12 nodes × 4 GPUs on vps-fra: fits only by preempting three spot sweeps."""
    app, _ = local_app(fleet_db, start="preview", tenant="acme")

    async def ask(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        app.screen.query_one("#pool", Select).value = "vps-fra"
        app.screen.query_one("#nodes", Input).value = "12"
        field = app.screen.query_one("#gpus", Input)
        field.focus()
        await pilot.press("enter")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=ask)


@pytest.mark.parametrize("size", SIZES)
def test_reservation_detail(snap_compare: Any, fleet_db: Path, size: tuple[int, int]) -> None:
    """Enter on the pending reservation: every field, its Unschedulable reason counted."""
    app, _ = local_app(fleet_db, start="reservations")

    async def open_pending(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("slash", *"state:pending", "enter", "enter")
        await settle(pilot)

    assert snap_compare(app, terminal_size=size, run_before=open_pending)


def test_no_color_still_says_everything(
    snap_compare: Any, fleet_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NO_COLOR: the preempted reservation, the deadline and the pending one read the same."""
    monkeypatch.setenv("NO_COLOR", "1")
    app, _ = local_app(fleet_db, start="reservations")
    assert app.no_color
    assert snap_compare(app, terminal_size=(120, 40), run_before=settle)

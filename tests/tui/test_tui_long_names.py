"""60-character names at 80×24: names crop with …, the columns that may not give way stay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot

from bcfleet.tui.views import VIEWS
from bcfleet.tui.widgets.keyed_table import KeyedTable
from tests.support.tui import (
    LONG_HOST,
    LONG_INSTANCE,
    LONG_TENANT,
    build_long_fleet,
    local_app,
    settle,
)

NAMES = [spec.name for spec in VIEWS]
pytestmark = pytest.mark.anyio


@pytest.fixture
def long_db(tmp_path: Path) -> Path:
    return build_long_fleet(tmp_path)


def test_the_names_are_sixty_characters() -> None:
    assert {len(LONG_HOST), len(LONG_TENANT), len(LONG_INSTANCE)} == {60}


@pytest.mark.parametrize("view", NAMES)
def test_every_view_with_long_names_at_80x24(snap_compare: Any, long_db: Path, view: str) -> None:
    app, _ = local_app(long_db, start=view)
    assert snap_compare(app, terminal_size=(80, 24), run_before=settle)


def test_the_long_host_opened_at_80x24(snap_compare: Any, long_db: Path) -> None:
    app, _ = local_app(long_db)

    async def open_host(pilot: Pilot[Any]) -> None:
        await settle(pilot)
        await pilot.press("slash", *"eas01", "enter", "enter")
        await settle(pilot)

    assert snap_compare(app, terminal_size=(80, 24), run_before=open_host)


@pytest.mark.parametrize(
    ("view", "size", "kept"),
    [
        ("hosts", (80, 24), ["name", "state", "vcpu", "memory", "gpu", "degraded", "age"]),
        ("quotas", (80, 24), ["tenant", "pool", "vcpu", "memory", "gpu"]),
        ("instances", (120, 40), ["name", "state", "host", "reason"]),
    ],
)
async def test_a_long_name_crops_and_the_key_columns_stay(
    long_db: Path, view: str, size: tuple[int, int], kept: list[str]
) -> None:
    app, _ = local_app(long_db, start=view)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        table = app.screen.query_one(KeyedTable)
        shown = [c.key for c in table.ordered_columns if not c.hidden]
        assert set(kept) <= set(shown), shown
        assert table._table_width() <= table.size.width


async def test_columns_shrink_when_the_long_rows_leave(long_db: Path) -> None:
    app, _ = local_app(long_db, start="hosts")
    async with app.run_test(size=(200, 50)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(KeyedTable)
        name = table.ordered_columns[0]
        assert name.width == len(LONG_HOST)
        await pilot.press("slash", *"fra-0", "enter")
        await pilot.pause()
        assert name.width == len("fra-01")
        await pilot.press("slash", "escape")
        await pilot.pause()
        assert name.width == len(LONG_HOST)


async def test_reservations_keep_their_id_at_80x24(long_db: Path) -> None:
    app, _ = local_app(long_db, start="reservations")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        table = app.screen.query_one(KeyedTable)
        shown = [c.key for c in table.ordered_columns if not c.hidden]
        assert {"id", "state", "when", "gpus"} <= set(shown), shown
        assert table._table_width() <= table.size.width

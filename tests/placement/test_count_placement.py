"""bench/count_placement.py's counted children place on both sides, on SQLite and on a scratch
PostgreSQL database, and leave the process's checkpoint settings as they found them."""

from __future__ import annotations

import pytest

from bcfleet.store import wal_checkpoints
from bench.count_placement import place
from tests.support.fleet import PG_ADMIN_URL


@pytest.mark.parametrize("side", ["bcfleet", "floor"])
def test_a_child_places_and_leaves_the_checkpoint_settings_as_they_were(side: str) -> None:
    kept = wal_checkpoints.EVERY_COMMITS, wal_checkpoints.BACKSTOP_PAGES
    assert place(side, hosts=5, count=3) == 3
    assert kept == (wal_checkpoints.EVERY_COMMITS, wal_checkpoints.BACKSTOP_PAGES)


@pytest.mark.postgres
@pytest.mark.parametrize("side", ["bcfleet", "floor"])
def test_a_child_places_on_postgresql(side: str) -> None:
    assert place(side, hosts=5, count=3, pg=PG_ADMIN_URL) == 3


@pytest.mark.parametrize("side", ["bcfleet", "floor"])
def test_a_batch_child_places_its_batches(side: str) -> None:
    assert place(side, hosts=5, count=2, batch=3) == 6

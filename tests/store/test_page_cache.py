"""Every SQLite connection keeps up to SQLITE_CACHE_KIB of pages (400 MiB), not SQLite's 2 MiB."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from bcfleet.store.engine import SQLITE_CACHE_KIB, make_engine

SQLITE_DEFAULT = -2000  # KiB


@pytest.mark.parametrize("where", ["file", "memory"])
def test_each_pooled_sqlite_connection_reads_back_the_larger_cache(
    tmp_path: Path, where: str
) -> None:
    assert SQLITE_CACHE_KIB == 409_600
    url = f"sqlite:///{tmp_path / 'fleet.db'}" if where == "file" else "sqlite://"
    engine = make_engine(url)
    try:
        # A file's pool hands out connections of their own; memory's, one a thread.
        opened = [engine.connect() for _ in range(2 if where == "file" else 1)]
        for connection in opened:
            size = connection.execute(text("PRAGMA cache_size")).scalar()
            assert size == -SQLITE_CACHE_KIB != SQLITE_DEFAULT
        for connection in opened:
            connection.close()
    finally:
        engine.dispose()

"""A transaction given large_page_cache reads with SQLITE_CACHE_KIB (400 MiB) of SQLite pages;
its connection goes back to the pool with SQLite's own 2 MiB, and others never had more."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from sqlalchemy import text
from sqlmodel import Session

from bcfleet.fleet import Fleet
from bcfleet.jobs import vps_usage
from bcfleet.store.engine import SQLITE_CACHE_KIB, SQLITE_DEFAULT_CACHE, large_page_cache


def cache_size(session: Session) -> Any:
    return session.execute(text("PRAGMA cache_size")).scalar()


def test_the_large_cache_is_the_transactions_and_the_pool_gets_the_default_back(
    fleet: Fleet,
) -> None:
    assert (SQLITE_CACHE_KIB, SQLITE_DEFAULT_CACHE) == (409_600, -2000)
    with fleet.read() as session:
        assert cache_size(session) == SQLITE_DEFAULT_CACHE
        large_page_cache(session)
        large_page_cache(session)  # once is enough
        assert cache_size(session) == -SQLITE_CACHE_KIB
    # Every pooled connection, the one just given back included, reads with the default.
    with ExitStack() as stack:
        opened = [stack.enter_context(fleet.read()) for _ in range(3)]
        assert [cache_size(s) for s in opened] == [SQLITE_DEFAULT_CACHE] * 3


def test_a_usage_batch_reads_with_the_large_cache(fleet: Fleet, monkeypatch: Any) -> None:
    seen: list[Any] = []
    locked = vps_usage._locked_watermark

    def noting(session: Session, *args: Any) -> Any:
        seen.append(cache_size(session))
        return locked(session, *args)

    monkeypatch.setattr(vps_usage, "_locked_watermark", noting)
    vps_usage.run_vps_usage(fleet, fleet.now())
    assert seen and set(seen) == {-SQLITE_CACHE_KIB}

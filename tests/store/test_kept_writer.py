"""The writer connection an engine keeps between hot calls: reused by the next call of any thread
when free, never shared by two calls at once, given back after a failure, an idle spell or
Fleet.close, and it sees an engine listener added since its last call; a forked process never
uses its parent's."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlalchemy import Connection, event

from bcfleet.fleet import Fleet
from bcfleet.store import uow
from bcfleet.store.driver_sql import connection_of
from bcfleet.store.engine import is_sqlite, large_page_cache
from tests.support.event_rows import INSERT_EVENT, event_row, stored_ids


def _driver_connection(fleet: Fleet) -> Connection:
    """The Core connection a write_on_connection call ran on (a new one after a checkout, even
    of the same DB-API connection)."""
    with fleet.write_on_connection() as session:
        return connection_of(session)


def test_the_next_call_runs_on_the_connection_the_last_one_left(any_fleet: Fleet) -> None:
    first = _driver_connection(any_fleet)
    assert _driver_connection(any_fleet) is first
    assert any_fleet.engine.pool.checkedout() == 1  # the kept one, between calls


def test_a_call_while_the_kept_one_is_in_use_takes_another(any_fleet: Fleet) -> None:
    kept = _driver_connection(any_fleet)
    seen: list[Connection] = []
    taken = threading.Event()  # the other call took a connection from the pool

    def _checked_out(*_args: Any) -> None:
        taken.set()

    # Before its BEGIN, which on SQLite waits for this thread's transaction to end.
    event.listen(any_fleet.engine, "checkout", _checked_out)
    other = threading.Thread(target=lambda: seen.append(_driver_connection(any_fleet)))
    try:
        with any_fleet.write_on_connection() as session:
            assert connection_of(session) is kept
            other.start()
            assert taken.wait(30)
        other.join(30)
    finally:
        event.remove(any_fleet.engine, "checkout", _checked_out)
    assert seen and seen[0] is not kept
    assert _driver_connection(any_fleet) is kept


def test_a_failed_call_gives_its_connection_back(any_fleet: Fleet) -> None:
    kept = _driver_connection(any_fleet)
    with pytest.raises(RuntimeError), any_fleet.write_on_connection() as session:
        INSERT_EVENT.run(session, event_row("evt_failed", "test.kept"))
        raise RuntimeError("the call failed")
    assert stored_ids(any_fleet, "test.kept") == []
    assert _driver_connection(any_fleet) is not kept


def test_a_connection_idle_too_long_goes_back_to_the_pool(
    any_fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = _driver_connection(any_fleet)
    assert _driver_connection(any_fleet) is kept
    monkeypatch.setattr(uow, "KEEP_IDLE_S", 0.0)
    assert _driver_connection(any_fleet) is not kept


def test_close_gives_the_kept_connection_back(any_fleet: Fleet) -> None:
    _driver_connection(any_fleet)
    assert any_fleet.engine.pool.checkedout() == 1
    uow.release_kept_writer(any_fleet.engine)
    assert any_fleet.engine.pool.checkedout() == 0


def test_a_listener_added_since_the_last_call_sees_the_next_calls_statements(
    any_fleet: Fleet,
) -> None:
    _driver_connection(any_fleet)  # kept, with its verdict that only bcfleet listens
    seen: list[str] = []

    def _heard(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        seen.append(statement)

    event.listen(any_fleet.engine, "before_cursor_execute", _heard)
    try:
        with any_fleet.write_on_connection() as session:
            INSERT_EVENT.run(session, event_row("evt_heard", "test.kept"))
    finally:
        event.remove(any_fleet.engine, "before_cursor_execute", _heard)
    assert any("INSERT INTO events" in statement for statement in seen)


def test_a_connection_that_took_the_large_page_cache_goes_back_to_the_pool(
    any_fleet: Fleet,
) -> None:
    kept = _driver_connection(any_fleet)
    with any_fleet.write_on_connection() as session:
        assert connection_of(session) is kept
        large_page_cache(session)  # SQLite's alone: PostgreSQL's cache is the server's
    assert (_driver_connection(any_fleet) is kept) == (not is_sqlite(any_fleet.engine))


def test_a_forked_process_never_uses_its_parents_kept_connection(
    any_fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    parents = _driver_connection(any_fleet)
    monkeypatch.setattr(uow.os, "getpid", lambda: -1)  # as a child after fork() sees it
    childs = _driver_connection(any_fleet)
    assert childs is not parents
    assert not parents.closed  # the parent's socket is left alone, neither used nor closed
    assert _driver_connection(any_fleet) is childs

"""write_on_connection's transaction (uow.ConnectionWrite): an error at any point of it rolls
back and gives the connection back; a lost connection says whether COMMIT had been sent; the
kept connection's BEGIN and COMMIT are sent as SQLAlchemy's transaction sends them, its events
heard once each per call, and the database holds no transaction between calls."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from sqlalchemy import Connection, event, text
from sqlalchemy.exc import IntegrityError
from sqlmodel import select

from bcfleet.errors import DatabaseUnavailableError
from bcfleet.fleet import Fleet
from bcfleet.store import uow, wal_checkpoints
from bcfleet.store.driver_sql import connection_of
from bcfleet.store.faults import COMMIT_OUTCOME_UNKNOWN, CONNECTION_LOST
from bcfleet.store.models import Event
from bcfleet.store.uow import current_revision
from tests.support.db_faults import Faults
from tests.support.event_rows import AT, INSERT_EVENT, event_row, stored_ids

KIND = "test.connection_write"


class Failed(Exception):
    """The error a test raises at one point of the transaction."""


def _connection(fleet: Fleet) -> Connection:
    with fleet.write_on_connection() as session:
        return connection_of(session)


def _write(fleet: Fleet, event_id: str) -> None:
    with fleet.write_on_connection() as session:
        INSERT_EVENT.run(session, event_row(event_id, KIND))


# Lost just before a statement SQLAlchemy runs (a DriverStatement's cursor on SQLite cannot be
# closed once its database is).
READ = "SELECT count(*) FROM events"


def _read_then_write(fleet: Fleet, event_id: str) -> None:
    with fleet.write_on_connection() as session:
        connection_of(session).execute(text(READ))
        INSERT_EVENT.run(session, event_row(event_id, KIND))


def _keeper(fleet: Fleet) -> Any:
    return fleet.engine.__dict__[uow._KEPT]


def _revision(fleet: Fleet) -> int:
    with fleet.read() as session:
        return current_revision(session)


def _idle(connection: Connection) -> bool:
    """Whether the database holds no transaction open on the connection."""
    driver: Any = connection.connection.dbapi_connection
    if connection.dialect.name == "sqlite":
        return not driver.in_transaction
    import psycopg

    return bool(driver.info.transaction_status == psycopg.pq.TransactionStatus.IDLE)


def _raising(*_args: Any, **_kwargs: Any) -> None:
    raise Failed("failed here")


# Each point of the transaction, entering and leaving, made to fail (on the kept connection; a
# session is made only with a new one, the kept one's serving its next calls).
POINTS = {
    "begin": ("begin_again", None),
    "session": ("_SESSION_TYPE", None),
    "rows changed": ("changes_made", wal_checkpoints),
    "bump": ("_bump", None),
    "commit is next": ("commit_is_next", None),
    "commit": ("commit_keeping", None),
}


def _next_write_lands(fleet: Fleet, event_id: str) -> None:
    """The keeper was freed, and the next write, the only one stored, is saved."""
    assert not _keeper(fleet).lock.locked()
    _write(fleet, event_id)
    assert stored_ids(fleet, KIND) == [event_id]


@pytest.mark.parametrize("point", sorted(POINTS))
def test_an_error_at_any_point_rolls_back_and_gives_the_connection_back(
    any_fleet: Fleet, monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    name, module = POINTS[point]
    if module is wal_checkpoints and wal_checkpoints.of(any_fleet.engine) is None:
        pytest.skip("no WAL checkpoints on PostgreSQL: the rows changed are not counted")
    kept = _connection(any_fleet)
    if point == "session":
        uow.release_kept_writer(any_fleet.engine)
    before = _revision(any_fleet)
    monkeypatch.setattr(module or uow, name, _raising)
    with pytest.raises(Failed), any_fleet.write_on_connection() as session:
        INSERT_EVENT.run(session, event_row("evt_failed", KIND))
    monkeypatch.undo()
    assert not _keeper(any_fleet).lock.locked()
    assert any_fleet.engine.pool.checkedout() == 0  # given back, none kept
    assert stored_ids(any_fleet, KIND) == []
    if any_fleet.engine.dialect.name == "sqlite":  # PostgreSQL's revision is a sequence
        assert _revision(any_fleet) == before
    assert kept.closed  # rolled back and given back to the pool, never kept
    assert _connection(any_fleet) is not kept
    _write(any_fleet, "evt_next")  # the next call runs and commits
    assert stored_ids(any_fleet, KIND) == ["evt_next"]
    assert any_fleet.engine.pool.checkedout() == 1  # the new kept one alone


def test_an_error_inside_the_call_rolls_back_the_orm_and_the_driver_rows(
    any_fleet: Fleet,
) -> None:
    kept = _connection(any_fleet)
    with pytest.raises(Failed), any_fleet.write_on_connection() as session:
        INSERT_EVENT.run(session, event_row("evt_driver", KIND))
        session.add(Event(id="evt_orm", type=KIND, at=AT))
        session.flush()
        raise Failed("the call failed")
    assert stored_ids(any_fleet, KIND) == []
    assert not _keeper(any_fleet).lock.locked() and kept.closed


def test_a_connection_lost_before_commit_on_the_kept_connection_runs_the_call_again(
    any_fleet: Fleet,
) -> None:
    _connection(any_fleet)  # kept, its transaction open in SQLAlchemy between calls
    faults = Faults(any_fleet, READ, kills=1)
    try:
        any_fleet.run_call(lambda: _read_then_write(any_fleet, "evt_lost_before"))
    finally:
        faults.remove()
    assert (faults.killed, faults.runs, faults.commits) == (1, 2, 1)
    assert stored_ids(any_fleet, KIND) == ["evt_lost_before"]


def test_a_connection_lost_before_commit_says_nothing_was_saved(any_fleet: Fleet) -> None:
    _connection(any_fleet)
    faults = Faults(any_fleet, READ, kills=1)
    try:
        with pytest.raises(DatabaseUnavailableError) as raised:
            _read_then_write(any_fleet, "evt_lost")
    finally:
        faults.remove()
    assert raised.value.details == {"reason": CONNECTION_LOST}
    _next_write_lands(any_fleet, "evt_after")


def test_a_connection_lost_at_commit_on_the_kept_connection_says_the_outcome_is_unknown(
    any_fleet: Fleet,
) -> None:
    _connection(any_fleet)
    faults = Faults(any_fleet, READ, at_commit=True)
    try:
        with pytest.raises(DatabaseUnavailableError) as raised:
            any_fleet.run_call(lambda: _read_then_write(any_fleet, "evt_lost_at_commit"))
    finally:
        faults.remove()
    assert raised.value.details == {"reason": COMMIT_OUTCOME_UNKNOWN}
    assert (faults.runs, faults.commits) == (1, 1)  # COMMIT was on its way: never sent twice
    assert not _keeper(any_fleet).lock.locked()
    _write(any_fleet, "evt_after")  # a new connection takes over
    assert "evt_after" in stored_ids(any_fleet, KIND)


def test_each_call_on_the_kept_connection_begins_and_commits_once_and_leaves_it_idle(
    any_fleet: Fleet,
) -> None:
    kept = _connection(any_fleet)
    heard: Counter[str] = Counter()

    def _listen(name: str) -> Any:
        def _heard(*_args: Any) -> None:
            heard[name] += 1

        return _heard

    listeners = {name: _listen(name) for name in ("begin", "commit", "rollback")}
    for name, listener in listeners.items():
        event.listen(any_fleet.engine, name, listener)
    try:
        for n in range(3):
            with any_fleet.write_on_connection() as session:
                connection = connection_of(session)
                assert connection is kept
                assert connection.in_transaction()
                INSERT_EVENT.run(session, event_row(f"evt_{n}", KIND))
            assert _idle(kept)  # committed: the database holds no transaction between calls
    finally:
        for name, listener in listeners.items():
            event.remove(any_fleet.engine, name, listener)
    assert heard == {"begin": 3, "commit": 3}
    assert stored_ids(any_fleet, KIND) == ["evt_0", "evt_1", "evt_2"]


def test_a_savepoint_on_the_kept_connection_undoes_only_its_part(any_fleet: Fleet) -> None:
    _connection(any_fleet)
    with any_fleet.write_on_connection() as session:
        INSERT_EVENT.run(session, event_row("evt_kept", KIND))
        savepoint = session.begin_nested()
        INSERT_EVENT.run(session, event_row("evt_undone", KIND))
        savepoint.rollback()
    assert stored_ids(any_fleet, KIND) == ["evt_kept"]
    _write(any_fleet, "evt_next")
    assert stored_ids(any_fleet, KIND) == ["evt_kept", "evt_next"]


def test_a_transaction_rolled_back_inside_the_call_commits_nothing_and_runs_no_callback(
    any_fleet: Fleet,
) -> None:
    _connection(any_fleet)
    ran: list[bool] = []
    with (
        pytest.raises(RuntimeError, match="rolled back inside the call"),
        any_fleet.write_on_connection() as session,
    ):
        INSERT_EVENT.run(session, event_row("evt_rolled_back", KIND))
        session.execute(text("SELECT 1"))  # the session joins the connection's transaction
        uow.after_commit(session, lambda: ran.append(True))
        session.rollback()  # rollback_only: it rolls the connection's transaction back
    assert ran == []
    assert stored_ids(any_fleet, KIND) == []
    _next_write_lands(any_fleet, "evt_next")


def test_the_next_call_on_the_kept_connection_sees_nothing_the_last_noted_or_loaded(
    any_fleet: Fleet,
) -> None:
    ran: list[int] = []
    with any_fleet.write_on_connection() as session:
        session.info["noted"] = True
        uow.after_commit(session, lambda: ran.append(1))
    with any_fleet.write_on_connection() as session:
        assert "noted" not in session.info
        session.add(Event(id="evt_loaded", type=KIND, at=AT))
    assert ran == [1]  # once, never again with a later call
    with any_fleet.write_on_connection() as session:
        assert not session.identity_map and not session.in_transaction()
        loaded = session.exec(select(Event).where(Event.id == "evt_loaded")).one()
        assert loaded in session.identity_map.values()  # loaded afresh, in this session
    assert ran == [1]


def _pooled_idle(fleet: Fleet) -> list[bool]:
    """Whether each connection waiting in the engine's pool holds no transaction open."""
    records = list(fleet.engine.pool._pool.queue)  # type: ignore[attr-defined]
    idle = []
    for record in records:
        driver = record.dbapi_connection
        if fleet.engine.dialect.name == "sqlite":
            idle.append(not driver.in_transaction)
        else:
            import psycopg

            idle.append(driver.info.transaction_status == psycopg.pq.TransactionStatus.IDLE)
    return idle


def test_a_commit_that_fails_gives_back_a_connection_with_no_transaction_open(
    any_fleet: Fleet,
) -> None:
    _connection(any_fleet)
    with pytest.raises(IntegrityError), any_fleet.write_on_connection() as session:
        session.begin_nested()  # left open: COMMIT goes through SQLAlchemy's commit()
        # On PostgreSQL both wait in the pipeline: the second's error is answered with COMMIT
        # (on SQLite, sent is run: it raises here).
        INSERT_EVENT.send(session, event_row("evt_twice", KIND))
        INSERT_EVENT.send(session, event_row("evt_twice", KIND))
    assert not _keeper(any_fleet).lock.locked()
    idle = _pooled_idle(any_fleet)
    assert idle and all(idle)
    assert stored_ids(any_fleet, KIND) == []
    _write(any_fleet, "evt_next")
    assert stored_ids(any_fleet, KIND) == ["evt_next"]

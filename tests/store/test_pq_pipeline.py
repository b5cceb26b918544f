"""PostgreSQL DriverStatements on psycopg's libpq wrapper: prepared once, answered at one sync,
the first error raised as SQLAlchemy wraps it, nothing recorded that the server did not prepare."""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import DBAPIError, IntegrityError

from bcfleet.errors import DatabaseUnavailableError
from bcfleet.fleet import Fleet
from bcfleet.store import driver_sql
from bcfleet.store.driver_sql import DriverStatement, connection_of
from bcfleet.store.faults import connection_lost
from bcfleet.store.pq_pipeline import _KEPT, numbered
from tests.support.builders import OP
from tests.support.capacity import create, pool_with_hosts, small_flavor
from tests.support.db_faults import kill
from tests.support.event_rows import INSERT_EVENT, event_row

COUNT = DriverStatement(text("SELECT count(*) FROM events WHERE type = :t"))


def _event(event_id: str) -> dict[str, Any]:
    return event_row(event_id, "t")


def _server_prepared(session: Any) -> dict[str, str]:
    """The statements prepared in the session's own database session, by name."""
    rows = session.execute(text("SELECT name, statement FROM pg_prepared_statements"))
    return {str(name): str(statement) for name, statement in rows}


def test_pyformat_becomes_numbered_parameters() -> None:
    sql = "SELECT %(a)s::INT, %(b)s, %(a)s, 'x%%' WHERE y = %(c 1)s"
    assert numbered(sql) == (b"SELECT $1::INT, $2, $1, 'x%' WHERE y = $3", ("a", "b", "c 1"))


def test_statements_are_prepared_once_and_survive_a_rollback(pg_fleet: Fleet) -> None:
    with pg_fleet.write() as session:
        assert driver_sql._by_libpq(connection_of(session))
        INSERT_EVENT.run(session, _event("evt_1"))
        assert COUNT.run(session, {"t": "t"}).scalar() == 1
    with pytest.raises(IntegrityError), pg_fleet.write() as session:
        for _ in range(6):  # psycopg would prepare this one itself past its threshold (5) ...
            session.execute(text("SELECT id FROM events WHERE type = 't'"))
        INSERT_EVENT.run(
            session, _event("evt_1")
        )  # ... and answer this rollback with DEALLOCATE ALL
    with pg_fleet.write() as session:
        nested = session.begin_nested()  # SQLAlchemy's own ROLLBACK TO SAVEPOINT
        nested.rollback()
        for n in range(2, 8):
            INSERT_EVENT.run(session, _event(f"evt_{n}"))
        assert COUNT.run(session, {"t": "t"}).scalar() == 7
        prepared = _server_prepared(session)
    ours = {n: s for n, s in prepared.items() if n.startswith("bcfleet_")}
    assert sum("INSERT INTO events" in s for s in ours.values()) == 1
    assert sum("SELECT count(*) FROM events" in s for s in ours.values()) == 1


def test_nothing_reaches_the_server_before_the_round_trip_is_answered(pg_fleet: Fleet) -> None:
    """One socket write a round trip: statements sent wait in libpq's buffer until the sync."""
    marked = DriverStatement(text("SELECT 'waiting-in-' || 'the-buffer' AS marker"))
    seen = text(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE query LIKE '%waiting-in-%' AND pid <> pg_backend_pid()"
    )
    with pg_fleet.write() as session, pg_fleet.engine.connect() as observer:
        INSERT_EVENT.send(session, _event("evt_1"))
        sent = marked.send_reading(session, {})  # the last one the server will have run
        time.sleep(0.2)  # a statement written to the socket would be running by now
        assert observer.execute(seen).scalar() == 0
        assert sent.rows().first() == ("waiting-in-the-buffer",)
        observer.rollback()  # a fresh snapshot of the activity
        assert observer.execute(seen).scalar() == 1


def test_the_first_error_is_raised_and_a_parse_it_aborted_is_not_taken_as_prepared(
    pg_fleet: Fleet,
) -> None:
    fresh = DriverStatement(text("SELECT count(*) FROM events WHERE subject_id = :s"))
    with pg_fleet.write() as session:
        INSERT_EVENT.run(session, _event("evt_1"))
    with pytest.raises(IntegrityError) as raised, pg_fleet.write() as session:
        INSERT_EVENT.send(session, _event("evt_1"))  # fails first ...
        INSERT_EVENT.send(session, _event("evt_2"))
        fresh.run(session, {"s": "x"})  # ... so this one's Parse never runs
    assert "evt_1" in str(raised.value)
    with pg_fleet.write() as session:
        driver = connection_of(session).connection.driver_connection
        assert fresh.run(session, {"s": "x"}).scalar() == 0  # prepared now, under its own name
        assert COUNT.run(session, {"t": "t"}).scalar() == 1  # evt_2 was never saved
        on_server = set(_server_prepared(session))
    assert {name.decode() for name in _KEPT[driver].names.values()} <= on_server


def test_with_another_listener_the_statements_go_through_psycopgs_cursors(pg_fleet: Fleet) -> None:
    seen: list[str] = []

    def before(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    event.listen(pg_fleet.engine, "before_cursor_execute", before)
    try:
        with pg_fleet.write() as session:
            assert not driver_sql._by_libpq(connection_of(session))
            INSERT_EVENT.run(session, _event("evt_1"))
    finally:
        event.remove(pg_fleet.engine, "before_cursor_execute", before)
    assert [s.split()[0] for s in seen if "events" in s] == ["INSERT"]
    with pg_fleet.write() as session:
        assert driver_sql._by_libpq(connection_of(session))
        assert COUNT.run(session, {"t": "t"}).scalar() == 1


def test_a_connection_lost_under_sent_statements_is_unavailable_and_the_next_call_works(
    pg_fleet: Fleet,
) -> None:
    with pytest.raises(DatabaseUnavailableError) as raised, pg_fleet.write() as session:
        INSERT_EVENT.run(session, _event("evt_1"))
        kill(pg_fleet, session.connection().connection.dbapi_connection)
        for n in range(2, 5):
            INSERT_EVENT.send(session, _event(f"evt_{n}"))
    assert raised.value.details["reason"] in ("connection_lost", "commit_outcome_unknown")
    cause = raised.value.__cause__
    assert isinstance(cause, DBAPIError) and connection_lost(cause)
    with pg_fleet.write() as session:  # a new connection, its statements prepared afresh
        assert COUNT.run(session, {"t": "t"}).scalar() == 0


def test_statements_the_server_lost_are_prepared_afresh_and_the_call_runs_again(
    pg_fleet: Fleet,
) -> None:
    """A pooler's DISCARD ALL or an administrator's DEALLOCATE ALL takes the prepared statements."""
    pool = pool_with_hosts(pg_fleet, hosts=1)
    small_flavor(pg_fleet, pool, "small", vcpu=1, memory_gib=1, disk_gib=1)
    first = create(pg_fleet, pool, "small")
    with pg_fleet.read() as session:  # the pool's one connection, where they were prepared
        session.connection().exec_driver_sql("DEALLOCATE ALL")
    again = create(pg_fleet, pool, "small")
    assert first["state"] == again["state"] == "running"
    assert len(pg_fleet.api.instances.list(OP, tenant_id="acme")["items"]) == 2

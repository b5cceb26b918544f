"""Statements sent without reading their answer: stored as if run, their errors raised before
anything later is read or committed, and no connection left in pipeline mode, on both engines."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.errors import DatabaseUnavailableError
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.store.driver_sql import DriverStatement
from bcfleet.store.faults import COMMIT_OUTCOME_UNKNOWN
from bcfleet.store.models import Event
from tests.support.builders import OP, flavor, host, hosted_pool, inventory
from tests.support.db_faults import Faults
from tests.support.event_rows import AT, INSERT_EVENT, event_row

COUNT = DriverStatement(text("SELECT count(*) FROM events WHERE type = 'test.sent'"))


def _event(event_id: str) -> dict[str, Any]:
    return event_row(event_id, "test.sent")


def _stored(fleet: Fleet) -> int:
    with fleet.read() as session:
        return int(COUNT.run(session, {}).scalar())


def _in_pipeline(session: Session) -> bool:
    """Whether the session's connection is in libpq's pipeline mode (never on SQLite)."""
    driver = session.connection().connection.driver_connection
    pgconn = getattr(driver, "pgconn", None)
    return pgconn is not None and pgconn.pipeline_status != 0


def test_sent_statements_are_seen_by_every_later_statement_and_stored_at_commit(
    any_fleet: Fleet,
) -> None:
    postgres = any_fleet.engine.dialect.name == "postgresql"
    with any_fleet.write() as session:
        COUNT.run(session, {})
        assert not _in_pipeline(session)
        INSERT_EVENT.send(session, _event("evt_1"))
        assert _in_pipeline(session) is postgres  # waiting for its answer
        assert COUNT.run(session, {}).scalar() == 1  # a statement run here reads it
        assert not _in_pipeline(session)
        INSERT_EVENT.send(session, _event("evt_2"))
        # The ORM's query (SQLAlchemy's execution) sees it too.
        assert len(session.exec(select(Event).where(Event.type == "test.sent")).all()) == 2
        assert not _in_pipeline(session)
        INSERT_EVENT.send(session, _event("evt_3"))  # answered with COMMIT
    assert _stored(any_fleet) == 3
    assert not _pooled_in_pipeline(any_fleet)


def _pooled_in_pipeline(fleet: Fleet) -> bool:
    """Whether a connection the pool hands out is in pipeline mode."""
    raw = fleet.engine.raw_connection()
    try:
        pgconn = getattr(raw.driver_connection, "pgconn", None)
        return pgconn is not None and pgconn.pipeline_status != 0
    finally:
        raw.close()


def _driver_read(session: Session) -> None:
    COUNT.run(session, {})


def _orm_read(session: Session) -> None:
    session.exec(select(Event)).all()


def _commit(session: Session) -> None:
    pass  # leaving the block commits


@pytest.mark.parametrize(
    "then", [_driver_read, _orm_read, _commit], ids=["driver read", "ORM read", "commit"]
)
def test_a_sent_insert_that_fails_raises_integrity_error_before_anything_later_and_saves_nothing(
    any_fleet: Fleet, then: Callable[[Session], None]
) -> None:
    with pytest.raises(IntegrityError, match="evt_1|UNIQUE|unique"), any_fleet.write() as session:
        INSERT_EVENT.send(session, _event("evt_1"))
        INSERT_EVENT.send(session, _event("evt_1"))  # the same key
        INSERT_EVENT.send(session, _event("evt_2"))
        then(session)
    assert _stored(any_fleet) == 0
    assert any_fleet.api.tenants.list(LOCAL_OPERATOR)["items"]  # the connection is usable again


def test_a_transaction_failing_after_a_send_rolls_it_back_and_pools_no_pipeline(
    any_fleet: Fleet,
) -> None:
    with pytest.raises(RuntimeError), any_fleet.write() as session:
        INSERT_EVENT.send(session, _event("evt_1"))
        raise RuntimeError("the caller's own failure")
    assert _stored(any_fleet) == 0
    assert not _pooled_in_pipeline(any_fleet)
    for n in range(3):  # and usable
        with any_fleet.write() as session:
            INSERT_EVENT.send(session, _event(f"evt_{n}"))
    assert _stored(any_fleet) == 3


def test_a_connection_lost_as_commit_goes_behind_sent_statements_is_an_unknown_outcome(
    any_fleet: Fleet,
) -> None:
    pool = hosted_pool(any_fleet, "vps-fra", gpu_model=None)
    host(any_fleet, pool["id"], "h1", inventory())
    run_vps_hosts(any_fleet, any_fleet.now())
    flavor(any_fleet, pool["id"], "b1.small")
    faults = Faults(any_fleet, "INSERT INTO instances", at_commit=True)
    with pytest.raises(DatabaseUnavailableError) as raised:
        any_fleet.api.instances.create(OP, tenant_id="acme", pool_id=pool["id"], flavor="b1.small")
    faults.remove()
    assert raised.value.details == {"reason": COMMIT_OUTCOME_UNKNOWN}
    assert (faults.runs, faults.commits) == (1, 1)  # never sent twice
    # Nothing half-applied: the COMMIT never reached the server, so nothing of it is stored.
    assert any_fleet.api.instances.list(OP, tenant_id="acme")["items"] == []
    assert _stored_placements(any_fleet) == (0, 0)


def _stored_placements(fleet: Fleet) -> tuple[int, int]:
    with fleet.read() as session:
        allocations = session.execute(text("SELECT count(*) FROM allocations")).scalar_one()
        claimed = session.execute(
            text("SELECT coalesce(sum(allocated), 0) FROM node_resources")
        ).scalar_one()
    return int(allocations), int(claimed)


def test_a_postgresql_session_is_one_transaction_begun_with_its_first_statement(
    pg_fleet: Fleet,
) -> None:
    """The driver runs in autocommit mode and BEGIN waits for the first statement: each
    session is still one transaction (now() is its start), invisible to others until COMMIT."""
    started = DriverStatement(text("SELECT now()"))
    with pg_fleet.read() as session:
        first = started.run(session, {}).scalar()  # BEGIN went with it
        time.sleep(0.02)
        assert session.execute(text("SELECT now()")).scalar() == first
    with pg_fleet.read() as session:
        first = session.execute(text("SELECT now()")).scalar()  # BEGIN sent before it
        time.sleep(0.02)
        assert started.run(session, {}).scalar() == first
    with pg_fleet.read() as session:  # a server-side cursor first: BEGIN goes on a plain one
        streamed = session.execute(
            text("SELECT now() FROM generate_series(1, 3)").execution_options(yield_per=2)
        )
        times = streamed.scalars().all()
        time.sleep(0.02)
        assert times == [times[0]] * 3
        assert started.run(session, {}).scalar() == times[0]
    with pg_fleet.write():
        pass  # runs nothing, sends nothing: the next transaction begins as ever
    with pg_fleet.write() as session:
        INSERT_EVENT.run(session, _event("evt_1"))
        assert _stored(pg_fleet) == 0  # another connection does not see it yet
        time.sleep(0.02)
        assert started.run(session, {}).scalar() == session.execute(text("SELECT now()")).scalar()
    assert _stored(pg_fleet) == 1
    with pytest.raises(RuntimeError), pg_fleet.write() as session:
        INSERT_EVENT.run(session, _event("evt_2"))
        raise RuntimeError("rolled back")
    assert _stored(pg_fleet) == 1


INSERT_RETURNING = DriverStatement(
    text(
        "INSERT INTO events (id, type, data, at) VALUES (:id, 'test.sent', '{}', :at) RETURNING id"
    )
)


def test_rows_sent_for_reading_come_with_the_next_statement(any_fleet: Fleet) -> None:
    with any_fleet.write() as session:
        COUNT.run(session, {})
        sent = INSERT_RETURNING.send_reading(session, {"id": "evt_1", "at": AT})
        later = INSERT_RETURNING.send_reading(session, {"id": "evt_2", "at": AT})
        assert COUNT.run(session, {}).scalar() == 2  # both answered with this one
        assert not _in_pipeline(session)
        assert later.rows().all() == [("evt_2",)]
        assert sent.rows().all() == [("evt_1",)]
        assert sent.rows().rowcount == 1  # read once, kept
        alone = INSERT_RETURNING.send_reading(session, {"id": "evt_3", "at": AT})
        assert alone.rows().scalars() == ["evt_3"]  # nothing after it: answered when read
    assert _stored(any_fleet) == 3


def test_a_statement_sent_for_reading_that_fails_raises_at_the_next_statement(
    any_fleet: Fleet,
) -> None:
    with pytest.raises(IntegrityError), any_fleet.write() as session:
        INSERT_RETURNING.send_reading(session, {"id": "evt_1", "at": AT})
        INSERT_RETURNING.send_reading(session, {"id": "evt_1", "at": AT})
        COUNT.run(session, {})
    assert _stored(any_fleet) == 0

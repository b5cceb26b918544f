"""Statements run on the driver's cursor write and read what Connection.execute would, fire the
engine's cursor events, and fail as SQLAlchemy's wrapped errors, on both engines."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import (
    JSON,
    Column,
    Connection,
    MetaData,
    String,
    Table,
    bindparam,
    column,
    event,
    text,
)
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError, IntegrityError, PendingRollbackError
from sqlmodel import Session

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.domain.states import InstanceState
from bcfleet.errors import DatabaseUnavailableError
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.store.driver_sql import CHANGED_FLAG, DriverStatement
from bcfleet.store.engine import make_engine
from bcfleet.store.faults import connection_lost
from bcfleet.store.models import Allocation, Event, Instance
from tests.support.builders import flavor, host, hosted_pool, inventory
from tests.support.db_faults import kill

AT = datetime(2026, 12, 2, 5, 41, 28, 123456, tzinfo=UTC)
INSERT_EVENT = DriverStatement(Event.__table__.insert())  # type: ignore[attr-defined]
INSERT_INSTANCE = DriverStatement(Instance.__table__.insert())  # type: ignore[attr-defined]


def _event(event_id: str, data: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "id": event_id,
        "type": "test.stored",
        "tenant_id": None,
        "subject_id": "ins_1",
        "data": data,
        "at": AT,
    }


def _instance(instance_id: str, pool_id: str) -> dict[str, Any]:
    values: dict[str, Any] = {c.key: None for c in Instance.__table__.columns}  # type: ignore[attr-defined]
    values.update(
        id=instance_id,
        tenant_id="root",
        pool_id=pool_id,
        name=instance_id,
        state=InstanceState.RUNNING,
        shape={"vcpu": 2, "placement": {"numaAffine": True}},
        host_placement=None,
        conditions=[{"type": "Unschedulable", "status": "False"}],
        purpose="tenant",
        created_at=AT,
        updated_at=AT,
    )
    return values


def _stored(fleet: Fleet, sql: str, ids: tuple[str, str]) -> list[tuple[Any, ...]]:
    """The rows as the driver reads them back, no column type applied."""
    with fleet.read() as session:
        rows = session.connection().exec_driver_sql(sql, ids).all()
    return [tuple(row)[1:] for row in rows]


def test_an_insert_stores_the_same_values_as_connection_execute(any_fleet: Fleet) -> None:
    params = "(?, ?)" if any_fleet.engine.dialect.name == "sqlite" else "(%s, %s)"
    pool_id = hosted_pool(any_fleet, "vps-fra")["id"]
    with any_fleet.write() as session:
        INSERT_EVENT.run(session, _event("evt_driver", {"a": [1, 2.5, None], "ü": "✓"}))
        session.connection().execute(
            INSERT_EVENT.statement, _event("evt_core", {"a": [1, 2.5, None], "ü": "✓"})
        )
        INSERT_INSTANCE.run(session, _instance("ins_driver", pool_id))
        session.connection().execute(INSERT_INSTANCE.statement, _instance("ins_core", pool_id))
    events = _stored(
        any_fleet,
        f"SELECT id, type, subject_id, data, at FROM events WHERE id IN {params}",
        ("evt_driver", "evt_core"),
    )
    assert len(events) == 2 and events[0] == events[1]
    instances = _stored(
        any_fleet,
        "SELECT id, state, shape, host_placement, conditions, created_at, node_id "
        f"FROM instances WHERE id IN {params}",
        ("ins_driver", "ins_core"),
    )
    assert len(instances) == 2 and instances[0] == instances[1]
    assert instances[0][0] == "running"


def test_a_json_none_is_stored_as_sqlalchemy_stores_it(any_fleet: Fleet) -> None:
    with any_fleet.write() as session:
        INSERT_EVENT.run(session, _event("evt_driver", None))
        session.connection().execute(INSERT_EVENT.statement, _event("evt_core", None))
        rows = session.connection().execute(
            text("SELECT data IS NULL FROM events WHERE id IN ('evt_driver', 'evt_core')")
        )
        assert len({bool(r[0]) for r in rows}) == 1


@pytest.mark.parametrize("typed", ["every column", "some columns"])
def test_typed_columns_read_back_as_connection_execute_reads_them(
    any_fleet: Fleet, typed: str
) -> None:
    with any_fleet.write() as session:
        INSERT_EVENT.run(session, _event("evt_1", {"n": 1}))
        INSERT_EVENT.run(session, _event("evt_2", {"n": 2}))
    at_type = Event.__table__.c.at.type  # type: ignore[attr-defined]
    columns = (
        [column("id", String), column("data", JSON), column("at", at_type)]
        if typed == "every column"
        else [column("id", String), column("data", JSON)]  # the first ones, as SQLAlchemy matches
    )
    query = text("SELECT id, data, at FROM events WHERE type = :t ORDER BY seq").columns(*columns)
    with any_fleet.read() as session:
        expected = [tuple(r) for r in session.connection().execute(query, {"t": "test.stored"})]
        found = DriverStatement(query).run(session, {"t": "test.stored"}).all()
    assert found == expected
    assert found[0][:2] == ("evt_1", {"n": 1})
    assert (found[0][2] == AT) is (typed == "every column")


TOUCH_EVENT = DriverStatement(text("UPDATE events SET type = type WHERE id = :id"))


def _insert_then_touch(fleet: Fleet) -> None:
    """One event inserted, then touched where no row matches and where one does: the
    changed-row flag follows each statement's rowcount."""
    with fleet.write() as session:
        connection = session.connection()
        INSERT_EVENT.run(session, _event("evt_1", {}))
        connection.info[CHANGED_FLAG] = False
        assert TOUCH_EVENT.run(session, {"id": "no-such"}).rowcount == 0
        assert connection.info[CHANGED_FLAG] is False
        assert TOUCH_EVENT.run(session, {"id": "evt_1"}).rowcount == 1
        assert connection.info[CHANGED_FLAG] is True


def test_the_engines_cursor_events_see_every_statement_and_the_changed_flag_follows_rowcount(
    any_fleet: Fleet,
) -> None:
    seen: list[str] = []

    def before(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    event.listen(any_fleet.engine, "before_cursor_execute", before)
    try:
        _insert_then_touch(any_fleet)
    finally:
        event.remove(any_fleet.engine, "before_cursor_execute", before)
    assert [s.split()[0] for s in seen if "events" in s] == ["INSERT", "UPDATE", "UPDATE"]


def test_with_only_its_own_listeners_a_statement_goes_straight_to_the_cursor_and_flags_changes(
    any_fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    through_sqlalchemy: list[str] = []
    cursor_execute = Connection._cursor_execute

    def counted(self: Connection, cursor: Any, statement: str, *args: Any) -> None:
        through_sqlalchemy.append(statement)
        cursor_execute(self, cursor, statement, *args)

    monkeypatch.setattr(Connection, "_cursor_execute", counted)
    _insert_then_touch(any_fleet)
    assert not [s for s in through_sqlalchemy if "events" in s]
    with any_fleet.read() as session:
        assert session.execute(text("SELECT count(*) FROM events")).scalar_one() == 1

    def before(*_args: Any) -> None:
        pass

    event.listen(any_fleet.engine, "after_cursor_execute", before)
    try:
        with any_fleet.write() as session:
            TOUCH_EVENT.run(session, {"id": "evt_1"})
    finally:
        event.remove(any_fleet.engine, "after_cursor_execute", before)
    assert [s.split()[0] for s in through_sqlalchemy if "events" in s] == ["UPDATE"]


def test_a_broken_constraint_is_sqlalchemys_integrity_error(any_fleet: Fleet) -> None:
    with pytest.raises(IntegrityError), any_fleet.write() as session:
        INSERT_EVENT.run(session, _event("evt_1", {}))
        INSERT_EVENT.run(session, _event("evt_1", {}))
    with any_fleet.read() as session:
        assert session.execute(text("SELECT count(*) FROM events")).scalar_one() == 0


def test_a_lost_connection_is_wrapped_and_invalidated_as_the_fault_rules_expect(
    any_fleet: Fleet,
) -> None:
    with pytest.raises(DatabaseUnavailableError) as raised, any_fleet.write() as session:
        kill(any_fleet, session.connection().connection.dbapi_connection)
        INSERT_EVENT.run(session, _event("evt_1", {}))
    assert raised.value.details["reason"] == "connection_lost"
    cause = raised.value.__cause__
    assert isinstance(cause, DBAPIError) and connection_lost(cause)
    assert any_fleet.api.tenants.list(LOCAL_OPERATOR)[
        "items"
    ]  # the next call gets a new connection


def test_statements_it_cannot_run_faithfully_are_refused(any_fleet: Fleet) -> None:
    with any_fleet.write() as session:
        missing_default = _event("evt_1", {})
        del missing_default["data"]  # a column with a Python-side default
        with pytest.raises(TypeError, match="must give data"):
            INSERT_EVENT.run(session, missing_default)
        expanding = DriverStatement(
            text("SELECT id FROM events WHERE id IN :ids").bindparams(
                bindparam("ids", expanding=True)
            )
        )
        with pytest.raises(TypeError, match="expanding"):
            expanding.run(session, {"ids": ["a"]})


def test_each_transaction_of_a_session_runs_on_its_own_connection_and_a_failed_one_on_none(
    any_fleet: Fleet,
) -> None:
    count = DriverStatement(text("SELECT count(*) FROM events"))
    with Session(any_fleet.engine) as session:
        INSERT_EVENT.run(session, _event("evt_1", {}))
        first = session.connection()
        session.commit()
        assert count.run(session, {}).scalar() == 1  # a new transaction, begun as run() needs
        assert session.connection() is not first
        session.rollback()
        assert count.run(session, {}).scalar() == 1  # the third transaction's connection kept
        session.add(Event(**_event("evt_1", {})))  # the same id: the flush fails
        with pytest.raises(IntegrityError):
            session.flush()
        # The transaction is rolled back: nothing runs on its connection outside it.
        with pytest.raises(PendingRollbackError):
            INSERT_EVENT.run(session, _event("evt_2", {}))
        session.rollback()
        assert count.run(session, {}).scalar() == 1


def test_statements_that_return_no_rows_and_those_that_return_none_read_alike(
    any_fleet: Fleet,
) -> None:
    returning = DriverStatement(text("UPDATE events SET type = type WHERE id = :id RETURNING id"))
    plain = DriverStatement(text("UPDATE events SET type = type WHERE id = :id"))
    with any_fleet.write() as session:
        INSERT_EVENT.run(session, _event("evt_1", {}))
        assert returning.run(session, {"id": "evt_1"}).all() == [("evt_1",)]
        assert returning.run(session, {"id": "no-such"}).all() == []
        updated = plain.run(session, {"id": "evt_1"})
        assert updated.all() == [] and updated.rowcount == 1


def test_the_rows_status_is_the_one_psycopg_names() -> None:
    from psycopg import pq

    from bcfleet.store import driver_sql

    assert driver_sql._TUPLES_OK == pq.ExecStatus.TUPLES_OK


def test_one_statement_compiles_for_each_dialect_it_meets_in_turn() -> None:
    """The last dialect's statements are looked up first; another dialect gets its own."""
    from sqlalchemy.dialects import postgresql, sqlite

    lite, pg = sqlite.dialect(), postgresql.psycopg.dialect()  # type: ignore[attr-defined]
    statement = DriverStatement(text("SELECT id FROM hosts WHERE id = :node"))
    placeholders = []
    for dialect in (lite, pg, lite, pg):
        placeholders.append(statement._for(dialect, {"node": "n"}).sql.split("= ")[1])
    assert placeholders == ["?", "%(node)s", "?", "%(node)s"]
    table = Table("pairs", MetaData(), Column("a", String()), Column("b", String()))
    insert = DriverStatement(table.insert())
    given = [insert._for(lite, keys).sql for keys in ({"a": 1}, {"a": 1, "b": 1}, {"a": 1})]
    assert given == [  # an INSERT compiles per set of columns given
        "INSERT INTO pairs (a) VALUES (?)",
        "INSERT INTO pairs (a, b) VALUES (?, ?)",
        "INSERT INTO pairs (a) VALUES (?)",
    ]


def _as_text(connection: Connection, table: Table, key: str, value: str) -> tuple[Any, ...]:
    """A row's columns as the database holds them, each cast to text (JSON as written)."""
    columns = [c for c in table.columns if c.key != "seq"]  # an event's: given by the database
    casts = ", ".join(f"CAST({c.name} AS TEXT)" for c in columns)
    row = connection.execute(
        text(f"SELECT {casts} FROM {table.name} WHERE {key} = :v"), {"v": value}
    ).one()
    return tuple(row)


def test_a_placements_rows_are_stored_byte_for_byte_as_connection_execute_stores_them(
    any_fleet: Fleet,
) -> None:
    """The allocation, instance and event a placement writes on the driver's cursor (the same
    time bound in each, None columns passed by) read back, as text, exactly as SQLAlchemy's own
    INSERT of the same values stores them."""
    pool_id = hosted_pool(any_fleet, "vps-fra", gpu_model=None)["id"]
    host(any_fleet, pool_id, "h1", inventory())
    run_vps_hosts(any_fleet, any_fleet.now())
    flavor(any_fleet, pool_id, "b1.small")
    made = any_fleet.api.instances.create(
        LOCAL_OPERATOR, tenant_id="acme", pool_id=pool_id, flavor="b1.small"
    )
    tables = [
        (Allocation.__table__, "consumer_id"),  # type: ignore[attr-defined]
        (Instance.__table__, "id"),  # type: ignore[attr-defined]
        (Event.__table__, "subject_id"),  # type: ignore[attr-defined]
    ]
    with any_fleet.engine.connect() as connection, connection.begin() as transaction:
        stored, typed = [], []
        for table, key in tables:
            stored.append(_as_text(connection, table, key, made["id"]))
            row = connection.execute(table.select().where(table.c[key] == made["id"])).one()
            typed.append({k: v for k, v in row._mapping.items() if k != "seq"})
        for (table, key), _values in reversed(list(zip(tables, typed, strict=True))):
            connection.execute(table.delete().where(table.c[key] == made["id"]))
        for (table, _key), values in zip(tables, typed, strict=True):
            connection.execute(table.insert(), values)
        again = [_as_text(connection, table, key, made["id"]) for table, key in tables]
        transaction.rollback()
    assert again == stored
    assert stored[0][tables[0][0].columns.keys().index("ends_at")] is None


def test_the_same_time_bound_twice_is_converted_once_and_a_kept_none_not_at_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from sqlalchemy.dialects import sqlite

    from bcfleet.store.types import UTCDateTime

    handed: list[datetime | None] = []
    convert = UTCDateTime.process_bind_param

    def counted(self: UTCDateTime, value: datetime | None, dialect: Dialect) -> datetime | None:
        handed.append(value)
        return convert(self, value, dialect)

    monkeypatch.setattr(UTCDateTime, "process_bind_param", counted)
    table = Table(
        "times",
        MetaData(),
        Column("a", UTCDateTime()),
        Column("b", UTCDateTime()),
        Column("doc", JSON()),
    )
    lite = sqlite.dialect()  # a new dialect: processors made with the counting conversion
    compiled = DriverStatement(table.insert())._for(lite, {"a": 1, "b": 1, "doc": 1})
    event_at = DriverStatement(Event.__table__.insert())._for(lite, _event("evt_1", {}))  # type: ignore[attr-defined]
    assert compiled.in_order is not None and event_at.in_order is not None
    handed.clear()  # what compiling asked of the type
    text_at = "2026-12-02 05:41:28.123456"
    assert compiled.in_order({"a": AT, "b": AT, "doc": {"n": 1}}) == [text_at, text_at, '{"n": 1}']
    assert event_at.in_order(_event("evt_1", {}))[-1] == text_at  # another statement, AT again
    equal = datetime.fromisoformat(AT.isoformat())  # equal, but another object: converted
    assert compiled.in_order({"a": equal, "b": None, "doc": None}) == [text_at, None, "null"]
    assert [v is AT for v in handed] == [True, False]  # None never handed over


def test_a_closed_sqlite_database_fails_as_sqlalchemys_wrapped_error(sqlite_url: str) -> None:
    """The driver refuses a cursor on a closed database: that error too is raised as
    SQLAlchemy wraps it, not the driver's own."""
    engine = make_engine(sqlite_url)
    statement = DriverStatement(text("SELECT 1"))
    connection = engine.connect()
    try:
        assert statement.run(connection, {}).scalar() == 1
        connection.connection.dbapi_connection.close()  # type: ignore[union-attr]
        with pytest.raises(DBAPIError, match="closed database"):
            statement.run(connection, {})
    finally:
        connection.invalidate()
        engine.dispose()

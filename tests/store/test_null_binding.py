"""None is bound on SQLite from the driver's adapters' table (store/engine.bind_null_plainly):
still SQL NULL, for the driver's statements and SQLAlchemy's alike."""

from __future__ import annotations

import sqlite3

from sqlalchemy import text

from bcfleet.store.driver_sql import DriverStatement
from bcfleet.store.engine import make_engine

_NULL_KEY = (type(None), sqlite3.PrepareProtocol)


def test_an_sqlite_engine_registers_the_adapter_for_none(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    try:
        adapter = sqlite3.adapters[_NULL_KEY]
        assert adapter(None) is None
    finally:
        engine.dispose()


def test_none_is_stored_as_sql_null_by_either_path(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    insert = DriverStatement(text("INSERT INTO t (k, v) VALUES (:k, :v)"))
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE t (k INTEGER, v TEXT)"))
            insert.run(connection, {"k": 1, "v": None})  # the driver's cursor
            connection.execute(text("INSERT INTO t (k, v) VALUES (:k, :v)"), {"k": 2, "v": None})
            insert.run(connection, {"k": 3, "v": "x"})
            rows = connection.execute(text("SELECT k, typeof(v), v FROM t ORDER BY k")).all()
        assert [tuple(r) for r in rows] == [(1, "null", None), (2, "null", None), (3, "text", "x")]
    finally:
        engine.dispose()


def test_no_base_type_is_adapted() -> None:
    """An adapter of int, float, str or bytearray would send every value through the lookup."""
    assert not any(
        key[0] in (int, float, str, bytearray) for key in sqlite3.adapters if len(key) == 2
    )

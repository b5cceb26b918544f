"""Hot statements on the driver's cursor: compiled once per dialect, bound and read through their column types.

SQLAlchemy's execution of a compiled statement (cache lookup, execution context, result
object) cost a placement several times what the driver spends running it. A DriverStatement
keeps the statement's SQL as the dialect compiles it, applies the bind and result
processors of its column types (the same values reach the database as through
Connection.execute), and sends it through the connection's plain cursor execution: the
engine's before/after_cursor_execute events still fire (the changed-row flag, fault
injection, statement counts) and a driver error is raised as SQLAlchemy wraps it
(IntegrityError, a lost connection invalidated), so store/faults.py reads it as before.

For plain statements only: text (optionally with typed columns) and single-row INSERT, UPDATE
or DELETE with every column given that has a Python-side default; no expanding IN lists.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from weakref import WeakKeyDictionary

from sqlalchemy import Connection
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.sql.selectable import SelectBase
from sqlmodel import Session

Processor = Callable[[Any], Any]


@dataclass(frozen=True)
class _Compiled:
    sql: str
    positional: tuple[str, ...] | None  # bind names in order for a positional paramstyle
    binds: tuple[tuple[str, Processor], ...]  # the binds whose type converts the value
    fixed: Mapping[str, Any]  # values the statement carries itself (a LIMIT's), unless given
    # (position, processor) of the typed columns that convert their values, matched to the
    # result's columns by position as SQLAlchemy matches a textual select's columns.
    results: tuple[tuple[int, Processor], ...]


class DriverRows:
    """What a DriverStatement returned: its rows (converted by their column types) and rowcount."""

    __slots__ = ("rowcount", "rows")

    def __init__(self, rows: list[tuple[Any, ...]], rowcount: int) -> None:
        self.rows = rows
        self.rowcount = rowcount

    def all(self) -> list[tuple[Any, ...]]:
        return self.rows

    def first(self) -> tuple[Any, ...] | None:
        return self.rows[0] if self.rows else None

    def one(self) -> tuple[Any, ...]:
        if len(self.rows) != 1:
            raise LookupError(f"expected one row, got {len(self.rows)}")
        return self.rows[0]

    def scalars(self) -> list[Any]:
        return [row[0] for row in self.rows]

    def scalar(self) -> Any:
        return self.rows[0][0] if self.rows else None


class DriverStatement:
    """A Core statement compiled once per dialect (and, for an INSERT, per set of columns given)."""

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._compiled: WeakKeyDictionary[Dialect, dict[frozenset[str], _Compiled]] = (
            WeakKeyDictionary()
        )

    def run(self, on: Session | Connection, params: Mapping[str, Any]) -> DriverRows:
        """Run once in the transaction of `on` (a session's connection is begun if it is not)."""
        connection = connection_of(on) if isinstance(on, Session) else on
        compiled = self._for(connection.dialect, params)
        values = {**compiled.fixed, **params} if compiled.fixed else dict(params)
        for name, process in compiled.binds:
            values[name] = process(values[name])
        arguments: Sequence[Any] | Mapping[str, Any] = (
            values if compiled.positional is None else [values[n] for n in compiled.positional]
        )
        cursor = connection.connection.cursor()
        try:
            connection._cursor_execute(cursor, compiled.sql, arguments)
            rows: list[tuple[Any, ...]] = list(cursor.fetchall()) if _has_rows(cursor) else []
            rowcount = cursor.rowcount
        finally:
            cursor.close()
        if compiled.results and rows:
            rows = [_converted(row, compiled.results) for row in rows]
        return DriverRows(rows, rowcount)

    def _for(self, dialect: Dialect, params: Mapping[str, Any]) -> _Compiled:
        by_keys = self._compiled.get(dialect)
        if by_keys is None:
            by_keys = self._compiled[dialect] = {}
        keys = frozenset(params) if isinstance(self.statement, Insert) else frozenset()
        found = by_keys.get(keys)
        if found is None:
            found = by_keys[keys] = self._compile(dialect, keys)
        return found

    def _compile(self, dialect: Dialect, keys: frozenset[str]) -> _Compiled:
        statement = self.statement
        if isinstance(statement, Insert):
            _check_insert(statement, keys)
        compiled = statement.compile(dialect=dialect, column_keys=sorted(keys) or None)
        assert isinstance(compiled, SQLCompiler)
        binds: list[tuple[str, Processor]] = []
        fixed: dict[str, Any] = {}
        for name, bind in compiled.binds.items():
            if bind.expanding or bind.literal_execute:
                raise TypeError(f"{name}: a DriverStatement takes no expanding or literal binds")
            if bind.value is not None:
                fixed[name] = bind.value
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if process is not None:
                binds.append((name, process))
        positional = tuple(compiled.positiontup or ()) if compiled.positional else None
        results: list[tuple[int, Processor]] = []
        if isinstance(statement, SelectBase):
            for position, column in enumerate(statement.selected_columns):
                process = column.type.dialect_impl(dialect).result_processor(dialect, None)
                if process is not None:
                    results.append((position, process))
        return _Compiled(compiled.string, positional, tuple(binds), fixed, tuple(results))


_CONNECTION = "bcfleet.driver_connection"
# libpq's PGRES_TUPLES_OK (psycopg.pq.ExecStatus.TUPLES_OK), not imported from psycopg so that
# an SQLite process never loads the driver (tests/store/test_driver_sql.py checks the value).
_TUPLES_OK = 2


def connection_of(session: Session) -> Connection:
    """The connection of the session's transaction, kept in session.info while that one is active.

    session.connection() walks the ORM's transaction states on every call (about 1 us, against
    0.25 us here: a few microseconds of a placement); a transaction no longer active (committed,
    rolled back after a failed flush) is never handed out.
    """
    transaction = session.get_transaction()
    kept = session.info.get(_CONNECTION)
    if (
        transaction is not None
        and kept is not None
        and kept[0] is transaction
        and transaction.is_active
    ):
        connection: Connection = kept[1]
        return connection
    connection = session.connection()
    session.info[_CONNECTION] = (session.get_transaction(), connection)
    return connection


def _has_rows(cursor: Any) -> bool:
    """Whether the statement returned rows: psycopg's result status (its description builds
    a column object per column on every read), else the DB-API description."""
    result: Any = getattr(cursor, "pgresult", _NOT_PSYCOPG)
    if result is _NOT_PSYCOPG:
        return cursor.description is not None
    return result is not None and result.status == _TUPLES_OK


_NOT_PSYCOPG = object()


def _converted(row: tuple[Any, ...], results: tuple[tuple[int, Processor], ...]) -> tuple[Any, ...]:
    values = list(row)
    for position, process in results:
        values[position] = process(values[position])
    return tuple(values)


def _check_insert(statement: Insert, keys: frozenset[str]) -> None:
    """Every column with a Python-side default is given: nothing here runs column defaults."""
    table = statement.table
    missing = [
        column.key
        for column in table.columns
        if column.default is not None and column.key not in keys
    ]
    if missing:
        raise TypeError(f"{table}: a DriverStatement INSERT must give {', '.join(missing)}")

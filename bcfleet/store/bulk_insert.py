"""Many new rows of one table in one statement: a batch placement's instances, allocations and events.

SQLAlchemy's executemany binds every row of a batch through its execution context; on SQLite
that cost a batch of 100 instances more than the driver's executemany of the same rows. Here
the INSERT is compiled once per dialect and set of columns, each value goes through its column
type's bind processor (what SQLAlchemy applies: JSON dumped, times written as SQLite keeps
them), and on SQLite the rows go as ONE multi-row INSERT (VALUES (…), (…), …; as many
statements as the connection's limit of bound parameters needs): sqlite3's executemany runs
the one-row statement once a row, resetting and binding it each time, which cost a batch of
100 instances' three tables some 45,000 instructions an instance more. A driver error is raised
as SQLAlchemy wraps it. On PostgreSQL the rows go through the connection's executemany (its
statements may wait in a pipeline, which SQLAlchemy's execution answers first:
store/driver_sql.py). The transaction is marked changed (the revision bump).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Mapping, Sequence
from itertools import chain
from operator import itemgetter
from typing import Any

from sqlalchemy import Table, bindparam
from sqlalchemy.engine import Dialect
from sqlmodel import Session

from bcfleet.store.driver_sql import CHANGED_FLAG, connection_of
from bcfleet.store.sqlalchemy_seam import raise_wrapped

_NONE = object()  # no value yet
_Compiled = tuple[str, tuple[str, ...], tuple[Callable[[Any], Any] | None, ...]]


class BulkInsert:
    """An INSERT of many rows of `table`, every row giving the same columns."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self._compiled: dict[tuple[str, tuple[str, ...]], _Compiled] = {}
        self._many: dict[tuple[str, int], str] = {}

    def run(
        self,
        session: Session,
        rows: Sequence[Mapping[str, Any]],
        names: tuple[str, ...] | None = None,
    ) -> None:
        """Insert the rows: each gives the columns `names` (default: the first row's keys; a
        row may hold more keys, such as an ORM object's __dict__, which are left out)."""
        if not rows:
            return
        names = tuple(rows[0]) if names is None else names
        connection = connection_of(session)
        if connection.dialect.name != "sqlite":
            connection.execute(
                self.table.insert(), [{name: row[name] for name in names} for row in rows]
            )
            return
        sql, order, processors = self._for(connection.dialect, names)
        args = _bound(rows, order, processors)
        driver = connection.connection.dbapi_connection
        most = max(1, _variables(driver) // len(order))  # rows a statement may bind
        cursor = connection.connection.cursor()
        try:
            for start in range(0, len(args), most):
                chunk = args[start : start + most]
                statement = self._rows_of(sql, len(chunk))
                cursor.execute(statement, list(chain.from_iterable(chunk)))
        except BaseException as exc:
            raise_wrapped(connection, exc, sql, args, cursor)
        finally:
            cursor.close()
        connection.info[CHANGED_FLAG] = True

    def _rows_of(self, sql: str, count: int) -> str:
        """The one-row INSERT as one of `count` rows (VALUES (…), (…), …), made once a count."""
        many = self._many.get((sql, count))
        if many is None:
            head, values = sql.rsplit(" VALUES ", 1)
            many = self._many[(sql, count)] = f"{head} VALUES {', '.join([values] * count)}"
        return many

    def _for(self, dialect: Dialect, names: tuple[str, ...]) -> _Compiled:
        key = (dialect.name, names)
        compiled = self._compiled.get(key)
        if compiled is None:
            statement = self.table.insert().values({n: bindparam(n) for n in names})
            done = statement.compile(dialect=dialect)
            order = tuple(done.positiontup or names)
            processors = tuple(
                self.table.c[n].type.dialect_impl(dialect).bind_processor(dialect) for n in order
            )
            compiled = (done.string, order, processors)
            self._compiled[key] = compiled
        return compiled


def _bound(
    rows: Sequence[Mapping[str, Any]],
    order: tuple[str, ...],
    processors: tuple[Callable[[Any], Any] | None, ...],
) -> list[list[Any]]:
    """Each row's values in the statement's order, through their columns' bind processors."""
    values = itemgetter(*order)
    # A value an earlier row had (the very object: a batch's shared shape, its one time,
    # a placement document shared by its instances) is not processed again: column by
    # column, the row before's first, then any earlier row's. The rows hold every value
    # while this runs, so an id names one object throughout.
    args = [list(values(row)) for row in rows]
    for i, process in enumerate(processors):
        if process is None:
            continue
        done: dict[int, Any] = {}
        last: Any = _NONE
        out: Any = None
        for arg in args:
            value = arg[i]
            if value is not last:
                last = value
                out = done.get(id(value), _NONE)
                if out is _NONE:
                    out = done[id(value)] = process(value)
            arg[i] = out
    return args


def _variables(driver: Any) -> int:
    """How many parameters one statement may bind on this sqlite3 connection."""
    limit: int = driver.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    return limit

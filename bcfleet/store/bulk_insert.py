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
from itertools import chain, repeat
from operator import is_, itemgetter
from typing import Any

from sqlalchemy import Table, bindparam
from sqlalchemy.engine import Dialect
from sqlmodel import Session

from bcfleet.store.driver_sql import CHANGED_FLAG, connection_of
from bcfleet.store.sqlalchemy_seam import raise_wrapped

_Compiled = tuple[str, tuple[str, ...], tuple[Callable[[Any], Any] | None, ...]]


class BulkInsert:
    """An INSERT of many rows of `table`, every row giving the same columns."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self._compiled: dict[tuple[str, tuple[str, ...]], _Compiled] = {}
        self._many: dict[tuple[str, frozenset[int], int], str] = {}

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
        columns = _columns(rows, order, processors)
        # A column NULL in every row is written as NULL in the statement, not bound: sqlite3
        # binds None only after asking its adapters about it, and the AttributeError each ask
        # formats cost some 3,000 instructions a value (a batch's instance has eight such).
        nulls = frozenset(i for i, c in enumerate(columns) if all(map(is_, c, repeat(None))))
        bound = (column for i, column in enumerate(columns) if i not in nulls)
        args = list(zip(*bound, strict=True))
        driver = connection.connection.dbapi_connection
        most = max(1, _variables(driver) // max(1, len(order) - len(nulls)))  # rows a statement
        cursor = connection.connection.cursor()
        try:
            for start in range(0, len(args), most):
                chunk = args[start : start + most]
                statement = self._rows_of(sql, len(order), nulls, len(chunk))
                cursor.execute(statement, list(chain.from_iterable(chunk)))
        except BaseException as exc:
            raise_wrapped(connection, exc, sql, args, cursor)
        finally:
            cursor.close()
        connection.info[CHANGED_FLAG] = True

    def _rows_of(self, sql: str, width: int, nulls: frozenset[int], count: int) -> str:
        """The one-row INSERT of `width` values as one of `count` rows (VALUES (…), (…), …), the
        columns `nulls` (their places in the row) NULL; made once for each."""
        key = (sql, nulls, count)
        many = self._many.get(key)
        if many is None:
            head, values = sql.rsplit(" VALUES ", 1)
            if values != f"({', '.join(['?'] * width)})":
                raise ValueError(f"not an INSERT of one row of {width} parameters: {sql}")
            row = ", ".join("NULL" if i in nulls else "?" for i in range(width))
            many = self._many[key] = f"{head} VALUES {', '.join([f'({row})'] * count)}"
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


def _columns(
    rows: Sequence[Mapping[str, Any]],
    order: tuple[str, ...],
    processors: tuple[Callable[[Any], Any] | None, ...],
) -> list[tuple[Any, ...]]:
    """The rows' values column by column, in the statement's order, each through its column's
    bind processor.

    A value the rows share (the very object: a batch's shape, its one time, the placement
    document its instances share, None) is processed once. A column holding one object
    throughout is told at once; in any other, each value is processed the first time its
    object is met. The rows hold every value while this runs, so an id names one object
    throughout.
    """
    values = itemgetter(*order) if len(order) > 1 else lambda row: (row[order[0]],)
    columns = list(zip(*map(values, rows), strict=True))
    for i, process in enumerate(processors):
        if process is None:
            continue
        column = columns[i]
        if all(map(is_, column, repeat(column[0]))):
            columns[i] = (process(column[0]),) * len(column)
            continue
        done: dict[int, Any] = {}
        out = []
        for value in column:
            key = id(value)
            if key in done:
                out.append(done[key])
            else:
                out.append(done.setdefault(key, process(value)))
        columns[i] = tuple(out)
    return columns


def _variables(driver: Any) -> int:
    """How many parameters one statement may bind on this sqlite3 connection."""
    limit: int = driver.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    return limit

"""Many new rows of one table in one statement: a batch placement's instances, allocations and events.

SQLAlchemy's executemany binds every row of a batch through its execution context; on SQLite
that cost a batch of 100 instances more than the driver's executemany of the same rows. Here
the INSERT is compiled once per dialect and set of columns, each value goes through its column
type's bind processor (what SQLAlchemy applies: JSON dumped, times written as SQLite keeps
them), and sqlite3's executemany runs it, a driver error raised as SQLAlchemy wraps it. On
PostgreSQL the rows go through the connection's executemany (its statements may wait in a
pipeline, which SQLAlchemy's execution answers first: store/driver_sql.py). The transaction is
marked changed (the revision bump).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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
        cursor = connection.connection.cursor()
        try:
            cursor.executemany(sql, args)
        except BaseException as exc:
            raise_wrapped(connection, exc, sql, args, cursor)
        finally:
            cursor.close()
        connection.info[CHANGED_FLAG] = True

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

"""Hot statements on the driver's cursor: compiled once per dialect, bound and read through their column types.

SQLAlchemy's execution of a compiled statement (cache lookup, execution context, result
object) cost a placement several times what the driver spends running it. A DriverStatement
keeps the statement's SQL as the dialect compiles it, applies the bind and result
processors of its column types (the same values reach the database as through
Connection.execute), and hands it to the driver. When no listener but bcfleet's own (the
changed-row flag, the pipeline's watch) would see it, straight, their work done in place:
on SQLite to the sqlite3 cursor, on PostgreSQL to psycopg's libpq wrapper (pq_pipeline.py:
prepared once per connection, sent in libpq's pipeline mode, dumped and loaded by psycopg's
adapters). Else through the connection's plain cursor execution on psycopg's cursors, so
the engine's before/after_cursor_execute events fire for every listener (fault injection,
statement counts). Either way a driver error is raised as SQLAlchemy wraps it
(IntegrityError, a lost connection invalidated), so store/faults.py reads it as before.

Each statement's arguments are bound in one pass made when it is compiled (_in_order): taken
in the driver's order (SQLite's ?, libpq's $n) by itemgetter, each converted by its bind
processor, a None its type keeps as None not handed over, and the last immutable value a
processor shared by several columns converted remembered, so a placement's time (four
columns of three INSERTs, store/types.py UTCDateTime) is converted once. Which way a
Connection's statements go (_route) is asked once per Connection; on SQLite with only
bcfleet's listeners a statement is its arguments, the cursor's execute and its rows
(_straight), with nothing built in between.

For plain statements only: text (optionally with typed columns) and single-row INSERT, UPDATE
or DELETE with every column given that has a Python-side default; no expanding IN lists.

A statement whose answer nobody reads (an INSERT of a new row, the revision bump) can be sent
instead of run: on PostgreSQL it waits in the pipeline and goes to the server with the
next statement that is read, or with COMMIT, in one round trip. So do a transaction's BEGIN
(the driver runs in autocommit mode; BEGIN is sent with the first statement) and a statement
whose rows are read only later (send_reading, a quota charge read after the candidate search
sent behind it). A placement's BEGIN goes with its first read and its last five statements
(three INSERTs, the bump, COMMIT) are one round trip. The pipeline never outlives the
statements sent into it (watch_pipelines): a statement run any other way (SQLAlchemy's, the
ORM's flush) first has the waiting ones answered, COMMIT goes behind them, ROLLBACK ends them.
So a failed INSERT raises, as SQLAlchemy wraps it, before anything is read that it might have
changed, and before anything is committed. On
SQLite (no round trips) send is run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import date, datetime
from functools import cache
from operator import itemgetter
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar
from weakref import WeakKeyDictionary, WeakSet, ref

from sqlalchemy import Connection, event
from sqlalchemy.engine import Dialect
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.dml import Insert
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.sql.selectable import SelectBase

from bcfleet.store.sqlalchemy_seam import cursor_execute, quiet, raise_wrapped

if TYPE_CHECKING:
    from sqlmodel import Session

Processor = Callable[[Any], Any]
F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class _Compiled:
    sql: str
    positional: tuple[str, ...] | None  # bind names in order for a positional paramstyle
    binds: tuple[tuple[str, Processor], ...]  # the binds whose type converts the value
    fixed: Mapping[str, Any]  # values the statement carries itself (a LIMIT's), unless given
    # (position, processor) of the typed columns that convert their values, matched to the
    # result's columns by position as SQLAlchemy matches a textual select's columns.
    results: tuple[tuple[int, Processor, bool], ...]  # and whether it leaves None as it is
    changes: bool  # an INSERT, UPDATE or DELETE: a row it touches marks the transaction changed
    # psycopg only: the statement in libpq's $n form and its parameters' names in order
    libpq: tuple[bytes, tuple[str, ...]] | None
    # The driver's arguments in the order it takes them (SQLite's ?, libpq's $n), bound and
    # converted in one pass (_in_order); None for a dialect that takes them by name.
    in_order: Callable[[Mapping[str, Any]], Sequence[Any]] | None


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


def _read(cursor: Any, compiled: _Compiled) -> DriverRows:
    """The answered statement's rows, converted by their column types; the cursor closed.

    `cursor` is a driver cursor, or the Answer of a statement sent on libpq (pq_pipeline).
    """
    if isinstance(cursor, Answer):
        rows: list[tuple[Any, ...]] = cursor.rows
        rowcount = cursor.rowcount
    else:
        try:
            # SQLite's cursor: the DB-API description (asking it for psycopg's pgresult would
            # raise and catch an AttributeError on every statement)
            psycopg = compiled.libpq is not None
            has_rows = _has_rows(cursor) if psycopg else cursor.description is not None
            rows = cursor.fetchall() if has_rows else []
            rowcount = cursor.rowcount
        finally:
            cursor.close()
    if compiled.results and rows:
        rows = [_converted(row, compiled.results) for row in rows]
    return DriverRows(rows, rowcount)


class Answer:
    """What the server answered a statement sent on libpq (pq_pipeline): its rows, loaded by
    psycopg's loaders, and its rowcount."""

    __slots__ = ("rowcount", "rows")

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []
        self.rowcount = -1


class SentRows:
    """The rows of a statement sent with DriverStatement.send_reading, once it is answered."""

    __slots__ = ("_rows", "_waiting")

    def __init__(self, rows: DriverRows | None, waiting: tuple[Any, ...] | None = None) -> None:
        self._rows = rows
        self._waiting = waiting  # (connection, its pipeline, cursor or Answer, compiled, arguments)

    def rows(self) -> DriverRows:
        """Its rows; when it still waits, it and every statement before it are answered now."""
        if self._rows is None:
            assert self._waiting is not None
            connection, queued, cursor, compiled, arguments = self._waiting
            self._waiting = None
            try:
                waiting = _queued_on(connection)
                if waiting is not None and waiting is queued:  # not answered yet
                    _answer(connection, waiting, compiled.sql, arguments)
            except BaseException:
                _discard(cursor)
                raise
            self._rows = _read(cursor, compiled)
        return self._rows


_NO_KEYS: frozenset[str] = frozenset()


class DriverStatement:
    """A Core statement compiled once per dialect (and, for an INSERT, per set of columns given)."""

    def __init__(self, statement: ClauseElement) -> None:
        self.statement = statement
        self._compiled: WeakKeyDictionary[Dialect, dict[frozenset[str], _Compiled]] = (
            WeakKeyDictionary()
        )
        # The last dialect's entry, looked up first: a process runs one dialect nearly always.
        self._last: tuple[ref[Dialect], dict[frozenset[str], _Compiled]] | None = None
        self._by_columns = isinstance(statement, Insert)  # an INSERT compiles per set of columns

    def run(self, on: Session | Connection, params: Mapping[str, Any]) -> DriverRows:
        """Run once in the transaction of `on` (a session's connection is begun if it is not)."""
        connection = on if isinstance(on, Connection) else connection_of(on)
        compiled = self._for(connection.dialect, params)
        route = connection.__dict__.get(_ROUTE) or _route(connection)
        if route is _STRAIGHT:  # SQLite, nothing else listening
            return DriverRows(*_straight(connection, compiled, params))
        if route is _LIBPQ:
            pipeline, answer, values = _send_on_libpq(connection, compiled, params, read=True)
            assert answer is not None
            _answer(connection, pipeline, compiled.sql, values)
            if compiled.changes and answer.rowcount != 0:
                connection.info[CHANGED_FLAG] = True
            return _read(answer, compiled)
        arguments = self._arguments(compiled, params)
        cursor = connection.connection.cursor()
        queued = _waiting(connection) if route is _PIPELINED else None
        assert queued is None or isinstance(queued, _Queued)  # psycopg's (see _by_libpq)
        try:
            if queued is None:
                _execute(connection, cursor, compiled.sql, arguments, changes=compiled.changes)
            else:  # sent behind the waiting statements; all are answered in one round trip
                queued.readers.append(cursor)
                _execute(connection, cursor, compiled.sql, arguments, changes=compiled.changes)
                _answer(connection, queued, compiled.sql, arguments)
        except BaseException:
            cursor.close()
            raise
        return _read(cursor, compiled)

    def send_reading(self, on: Session | Connection, params: Mapping[str, Any]) -> SentRows:
        """Run once, its rows read later (SentRows.rows()): on PostgreSQL it waits in the
        pipeline until a statement after it is run, and is answered in that one's round trip.

        Its error, if any, is raised there or by rows().
        """
        connection = on if isinstance(on, Connection) else connection_of(on)
        compiled = self._for(connection.dialect, params)
        route = connection.__dict__.get(_ROUTE) or _route(connection)
        if route is _STRAIGHT:
            return SentRows(DriverRows(*_straight(connection, compiled, params)))
        if route is _CURSORS:
            return SentRows(self.run(connection, params))
        if route is _LIBPQ:
            pipeline, answer, values = _send_on_libpq(
                connection, compiled, params, read=True, unread_change=True
            )
            return SentRows(None, (connection, pipeline, answer, compiled, values))
        arguments = self._arguments(compiled, params)
        queued = _waiting(connection) or _open_pipeline(connection)
        assert isinstance(queued, _Queued)  # psycopg's (see _by_libpq)
        cursor = connection.connection.cursor()
        queued.readers.append(cursor)
        try:
            _execute(connection, cursor, compiled.sql, arguments, changes=compiled.changes)
        except BaseException:
            cursor.close()
            raise
        return SentRows(None, (connection, queued, cursor, compiled, arguments))

    def send(self, on: Session | Connection, params: Mapping[str, Any]) -> None:
        """Run once, its answer not read: on PostgreSQL it waits in the pipeline (module docstring).

        Its error, if any, is raised by the next statement or at COMMIT. Until answered its
        rowcount is unknown, so a sent INSERT, UPDATE or DELETE counts as a change (the
        revision bump); only statements that always change a row are sent.
        """
        connection = on if isinstance(on, Connection) else connection_of(on)
        compiled = self._for(connection.dialect, params)
        route = connection.__dict__.get(_ROUTE) or _route(connection)
        if route is _STRAIGHT:
            _straight(connection, compiled, params)
            return
        if route is _CURSORS:
            self.run(connection, params)
            return
        if route is _LIBPQ:
            _send_on_libpq(connection, compiled, params, read=False, unread_change=True)
            return
        arguments = self._arguments(compiled, params)
        queued = _waiting(connection) or _open_pipeline(connection)
        assert isinstance(queued, _Queued)
        _execute(connection, queued.cursor, compiled.sql, arguments, changes=compiled.changes)

    @staticmethod
    def _arguments(
        compiled: _Compiled, params: Mapping[str, Any]
    ) -> Sequence[Any] | Mapping[str, Any]:
        """The arguments in the dialect's paramstyle: by position, or (psycopg's cursors) by name."""
        if compiled.positional is not None:
            assert compiled.in_order is not None
            return compiled.in_order(params)
        values = {**compiled.fixed, **params} if compiled.fixed else dict(params)
        for name, process in compiled.binds:
            values[name] = process(values[name])
        return values

    def _for(self, dialect: Dialect, params: Mapping[str, Any]) -> _Compiled:
        last = self._last
        if last is not None and last[0]() is dialect:
            by_keys = last[1]
        else:
            by_keys = self._compiled.setdefault(dialect, {})
            self._last = (ref(dialect), by_keys)
        keys = frozenset(params) if self._by_columns else _NO_KEYS
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
            if bind.value is not None and not bind.required:  # an INSERT's are REQUIRED
                fixed[name] = bind.value
            process = bind.type.dialect_impl(dialect).bind_processor(dialect)
            if process is not None:
                binds.append((name, process))
        positional = tuple(compiled.positiontup or ()) if compiled.positional else None
        results: list[tuple[int, Processor, bool]] = []
        if isinstance(statement, SelectBase):
            for position, column in enumerate(statement.selected_columns):
                process = column.type.dialect_impl(dialect).result_processor(dialect, None)
                if process is not None:
                    results.append((position, process, _keeps_none(process)))
        sql = compiled.string
        libpq = None
        order = positional
        if dialect.driver == "psycopg":
            from bcfleet.store.pq_pipeline import numbered  # psycopg is loaded already

            libpq = numbered(sql)
            order = libpq[1]
        in_order = None if order is None else _in_order(order, compiled, dialect, fixed)
        return _Compiled(
            sql, positional, tuple(binds), fixed, tuple(results), is_change(sql), libpq, in_order
        )


CHANGED_FLAG = "bcfleet_changed"
_DML = ("INSERT", "UPDATE", "DELETE")


def is_change(statement: str) -> bool:
    """Whether a statement is an INSERT, UPDATE or DELETE (one that changes the rows it touches)."""
    return statement.lstrip()[:6].upper() in _DML


def note_change(connection: Connection, cursor: Any) -> None:
    """A change statement just ran: its connection's transaction changed a row unless it touched none.

    A statement waiting in a pipeline has no rowcount yet (-1) and counts as a change.
    """
    if (cursor.rowcount or 0) != 0:
        connection.info[CHANGED_FLAG] = True


_OWN_LISTENERS: WeakSet[Callable[..., Any]] = WeakSet()


def own_listener(listener: F) -> F:
    """Mark a cursor-execution listener as bcfleet's own: _execute does its work itself.

    Its own are the changed-row flag (note_change, after every change statement) and the
    pipeline's watch (watch_pipelines: it never acts on a DriverStatement, which ends or joins
    the pipeline itself).
    """
    _OWN_LISTENERS.add(listener)
    return listener


_PLAIN = "_bcfleet_plain_cursor"


def _plain(connection: Connection) -> bool:
    """Whether a statement may go straight to the cursor: nothing listens to its execution but
    bcfleet's own listeners, nothing is echoed, no dialect event runs it.

    Asked once per Connection (SQLAlchemy's dispatch costs a statement about 5 us): a listener
    added to the engine while a connection is open is seen by that connection's SQLAlchemy
    statements at once, and by its DriverStatements from the next connection on.
    """
    verdict: bool | None = connection.__dict__.get(_PLAIN)
    if verdict is None:
        verdict = quiet(connection) and _engine_plain(connection)
        connection.__dict__[_PLAIN] = verdict
    return verdict


def _engine_plain(connection: Connection) -> bool:
    """Whether only bcfleet's own listeners listen to the cursor executions of the connection's
    engine: walked once per engine and kept while the pool's engine has as many listeners.

    Own listeners are attached when the engine is made and never removed, so with as many
    listeners as when the verdict was kept, the set holds a foreign one exactly when it did
    then (a test's listener added, or removed and another added, changes or keeps it alike).
    Listeners go on the pool's engine (fleet.engine): one attached to an option engine or to
    a single connection is not counted in the key.
    """
    engine = connection.engine
    key = _listeners_key(connection)
    kept: tuple[tuple[int, int], bool] | None = engine.__dict__.get(_PLAIN)
    if kept is not None and kept[0] == key:
        return kept[1]
    dispatch = connection.dispatch
    verdict = all(
        listener in _OWN_LISTENERS
        for listeners in (dispatch.before_cursor_execute, dispatch.after_cursor_execute)
        for listener in listeners
    )
    engine.__dict__[_PLAIN] = (key, verdict)
    return verdict


def _listeners_key(connection: Connection) -> tuple[int, int]:
    """How many listen to the cursor executions of the connection's pool engine: the key its
    verdict is kept under (_engine_plain)."""
    engine = connection.engine
    base = getattr(engine, "_proxied", engine)  # an option engine's (the writer's) pool engine
    listening = base.dispatch
    return (len(listening.before_cursor_execute), len(listening.after_cursor_execute))


_ROUTE = "_bcfleet_route"
_STRAIGHT = "straight"  # SQLite, only bcfleet's own listeners: the cursor called in place
_LIBPQ = "libpq"  # psycopg, only bcfleet's own listeners: pq_pipeline (_by_libpq)
_PIPELINED = "pipelined"  # psycopg with other listeners: psycopg's pipeline and cursors
_CURSORS = "cursors"  # any other: the driver's cursors, through _execute, nothing waits


def _route(connection: Connection) -> str:
    """How the connection's DriverStatements go (_STRAIGHT, _LIBPQ, _PIPELINED or _CURSORS),
    kept in the Connection as _plain's verdict is, for the Connection's life."""
    route: str | None = connection.__dict__.get(_ROUTE)
    if route is None:
        plain = _plain(connection)
        if _pipelines(connection):
            route = _LIBPQ if plain else _PIPELINED
        else:
            route = _STRAIGHT if plain and connection.dialect.positional else _CURSORS
        connection.__dict__[_ROUTE] = route
    return route


def _straight(
    connection: Connection, compiled: _Compiled, params: Mapping[str, Any]
) -> tuple[list[tuple[Any, ...]], int]:
    """Run a statement on SQLite's cursor, only bcfleet's own listeners on the engine: its rows
    (converted by their column types) and rowcount; _execute's and _read's work done in place."""
    assert compiled.in_order is not None  # SQLite's arguments are positional
    arguments = compiled.in_order(params)
    fairy = connection.connection  # raises as SQLAlchemy does on an invalidated connection
    driver: Any = fairy.dbapi_connection
    cursor = None
    try:
        cursor = driver.cursor()  # a closed database refuses even this
        cursor.execute(compiled.sql, arguments)
    except BaseException as exc:
        if cursor is not None:
            with suppress(Exception):  # the statement's own error is the one to raise
                cursor.close()
        raise_wrapped(connection, exc, compiled.sql, arguments, cursor)
    try:
        rows: list[tuple[Any, ...]] = cursor.fetchall() if cursor.description is not None else []
        rowcount: int = cursor.rowcount
    finally:
        cursor.close()
    if compiled.changes and (rowcount or 0) != 0:  # as note_change
        fairy.info[CHANGED_FLAG] = True
    if compiled.results and rows:
        rows = [_converted(row, compiled.results) for row in rows]
    return rows, rowcount


def _execute(
    connection: Connection, cursor: Any, sql: str, arguments: Any, *, changes: bool = False
) -> None:
    """Run a statement on the cursor, as Connection._cursor_execute would.

    When only bcfleet's own listeners would fire (_plain), the driver's cursor is called
    directly and their work done here (changes: the statement is one is_change names); a
    driver error is raised as SQLAlchemy wraps it either way.
    """
    if not _plain(connection):
        cursor_execute(connection, cursor, sql, arguments)
        return
    try:
        cursor.execute(sql, arguments)
    except BaseException as exc:
        raise_wrapped(connection, exc, sql, arguments, cursor)
    if changes:
        note_change(connection, cursor)


class _Queued:
    """A pipeline open on a connection: what was sent on its cursor is not answered yet."""

    __slots__ = ("cursor", "driver", "pipeline", "readers")

    def __init__(self, driver: Any, pipeline: Any, cursor: Any) -> None:
        self.driver = driver
        self.pipeline = pipeline
        self.cursor = cursor
        self.readers: list[Any] = []  # cursors of statements in it whose rows will be read


_QUEUED = "bcfleet.queued"

if TYPE_CHECKING:
    from bcfleet.store.pq_pipeline import PqPipeline

    Waiting: TypeAlias = _Queued | PqPipeline  # a pipeline open on a connection, either kind


def _by_libpq(connection: Connection) -> bool:
    """Whether this connection's DriverStatements go on psycopg's libpq wrapper (pq_pipeline):
    PostgreSQL through psycopg, and nothing but bcfleet's own listeners to see them (_plain)."""
    return (connection.__dict__.get(_ROUTE) or _route(connection)) is _LIBPQ


def _send_on_libpq(
    connection: Connection,
    compiled: _Compiled,
    params: Mapping[str, Any],
    *,
    read: bool,
    unread_change: bool = False,
) -> tuple[PqPipeline, Answer | None, Sequence[Any]]:
    """Queue a compiled statement in the connection's libpq pipeline (opened, with the
    transaction's BEGIN when pending): the pipeline, its Answer when read, its values ($n order).

    unread_change: a change statement marks the transaction changed now (no rowcount until
    answered). A driver error (the connection lost while sending) is raised as SQLAlchemy wraps it.
    """
    assert compiled.libpq is not None and compiled.in_order is not None
    fairy = connection.connection  # raises as SQLAlchemy does on an invalidated connection
    info = fairy.info
    pipeline: Waiting | None = info.get(_QUEUED)
    if pipeline is None or pipeline.driver is not fairy.dbapi_connection:  # as _queued_on
        pipeline = _waiting(connection) or _open_pipeline(connection)
    assert not isinstance(pipeline, _Queued)  # the kind is the connection's (_route), for its life
    values = compiled.in_order(params)
    try:
        answer = pipeline.send(compiled.libpq[0], values, read=read)
    except connection.dialect.loaded_dbapi.Error as exc:
        raise_wrapped(connection, exc, compiled.sql, values)
    if unread_change and compiled.changes:
        info[CHANGED_FLAG] = True
    return pipeline, answer, values


def _discard(handle: Any) -> None:
    """A statement's cursor closed (an Answer holds nothing to close)."""
    if not isinstance(handle, Answer):
        handle.close()


def _pipelines(connection: Connection) -> bool:
    """Whether statements can wait in a pipeline here: psycopg with a libpq that has pipelines."""
    return connection.dialect.driver == "psycopg" and _libpq_pipelines()


@cache
def _libpq_pipelines() -> bool:
    import psycopg  # only asked on a psycopg connection: loaded already

    return bool(psycopg.Pipeline.is_supported())


def _queued_on(connection: Connection) -> Waiting | None:
    if connection.invalidated:  # lost: no pipeline to end, and its info is gone with it
        return None
    fairy = connection.connection
    queued: Waiting | None = fairy.info.get(_QUEUED)
    # psycopg's connection is the driver's own: its dbapi_connection is its driver_connection
    if queued is not None and queued.driver is not fairy.dbapi_connection:
        fairy.info.pop(_QUEUED, None)  # left by a connection the pool has replaced
        return None
    return queued


def _open_pipeline(connection: Connection) -> Waiting:
    """A pipeline on the connection: on libpq when only bcfleet listens (_by_libpq), else psycopg's."""
    driver: Any = connection.connection.driver_connection
    if _by_libpq(connection):
        from bcfleet.store.pq_pipeline import PqPipeline  # psycopg is loaded already

        try:
            on_libpq = PqPipeline(driver)
        except connection.dialect.loaded_dbapi.Error as exc:
            raise_wrapped(connection, exc)
        connection.info[_QUEUED] = on_libpq
        return on_libpq
    pipeline = driver.pipeline()
    try:
        pipeline.__enter__()
    except connection.dialect.loaded_dbapi.Error as exc:
        raise_wrapped(connection, exc)
    queued = _Queued(driver, pipeline, driver.cursor())
    connection.info[_QUEUED] = queued
    return queued


def _answer(
    connection: Connection,
    queued: Waiting,
    statement: str | None = None,
    parameters: Any = None,
) -> None:
    """Send what waits and read every answer (psycopg raises the first error); the pipeline ends.

    A driver error is raised as SQLAlchemy wraps it (a lost connection invalidated), named by
    the statement that made the answers needed.
    """
    try:
        _end_pipeline(connection, queued)
    except connection.dialect.loaded_dbapi.Error as exc:
        cursor = queued.readers[-1] if isinstance(queued, _Queued) and queued.readers else None
        raise_wrapped(connection, exc, statement, parameters, cursor)


def _end_pipeline(connection: Connection, queued: Waiting) -> None:
    """Sync and leave pipeline mode, raising the driver's own first error."""
    connection.info.pop(_QUEUED, None)
    if not isinstance(queued, _Queued):
        queued.end()
        return
    try:
        queued.pipeline.__exit__(None, None, None)
    finally:
        queued.cursor.close()


def _send_commit(connection: Connection) -> None:
    """Send COMMIT behind the statements waiting on the connection, in their round trip.

    The driver's commit() that follows finds the transaction ended and sends nothing.
    """
    _begin_pending(connection)  # a transaction that ran nothing: nothing to send
    queued = _queued_on(connection)
    if queued is not None:
        _send_text(connection, queued, "COMMIT")
        _answer(connection, queued, "COMMIT", ())


def _abandon(connection: Connection) -> None:
    """End the pipeline of a transaction being rolled back: the answers no longer matter.

    Else the ROLLBACK would be queued behind them and the connection go back to the pool in
    pipeline mode.
    """
    _begin_pending(connection)
    queued = _queued_on(connection)
    if queued is not None:
        with suppress(connection.dialect.loaded_dbapi.Error):  # the rollback's cause is raised
            _end_pipeline(connection, queued)


def watch_pipelines(engine: Any) -> None:
    """End a connection's pipeline before anything not sent through it: another statement, COMMIT, ROLLBACK."""

    # retval=True: registered as it is, not wrapped, so _plain knows it for bcfleet's own.
    @event.listens_for(engine, "before_cursor_execute", retval=True)
    @own_listener
    def _before(
        conn: Connection, cursor: Any, statement: str, parameters: Any, *_: Any
    ) -> tuple[str, Any]:
        info = conn.info  # a connection running a statement is valid
        if _QUEUED in info or _BEGIN_PENDING in info:  # nearly never: nothing waits
            _before_statement(conn, cursor)
        return statement, parameters

    @event.listens_for(engine, "invalidate")
    def _lost(_dbapi_connection: Any, record: Any, _exception: Any) -> None:
        # The connection is gone and its pipeline with it: end it quietly now, not at
        # garbage collection (where psycopg would log the failed sync).
        record.info.pop(_BEGIN_PENDING, None)
        queued = record.info.pop(_QUEUED, None)
        if queued is not None:
            with suppress(engine.dialect.loaded_dbapi.Error):
                if isinstance(queued, _Queued):
                    queued.pipeline.__exit__(None, None, None)
                else:
                    queued.abandon()

    event.listen(engine, "begin", _note_begin)
    event.listen(engine, "commit", _send_commit)
    event.listen(engine, "rollback", _abandon)


def _before_statement(connection: Connection, cursor: Any) -> None:
    """A statement not sent through the pipeline is about to run: BEGIN first, or the pipeline ended."""
    # A driver error raised here is wrapped by SQLAlchemy, as the statement's would be.
    queued = _queued_on(connection)
    if queued is None:
        if _begin_pending(connection):  # begun as psycopg would begin it: BEGIN, then the
            # statement on the statement's own cursor, unless it is a server-side one
            # (yield_per), whose execute would declare a cursor for it
            plain: Any = (
                connection.connection.driver_connection if hasattr(cursor, "name") else cursor
            )
            plain.execute("BEGIN")
    elif not (
        isinstance(queued, _Queued) and (cursor is queued.cursor or cursor in queued.readers)
    ):
        _end_pipeline(connection, queued)


def _note_begin(connection: Connection) -> None:
    """A transaction begins: its BEGIN is sent with its first statement.

    The driver is in autocommit mode (store/engine.py), so it begins nothing of its own; its
    commit() and rollback() end the transaction begun here, as they go by the server's
    transaction status. When the first statement is a DriverStatement, BEGIN waits in the
    pipeline with it (one round trip); before any other, it is sent on that statement's cursor
    as psycopg would send it. A transaction that runs nothing sends nothing. On a driver
    connection that begins its own, nothing is sent.
    """
    driver = connection.connection.driver_connection
    if driver is not None and driver.autocommit:
        connection.info[_BEGIN_PENDING] = driver


_BEGIN_PENDING = "bcfleet.begin_pending"


def _begin_pending(connection: Connection) -> bool:
    """Whether the transaction's BEGIN is yet to be sent; the caller sends it (or ends the transaction)."""
    if connection.invalidated:
        return False
    driver = connection.info.pop(_BEGIN_PENDING, None)
    return driver is not None and driver is connection.connection.driver_connection


def _waiting(connection: Connection) -> Waiting | None:
    """The connection's pipeline; opened with the transaction's BEGIN in it when that is pending."""
    queued = _queued_on(connection)
    if queued is None and _begin_pending(connection):
        queued = _open_pipeline(connection)
        _send_text(connection, queued, "BEGIN")
    return queued


def _send_text(connection: Connection, queued: Waiting, sql: str) -> None:
    """BEGIN or COMMIT into the pipeline, either kind."""
    if isinstance(queued, _Queued):
        _execute(connection, queued.cursor, sql, ())
        return
    try:
        queued.send_text(sql.encode("ascii"))
    except connection.dialect.loaded_dbapi.Error as exc:
        raise_wrapped(connection, exc, sql, ())


_CONNECTION = "bcfleet.driver_connection"
PINNED_CONNECTION = "bcfleet.pinned_connection"
# libpq's PGRES_TUPLES_OK (psycopg.pq.ExecStatus.TUPLES_OK), not imported from psycopg so that
# an SQLite process never loads the driver (tests/store/test_driver_sql.py checks the value).
_TUPLES_OK = 2


def core_connection(on: Session | Connection) -> Connection:
    """The connection to run Core reads on: a connection itself, or a session's after a flush,
    as the ORM's autoflush would, so rows the session added are seen."""
    if isinstance(on, Connection):
        return on
    on.flush()
    return connection_of(on)


def connection_of(session: Session) -> Connection:
    """The connection of the session's transaction, kept in session.info while that one is active.

    session.connection() walks the ORM's transaction states on every call (about 1 us, against
    0.25 us here: a few microseconds of a placement); a transaction no longer active (committed,
    rolled back after a failed flush) is never handed out. A session of
    uow.connection_write_session answers the connection whose transaction it joins
    (PINNED_CONNECTION), without beginning its own, until the ORM is in a savepoint: then the
    session's own answer, which emits the SAVEPOINT first, so that rolling it back undoes the
    driver's statements made inside it too.
    """
    nested = session.get_nested_transaction()
    pinned: Connection | None = session.info.get(PINNED_CONNECTION)
    if pinned is not None and nested is None:
        return pinned
    # A savepoint's connection is asked of the session (which emits the SAVEPOINT), and kept
    # for that savepoint only: the connection kept for the transaction around it would let a
    # statement run before the SAVEPOINT is sent, and a rollback to it would not undo it.
    transaction = nested or session.get_transaction()
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
    session.info[_CONNECTION] = (transaction or session.get_transaction(), connection)
    return connection


def _has_rows(cursor: Any) -> bool:
    """Whether the statement returned rows: psycopg's result status (its description builds
    a column object per column on every read), else the DB-API description."""
    result: Any = getattr(cursor, "pgresult", _NOT_PSYCOPG)
    if result is _NOT_PSYCOPG:
        return cursor.description is not None
    return result is not None and result.status == _TUPLES_OK


_NOT_PSYCOPG = object()


def _converted(
    row: tuple[Any, ...], results: tuple[tuple[int, Processor, bool], ...]
) -> tuple[Any, ...]:
    values = list(row)
    for position, process, keeps_none in results:
        value = values[position]
        if value is not None or not keeps_none:
            values[position] = process(value)
    return tuple(values)


def _keeps_none(process: Processor) -> bool:
    """Whether a column type's processor leaves None as it is (most do; JSON's writes 'null'),
    so that a None value need not be handed to it."""
    try:
        return process(None) is None
    except Exception:  # noqa: BLE001 - a processor that refuses None is given it as before
        return False


Binder = Callable[[Mapping[str, Any]], Sequence[Any]]


def _in_order(
    names: tuple[str, ...], compiled: SQLCompiler, dialect: Dialect, fixed: Mapping[str, Any]
) -> Binder:
    """The statement's arguments in the driver's order, each converted by its bind's column type,
    in one pass: a value is taken by C (itemgetter), a None its type keeps is passed by, and a
    converting type remembers its last immutable value (a placement's time is bound four times)."""
    converters: dict[str, tuple[Processor, bool]] = {}
    for name, bind in compiled.binds.items():
        impl = bind.type.dialect_impl(dialect)
        process = impl.bind_processor(dialect)
        if process is not None:
            converters[name] = (_remembering(process, impl), _keeps_none(process))
    take = _taker(names)
    steps = tuple(
        (position, *converters[name]) for position, name in enumerate(names) if name in converters
    )
    if not steps:
        if not fixed:
            return take
        return lambda params: take({**fixed, **params})

    def in_order(params: Mapping[str, Any]) -> Sequence[Any]:
        values = list(take({**fixed, **params} if fixed else params))
        for position, convert, keeps_none in steps:
            value = values[position]
            if value is not None or not keeps_none:
                values[position] = convert(value)
        return values

    return in_order


def _taker(names: tuple[str, ...]) -> Binder:
    """The values of `names`, in order, as a tuple."""
    if len(names) > 1:
        return itemgetter(*names)
    if names:
        (name,) = names
        return lambda params: (params[name],)
    return lambda _params: ()


# Values a converter may remember by identity: immutable, so the same object converts alike.
_IMMUTABLE = frozenset({datetime, date, str, int, float})


def _remembering(process: Processor, impl: Any) -> Processor:
    """A bind processor that converts the same immutable object once in a row; the processor
    itself for a type whose values are not such objects (a JSON document, an enum member).

    One per processor: columns whose type hands out one processor for all (store/types.py's
    UTCDateTime) share what it remembers, across statements too."""
    try:  # a TypeDecorator's own is `object`: its impl's says what it stores
        python_type = getattr(impl, "impl_instance", impl).python_type
    except NotImplementedError:
        return process
    if python_type not in _IMMUTABLE:
        return process
    shared: Processor | None = getattr(process, _REMEMBERED, None)
    if shared is None:
        shared = _remembered(process)
        with suppress(AttributeError):  # a compiled processor takes no attribute: its own
            setattr(process, _REMEMBERED, shared)  # kept in the processor, gone with it
    return shared


def _remembered(process: Processor) -> Processor:
    last: tuple[Any, Any] = (_NOT_SEEN, None)

    def remembered(value: Any) -> Any:
        nonlocal last
        seen = last  # one tuple, replaced whole: another thread sees the old pair or the new
        if value is seen[0]:
            return seen[1]
        converted = process(value)
        if type(value) in _IMMUTABLE:
            last = (value, converted)
        return converted

    return remembered


_REMEMBERED = "_bcfleet_remembered"
_NOT_SEEN = object()


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


_HEARD = "_bcfleet_heard"


def ask_again(connection: Connection) -> None:
    """For a connection that outlives one call (uow's kept writer): forget what _plain and
    _route kept when what may hear its statements changed since its last call (the engine's
    cursor listeners counted as _engine_plain counts them, echo, dialect events), so its next
    call's DriverStatements hear a listener added since, as a new connection's would."""
    heard = (quiet(connection), _listeners_key(connection))
    if connection.__dict__.get(_HEARD) != heard:
        connection.__dict__[_HEARD] = heard
        connection.__dict__.pop(_PLAIN, None)
        connection.__dict__.pop(_ROUTE, None)

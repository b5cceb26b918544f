"""Engines for SQLite (WAL checkpointed off the commit path, foreign keys, busy timeout, BEGIN IMMEDIATE
for writers, the file checked at each BEGIN: store/file_identity.py) and PostgreSQL."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import URL, Connection, Engine, create_engine, event, make_url, text
from sqlalchemy.exc import InvalidatePoolError

from bcfleet.store import stored_json, wal_checkpoints
from bcfleet.store.driver_sql import (
    DriverStatement,
    is_change,
    note_change,
    own_listener,
    watch_pipelines,
)
from bcfleet.store.file_identity import FileIdentity
from bcfleet.store.sqlalchemy_seam import check_sqlalchemy

if TYPE_CHECKING:  # `fleet hosts list` reads on Core alone: the ORM is not imported to run it
    from sqlalchemy.orm import Session

WRITE_OPTION = "bcfleet_write"


def normalize_url(url: str) -> str:
    """Accept the short forms people type: a bare path, postgres://, postgresql://.

    A bare path is the file's name as it is: a ?, # or % in it is escaped, not read as a URL's
    query, fragment or escape (a.db?x named the file a.db).
    """
    if "://" not in url:
        return URL.create("sqlite", database=url).render_as_string(hide_password=False)
    if url.startswith("postgres://"):
        return "postgresql+psycopg://" + url[len("postgres://") :]
    if url.startswith("postgresql://"):
        return "postgresql+psycopg://" + url[len("postgresql://") :]
    return url


def _track_changes(engine: Engine) -> None:
    """Mark a connection that changed a row, so a write transaction bumps the revision only then."""

    @event.listens_for(engine, "after_cursor_execute")
    @own_listener
    def _after(conn: Any, cursor: Any, statement: str, *_args: Any) -> None:
        if is_change(statement):
            note_change(conn, cursor)


def is_sqlite(engine: Engine) -> bool:
    return engine.dialect.name == "sqlite"


BUSY_TIMEOUT_S = 30.0
"""How long an SQLite connection waits for another process's lock before it says busy."""

SQLITE_CACHE_KIB = 409_600
"""The page cache (PRAGMA cache_size) of a transaction that reads the whole fleet, 400 MiB rather
than SQLite's 2 MiB: the vps.usage tick of 100,000 hosts otherwise reads most pages from the file
again for each statement (an instance 19.6 → 42.7 µs from 1,000 hosts). The cache grows only as
pages are read, so a small fleet pays nothing. It is the transaction's, not every connection's:
the connection is given back to the pool with SQLite's own 2 MiB (and its pages let go of), so a
server's pooled connections never hold 400 MiB each."""
SQLITE_DEFAULT_CACHE = -2000  # SQLite's own: 2,000 KiB
_LARGE_CACHE = "bcfleet_large_cache"


def large_page_cache(session: Session) -> None:
    """Give this transaction's SQLite connection the SQLITE_CACHE_KIB page cache, until the
    connection is back in the pool; nothing on PostgreSQL (its cache is the server's)."""
    if session.get_bind().dialect.name != "sqlite":
        return
    fairy = session.connection().connection
    if not fairy.info.get(_LARGE_CACHE):
        fairy.info[_LARGE_CACHE] = True
        cursor = fairy.cursor()
        cursor.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")  # negative: KiB
        cursor.close()


def make_engine(url: str, *, echo: bool = False, busy_timeout_s: float = BUSY_TIMEOUT_S) -> Engine:
    """An engine whose transactions behave the same on SQLite and PostgreSQL; UNSUPPORTED on a
    SQLAlchemy version the driver-level statements were not written for (sqlalchemy_seam)."""
    check_sqlalchemy()
    url = normalize_url(url)
    if url.startswith("sqlite"):
        engine = _sqlite_engine(url, echo, busy_timeout_s)
    else:
        # The driver in autocommit mode: each transaction's BEGIN is sent by watch_pipelines,
        # with the first statement, rather than by psycopg in a round trip of its own.
        # psycopg prepares nothing itself: store/pq_pipeline.py prepares the hot statements,
        # and psycopg answers a ROLLBACK (or a DROP, an ALTER) with DEALLOCATE ALL whenever it
        # holds prepared statements of its own, which would take those with them.
        engine = create_engine(
            url,
            echo=echo,
            pool_size=5,
            max_overflow=10,
            isolation_level="AUTOCOMMIT",
            connect_args={"prepare_threshold": None},
            json_serializer=stored_json.dump,
        )
        _ping_after_idle(engine)
        watch_pipelines(engine)
    _track_changes(engine)
    return engine


def holds_large_cache(connection: Connection) -> bool:
    """Whether the connection's transaction took large_page_cache's cache: it must go back to the
    pool (whose checkin gives it SQLite's own again) rather than be kept for another call."""
    return bool(connection.info.get(_LARGE_CACHE))


PING_AFTER_IDLE_S = 10.0
_IDLE_SINCE = "bcfleet_idle_since"


def _ping_after_idle(engine: Engine) -> None:
    """Ping a pooled PostgreSQL connection before use only when it sat idle PING_AFTER_IDLE_S or more.

    SQLAlchemy's pool_pre_ping pings on every checkout: a round trip (and the driver's work for
    it) in every transaction, about a fifth of a placement. A connection left idle is the one a
    restart, a failover or an idle timeout may have closed, and it is pinged; when the ping finds
    it dead, the pool drops every connection as old as it and the call gets a new one. One in
    steady use that dies under a call is the fault rules' (store/faults.py: the call runs once
    more when nothing of it can have been saved, on a new connection).
    """

    @event.listens_for(engine, "checkin")
    def _checked_in(_dbapi_connection: Any, record: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _checked_out(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get(_IDLE_SINCE)
        if since is None or time.monotonic() - since < PING_AFTER_IDLE_S:
            return
        try:
            cursor = dbapi_connection.cursor()
            try:
                cursor.execute("SELECT 1")
            finally:
                cursor.close()
            dbapi_connection.rollback()
        except Exception as error:
            if engine.dialect.is_disconnect(error, dbapi_connection, None):  # type: ignore[arg-type]
                raise InvalidatePoolError(str(error)) from error
            raise


_BEGIN = DriverStatement(text("BEGIN"))
_BEGIN_IMMEDIATE = DriverStatement(text("BEGIN IMMEDIATE"))


def _checked_creator(
    url: URL, identity: FileIdentity, connect_args: dict[str, Any]
) -> Callable[[], sqlite3.Connection]:
    """The pool's way to open a connection, asking first whether the file first opened is still
    at its path: opening a path SQLite cannot find creates an empty file there, so a deleted
    file is said deleted rather than replaced by a new, empty one. (A dialect event would do the
    same, but any dialect event sends every driver-level statement through SQLAlchemy.)"""
    dialect = url.get_dialect()
    dbapi = dialect.import_dbapi()  # the driver module SQLAlchemy itself would call
    cargs, cparams = dialect().create_connect_args(url)
    cparams = {**cparams, **connect_args}

    def connect() -> sqlite3.Connection:
        identity.check()
        return cast(sqlite3.Connection, dbapi.connect(*cargs, **cparams))

    return connect


def bind_null_plainly() -> None:
    """Have Python's sqlite3 bind None from its adapters' table.

    The driver binds a value whose type is not exactly int, float, str or bytearray through
    its adapter lookup, None too: with no adapter registered for the type, it asks the
    protocol class for __adapt__, which makes and drops an AttributeError, for every NULL
    bound (ten in a placement). With one registered it calls that instead: `{}.get`, a C
    method, answers None for None. The value bound is None as before (SQL NULL), and no
    adapter of a base type is registered, so exact ints, floats and strs skip the lookup
    as they did.
    """
    null: Any = {}.get
    sqlite3.register_adapter(type(None), null)


def _sqlite_engine(url: str, echo: bool, busy_timeout_s: float) -> Engine:
    memory = url in ("sqlite://", "sqlite:///:memory:")
    bind_null_plainly()
    # Connections are pooled: closing the last one of a WAL database checkpoints it, which is
    # far too slow to do after every call.
    # Text that is not JSON reads as stored_json.UNREADABLE, not an error ending the whole read.
    kwargs: dict[str, Any] = {
        "connect_args": {"check_same_thread": False, "timeout": busy_timeout_s},
        "json_deserializer": stored_json.load,
        "json_serializer": stored_json.dump,
    }
    if not memory:
        kwargs.update(pool_size=8, max_overflow=8)
    parsed = make_url(url)
    named = not memory and not parsed.query.get("uri")  # a plain file path
    identity = FileIdentity(str(parsed.database)) if named else None
    if identity is not None:
        kwargs["creator"] = _checked_creator(parsed, identity, kwargs["connect_args"])
    engine = create_engine(url, echo=echo, **kwargs)
    checkpoints = wal_checkpoints.attach(engine, str(engine.url.database)) if named else None

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from the driver so BEGIN is ours (SQLAlchemy's
        # documented recipe for pysqlite): savepoints then work, and writers can BEGIN IMMEDIATE.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        if not memory:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={round(busy_timeout_s * 1000)}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        if checkpoints is not None:  # the log is checkpointed off the commit path
            cursor.execute(f"PRAGMA wal_autocheckpoint={wal_checkpoints.BACKSTOP_PAGES}")
        cursor.close()
        if identity is not None:
            identity.connected()

    @event.listens_for(engine, "checkin")
    def _on_checkin(dbapi_connection: Any, record: Any) -> None:
        if record.info.pop(_LARGE_CACHE, False):  # large_page_cache's, for one transaction
            dbapi_connection.execute(f"PRAGMA cache_size={SQLITE_DEFAULT_CACHE}")

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # A writer takes the write lock up front: two deferred writers upgrading at once
        # would otherwise deadlock with SQLITE_BUSY, which busy_timeout cannot wait out.
        # On the driver's cursor: SQLAlchemy's exec_driver_sql cost a placement more than BEGIN.
        if identity is not None:  # never read from or write into a file deleted or replaced
            identity.check()
        immediate = connection.get_execution_options().get(WRITE_OPTION, False)
        (_BEGIN_IMMEDIATE if immediate else _BEGIN).run(connection, {})

    return engine

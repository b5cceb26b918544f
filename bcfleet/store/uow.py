"""Units of work: one transaction per API call, the state revision bumped by every writer that changed a row.

SQLModel (with pydantic and the ORM) is imported by the first session made: a read that runs on
Core alone (read_connection) never imports it.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from sqlalchemy import Connection, Engine, text

from bcfleet.store import wal_checkpoints
from bcfleet.store.driver_sql import (
    CHANGED_FLAG,
    PINNED_CONNECTION,
    DriverStatement,
    ask_again,
    connection_of,
)
from bcfleet.store.engine import (
    PING_AFTER_IDLE_S,
    WRITE_OPTION,
    holds_large_cache,
    is_sqlite,
)
from bcfleet.store.faults import commit_is_next, lost_connections
from bcfleet.store.models import load_all

if TYPE_CHECKING:
    from sqlmodel import Session

_WRITER = "_bcfleet_writer"


def writer_engine(engine: Engine) -> Engine:
    """The engine with the writer's option (BEGIN IMMEDIATE on SQLite), made once per engine.

    Kept on the engine itself, so it goes when the engine goes.
    """
    writer: Engine | None = getattr(engine, _WRITER, None)
    if writer is None:
        writer = engine.execution_options(**{WRITE_OPTION: True})
        setattr(engine, _WRITER, writer)
    return writer


@contextmanager
def write_session(engine: Engine, *, bump_revision: bool = True) -> Iterator[Session]:
    """A session in one write transaction: committed on success, rolled back on any error.

    A lost connection raises DatabaseUnavailableError saying whether COMMIT had been sent
    (store/faults.py has the rule for running the call again).
    """
    from sqlmodel import Session

    load_all()  # a flush orders the tables it writes by their foreign keys: all must be known
    bound = writer_engine(engine)
    sent = _CommitSent()
    with (
        lost_connections(committing=sent),
        Session(bound, expire_on_commit=False) as session,
        session.begin(),
    ):
        # leaving session.begin() sends COMMIT (with the statements sent before it)
        rows = yield from _written(session, session.connection(), bump_revision, sent)
    wal_checkpoints.committed(engine, rows)
    _run_after_commit(session)


@contextmanager
def connection_write_session(engine: Engine, *, bump_revision: bool = True) -> Iterator[Session]:
    """write_session with the transaction begun and committed on a Core connection: the ORM
    session joins it only when the ORM is used (a query, an object added and flushed).

    A hot call that writes through DriverStatements alone (a placement) pays none of the
    session's transaction bookkeeping: its statements run on the connection pinned in the
    session (driver_sql.connection_of). Rolled back on any error, as write_session is.
    """
    from sqlmodel import Session

    load_all()
    sent = _CommitSent()
    with (
        lost_connections(committing=sent),
        _kept_writer(engine) as connection,
        connection.begin(),
    ):
        # rollback_only: the session never commits the connection's transaction; a failed
        # flush rolls it back. Closed before COMMIT, it leaves the transaction as it is.
        session = Session(connection, expire_on_commit=False, join_transaction_mode="rollback_only")
        session.info[PINNED_CONNECTION] = connection
        try:
            # leaving connection.begin() sends COMMIT
            rows = yield from _written(session, connection, bump_revision, sent)
        finally:
            if session.in_transaction() or session.identity_map:  # else it holds nothing
                session.close()
    wal_checkpoints.committed(engine, rows)
    _run_after_commit(session)


_AFTER_COMMIT = "bcfleet_after_commit"


def after_commit(session: Session, callback: Callable[[], None]) -> None:
    """Run `callback` once the write transaction of `session` has committed; never when it
    rolls back. In a transaction() handle, once the enclosing transaction has committed."""
    session.info.setdefault(_AFTER_COMMIT, []).append(callback)


def _run_after_commit(session: Session) -> None:
    for callback in session.info.pop(_AFTER_COMMIT, ()):
        callback()


class _KeptWriter:
    """One writer connection an engine keeps between hot calls, for one call at a time."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.connection: Connection | None = None
        self.pid = os.getpid()
        self.idle_since = 0.0


_KEPT = "_bcfleet_kept_writer"
# As long as the pool lets a connection sit before pinging it: a connection kept idle longer is
# given back, and the next call takes one from the pool (on PostgreSQL, pinged).
KEEP_IDLE_S = PING_AFTER_IDLE_S


@contextmanager
def _kept_writer(engine: Engine) -> Iterator[Connection]:
    """The engine's kept writer connection when no other call uses it, else one from the pool.

    A connection taken from the pool and given back costs a placement about a twelfth of its
    work (the checkout, its events and the checkin). The kept one goes back to the pool when it
    sat idle KEEP_IDLE_S or more (the pool pings such a one), when the call failed, when its
    transaction took large_page_cache's cache, and at release_kept_writer (Fleet.close); a
    process forked with one never uses its parent's.
    """
    kept: _KeptWriter | None = engine.__dict__.get(_KEPT)
    if kept is None or kept.pid != os.getpid():
        kept = _new_kept_writer(engine)
    if not kept.lock.acquire(blocking=False):  # another thread's call has it: take the pool's
        with writer_engine(engine).connect() as connection:
            yield connection
        return
    try:
        connection = _kept_or_new(kept, engine)
        try:
            yield connection
        except BaseException:
            connection.close()
            raise
        if holds_large_cache(connection):
            connection.close()
            return
        kept.connection = connection
        kept.idle_since = time.monotonic()
    finally:
        kept.lock.release()


_MAKING = threading.Lock()


def _new_kept_writer(engine: Engine) -> _KeptWriter:
    """The engine's keeper for this process, made once: two threads' first calls at once share
    one, so no kept connection is left in a keeper nobody holds."""
    with _MAKING:
        kept: _KeptWriter | None = engine.__dict__.get(_KEPT)
        if kept is None or kept.pid != os.getpid():
            kept = engine.__dict__[_KEPT] = _KeptWriter()
        return kept


def _kept_or_new(kept: _KeptWriter, engine: Engine) -> Connection:
    """The kept connection, taken out until the call ends well; a new one when there is none or
    it sat idle too long."""
    connection, kept.connection = kept.connection, None
    if connection is not None and time.monotonic() - kept.idle_since >= KEEP_IDLE_S:
        connection.close()
        connection = None
    if connection is None:
        return writer_engine(engine).connect()
    ask_again(connection)
    return connection


def release_kept_writer(engine: Engine) -> None:
    """Give the engine's kept writer connection back to its pool (before the pool is disposed)."""
    kept: _KeptWriter | None = engine.__dict__.get(_KEPT)
    if kept is None or kept.pid != os.getpid():
        return
    with kept.lock:
        connection, kept.connection = kept.connection, None
    if connection is not None:
        connection.close()


class _CommitSent:
    """Whether the transaction has reached its COMMIT (lost_connections asks it)."""

    def __init__(self) -> None:
        self.sent = False

    def __call__(self) -> bool:
        return self.sent


def _written(
    session: Session, connection: Connection, bump_revision: bool, sent: _CommitSent
) -> Generator[Session, None, int]:
    """Both write transactions' work inside BEGIN: yield the session to the call, flush what it
    left, bump the state revision if anything changed, and mark COMMIT as next; how many rows
    the transaction changed (for the WAL checkpoints)."""
    connection.info[CHANGED_FLAG] = False
    rows = -wal_checkpoints.rows_changed(connection)
    yield session
    session.flush()
    rows += wal_checkpoints.rows_changed(connection)
    # A transaction that changed nothing (a job tick finding all as it was) leaves saved plans valid.
    if bump_revision and connection.info.get(CHANGED_FLAG):
        bump(session)
    sent.sent = True
    commit_is_next()
    return rows


@contextmanager
def read_session(engine: Engine) -> Iterator[Session]:
    """A session in one read transaction (a consistent snapshot on SQLite WAL and PostgreSQL)."""
    from sqlmodel import Session

    with lost_connections(), Session(engine, expire_on_commit=False) as session, session.begin():
        yield session


@contextmanager
def read_connection(engine: Engine) -> Iterator[Connection]:
    """A connection in one read transaction, for reads written on Core statements alone."""
    with lost_connections(), engine.connect() as connection, connection.begin():
        yield connection


_BUMP_SQLITE = DriverStatement(
    text("UPDATE state_revision SET revision = revision + 1 WHERE id = 1")
)
_BUMP_PG = DriverStatement(text("SELECT nextval('bcfleet_state_revision')"))


def bump(session: Session) -> None:
    """Advance the state revision that saved plans compare against (on the session's connection)."""
    connection = connection_of(session)
    if is_sqlite(connection.engine):
        if _BUMP_SQLITE.run(connection, {}).rowcount == 0:
            connection.execute(text("INSERT INTO state_revision (id, revision) VALUES (1, 1)"))
    else:
        _BUMP_PG.send(connection, {})  # not read: it goes with COMMIT


def current_revision(session: Session) -> int:
    """The state revision as of this transaction."""
    if is_sqlite(session.get_bind().engine):
        value = session.execute(text("SELECT revision FROM state_revision WHERE id = 1")).scalar()
        return int(value or 0)
    row = session.execute(text("SELECT last_value, is_called FROM bcfleet_state_revision")).one()
    return int(row[0]) if row[1] else 0


class CoreSavepoint:
    """A savepoint written as plain SQL, for a block that writes through Core statements only.

    The ORM's begin_nested() compiles a new SAVEPOINT statement on every call, which cost a
    placement more than its claim. The session is flushed first, so a rollback to this
    savepoint never undoes rows the ORM believes written; the block must not flush ORM
    objects it might roll back (pending objects added last are flushed after release()).
    """

    NAME = "bcfleet_core"

    def __init__(self, session: Session) -> None:
        session.flush()
        self._connection = session.connection()
        _SAVEPOINT.run(self._connection, {})

    def release(self) -> None:
        _RELEASE.run(self._connection, {})

    def rollback(self) -> None:
        _ROLLBACK_TO.run(self._connection, {})
        _RELEASE.run(self._connection, {})


# On the driver's cursor, as the placement's other statements are (about 40 us less a pair on PostgreSQL).
_SAVEPOINT = DriverStatement(text(f"SAVEPOINT {CoreSavepoint.NAME}"))
_RELEASE = DriverStatement(text(f"RELEASE SAVEPOINT {CoreSavepoint.NAME}"))
_ROLLBACK_TO = DriverStatement(text(f"ROLLBACK TO SAVEPOINT {CoreSavepoint.NAME}"))

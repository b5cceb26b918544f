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
from typing import TYPE_CHECKING, Any, NoReturn

from sqlalchemy import Connection, Engine, text
from sqlalchemy.engine import RootTransaction

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
from bcfleet.store.faults import commit_is_next, database_error, lost_connections
from bcfleet.store.models import load_all
from bcfleet.store.sqlalchemy_seam import begin_again, commit_keeping

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


def connection_write_session(engine: Engine, *, bump_revision: bool = True) -> ConnectionWrite:
    """write_session with the transaction begun and committed on a Core connection: the ORM
    session joins it only when the ORM is used (a query, an object added and flushed).

    A hot call that writes through DriverStatements alone (a placement) pays none of the
    session's transaction bookkeeping: its statements run on the connection pinned in the
    session (driver_sql.connection_of). Rolled back on any error, as write_session is.
    """
    return ConnectionWrite(engine, bump_revision)


class ConnectionWrite:
    """connection_write_session's transaction, as one context manager.

    Entered: the engine's kept writer connection when no other call uses it, else one from the
    pool (_take_writer); BEGIN; a session pinned to the connection. Left without an error: the
    session's pending rows flushed, the revision bumped when a row changed (CHANGED_FLAG),
    COMMIT counted (commit_is_next) and sent; the connection kept for the next call (or given
    back: _keep), the commit counted for the WAL checkpoints, the after_commit callbacks run.
    Left with one, or failing on the way: the session closed, the transaction rolled back, the
    connection given back to the pool (_give_back), and the error raised as lost_connections
    raises it, saying whether COMMIT had been sent. A transaction rolled back under the call (a
    failed flush caught and ignored) commits nothing and raises.

    The kept connection's RootTransaction is begun once, by Connection.begin(), and left open
    between calls: each later call sends its BEGIN and COMMIT as that transaction's begin and
    commit send them (sqlalchemy_seam.begin_again, commit_keeping: the begin and commit events'
    listeners, the dialect's do_begin and do_commit, a driver error wrapped), without making and
    ending the transaction object, so SQLAlchemy and a joining session see the connection in
    its transaction throughout the call. Between calls only the keeper holds the connection
    (under its lock), and the database's transaction is over; given back, its RootTransaction
    is rolled back, which on a database with no transaction open changes nothing. A call on a
    pool connection, and a COMMIT with a savepoint left open, go through SQLAlchemy's commit().
    The kept connection's session serves its next call when the call left it untouched (no
    transaction of its own, nothing loaded), its info emptied.
    """

    __slots__ = (
        "_bump",
        "_checkpoints",
        "_connection",
        "_driver",
        "_engine",
        "_info",
        "_kept",
        "_rows",
        "_session",
        "_transaction",
    )

    _kept: _KeptWriter | None
    _connection: Connection
    _transaction: RootTransaction | None
    _session: Session | None
    _info: dict[str, Any]
    _driver: Any
    _checkpoints: wal_checkpoints.WalCheckpoints | None
    _rows: int

    def __init__(self, engine: Engine, bump_revision: bool = True) -> None:
        self._engine = engine
        self._bump = bump_revision

    def __enter__(self) -> Session:
        try:
            kept, connection, transaction, session = _take_writer(self._engine)
        except Exception as exc:
            _raise_as_database_error(exc, during_commit=False)
        self._kept, self._connection, self._session = kept, connection, session
        self._transaction = transaction
        try:
            if transaction is None:
                transaction = connection.begin()
            else:  # the kept connection's, open since its first call (class docstring)
                begin_again(connection, transaction)
            self._transaction = transaction
            fairy = connection.connection
            info = self._info = fairy.info  # the connection's info
            info[CHANGED_FLAG] = False
            checkpoints = self._checkpoints = (
                kept.checkpoints if kept is not None else wal_checkpoints.of(self._engine)
            )
            if checkpoints is not None:
                driver = self._driver = fairy.dbapi_connection
                self._rows = -wal_checkpoints.changes_made(driver)
            if session is None:
                # rollback_only: the session never commits the connection's transaction; a
                # failed flush rolls it back. Closed before COMMIT, it leaves the transaction
                # as it is.
                session = self._session = (_SESSION_TYPE or _session_type())(
                    connection, expire_on_commit=False, join_transaction_mode="rollback_only"
                )
                session.info[PINNED_CONNECTION] = connection
        except BaseException as exc:
            self._abandon(committing=False)
            _raise_as_database_error(exc, during_commit=False)
        return session

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, _tb: object
    ) -> None:
        if exc is not None:
            self._abandon(committing=False)
            _raise_as_database_error(exc, during_commit=False)
        session, connection, transaction = self._session, self._connection, self._transaction
        assert session is not None and transaction is not None
        checkpoints = self._checkpoints
        committing = untouched = False
        try:
            try:
                session.flush()
                if checkpoints is not None:
                    self._rows += wal_checkpoints.changes_made(self._driver)
                # A transaction that changed nothing (a job tick finding all as it was) leaves
                # saved plans valid.
                if self._bump and self._info.get(CHANGED_FLAG):
                    _bump(connection)
                committing = True
                commit_is_next()
            finally:
                # else it holds nothing: as a new one, it may serve the kept connection's next call
                untouched = not (session.in_transaction() or session.identity_map)
                if not untouched:
                    session.close()
            if not transaction.is_active:  # rolled back under the call: nothing to commit
                raise _ended_under_the_call()
            if self._kept is None or connection.in_nested_transaction():
                transaction.commit()
                self._transaction = None
            else:
                commit_keeping(connection)
        except BaseException as failure:
            self._abandon(committing=committing)
            _raise_as_database_error(failure, during_commit=committing)
        info = session.info
        callbacks = info.pop(_AFTER_COMMIT, None)
        if untouched:  # as made: pinned to the connection, nothing else noted
            info.clear()
            info[PINNED_CONNECTION] = connection
        self._keep(session if untouched else None)
        if checkpoints is not None:
            checkpoints.committed(self._rows)
        if callbacks:
            for callback in callbacks:
                callback()

    def _keep(self, session: Session | None) -> None:
        """After COMMIT: the kept connection (with its open RootTransaction, and its session when
        the call left it untouched) kept for the next call, unless its transaction took
        large_page_cache's cache; a pool connection given back."""
        kept, connection = self._kept, self._connection
        if kept is None:
            connection.close()
            return
        try:
            if holds_large_cache(connection):
                _give_back(connection, self._transaction)
                return
            kept.connection, kept.transaction = connection, self._transaction
            kept.session = session
            kept.idle_since = time.monotonic()
        finally:
            kept.lock.release()

    def _abandon(self, *, committing: bool) -> None:
        """After an error: the session closed, the connection closed (rolling its transaction
        back) and given back to the pool. An error doing so is raised as lost_connections
        raises it (committing: COMMIT had been sent), the first one as its context."""
        kept = self._kept
        try:
            try:
                session = self._session
                if session is not None and (session.in_transaction() or session.identity_map):
                    session.close()
            finally:
                try:
                    _give_back(self._connection, self._transaction)
                finally:
                    if kept is not None:
                        kept.lock.release()
        except Exception as exc:
            _raise_as_database_error(exc, during_commit=committing)


def _raise_as_database_error(exc: BaseException, *, during_commit: bool) -> NoReturn:
    """Raise the store's error for a failure of the database (faults.database_error: a lost
    connection, a busy or read-only file…), chained to it; any other failure as it is."""
    error = database_error(exc, during_commit=during_commit)
    if error is None:
        raise exc
    raise error from exc


def _ended_under_the_call() -> RuntimeError:
    return RuntimeError(
        "the write transaction was rolled back inside the call (a failed flush caught and "
        "ignored?): nothing of it is committed"
    )


_SESSION_TYPE: type[Session] | None = None


def _session_type() -> type[Session]:
    """SQLModel's Session, imported by the first write (with every table mapped: a flush orders
    the tables it writes by their foreign keys, so all must be known)."""
    global _SESSION_TYPE
    from sqlmodel import Session

    load_all()
    _SESSION_TYPE = Session
    return Session


_AFTER_COMMIT = "bcfleet_after_commit"


def after_commit(session: Session, callback: Callable[[], None]) -> None:
    """Run `callback` once the write transaction of `session` has committed; never when it
    rolls back. In a transaction() handle, once the enclosing transaction has committed.

    A callback only keeps what the committed transaction made known (a cache entry): it must
    not raise, as the call's outcome is final by then, and must not touch the database."""
    session.info.setdefault(_AFTER_COMMIT, []).append(callback)


def _run_after_commit(session: Session) -> None:
    for callback in session.info.pop(_AFTER_COMMIT, ()):
        callback()


class _KeptWriter:
    """One writer connection an engine keeps between hot calls, for one call at a time, with its
    RootTransaction and session (ConnectionWrite); all None while a call has them."""

    def __init__(self, engine: Engine) -> None:
        self.lock = threading.Lock()
        self.connection: Connection | None = None
        self.transaction: RootTransaction | None = None
        self.session: Session | None = None
        self.pid = os.getpid()
        self.idle_since = 0.0
        self.checkpoints = wal_checkpoints.of(engine)


_KEPT = "_bcfleet_kept_writer"
# As long as the pool lets a connection sit before pinging it: a connection kept idle longer is
# given back, and the next call takes one from the pool (on PostgreSQL, pinged).
KEEP_IDLE_S = PING_AFTER_IDLE_S


def _take_writer(
    engine: Engine,
) -> tuple[_KeptWriter | None, Connection, RootTransaction | None, Session | None]:
    """The engine's kept writer connection when no other call uses it, else one from the pool:
    its keeper (None for the pool's), the connection, and its open RootTransaction and session
    if kept with them.

    A connection taken from the pool and given back costs a placement about a twelfth of its
    work (the checkout, its events and the checkin). The kept one goes back to the pool when it
    sat idle KEEP_IDLE_S or more (the pool pings such a one), when the call failed, when its
    transaction took large_page_cache's cache, and at release_kept_writer (Fleet.close); a
    process forked with one never uses its parent's. The keeper's lock is held until the call
    ends (ConnectionWrite).
    """
    kept: _KeptWriter | None = engine.__dict__.get(_KEPT)
    if kept is None or kept.pid != os.getpid():
        kept = _new_kept_writer(engine)
    if not kept.lock.acquire(blocking=False):  # another thread's call has it: take the pool's
        return None, writer_engine(engine).connect(), None, None
    try:
        connection, transaction, session = _kept_or_new(kept, engine)
    except BaseException:
        kept.lock.release()
        raise
    return kept, connection, transaction, session


_MAKING = threading.Lock()


def _new_kept_writer(engine: Engine) -> _KeptWriter:
    """The engine's keeper for this process, made once: two threads' first calls at once share
    one, so no kept connection is left in a keeper nobody holds."""
    with _MAKING:
        kept: _KeptWriter | None = engine.__dict__.get(_KEPT)
        if kept is None or kept.pid != os.getpid():
            kept = engine.__dict__[_KEPT] = _KeptWriter(engine)
        return kept


def _kept_or_new(
    kept: _KeptWriter, engine: Engine
) -> tuple[Connection, RootTransaction | None, Session | None]:
    """The kept connection, its RootTransaction and session, taken out until the call ends well;
    a new connection (with neither) when there is none or it sat idle too long."""
    connection, kept.connection = kept.connection, None
    transaction, kept.transaction = kept.transaction, None
    session, kept.session = kept.session, None
    if connection is not None and time.monotonic() - kept.idle_since >= KEEP_IDLE_S:
        _give_back(connection, transaction)
        connection = None
    if connection is None:
        return writer_engine(engine).connect(), None, None
    ask_again(connection)
    return connection, transaction, session


def release_kept_writer(engine: Engine) -> None:
    """Give the engine's kept writer connection back to its pool (before the pool is disposed)."""
    kept: _KeptWriter | None = engine.__dict__.get(_KEPT)
    if kept is None or kept.pid != os.getpid():
        return
    with kept.lock:
        connection, transaction = kept.connection, kept.transaction
        kept.connection = kept.transaction = kept.session = None
    if connection is not None:
        _give_back(connection, transaction)


def _give_back(connection: Connection, transaction: RootTransaction | None) -> None:
    """Roll back the connection's transaction (`transaction`, while the connection's) and close
    the connection: given back to its pool, whose checkin resets it once more, as a
    Connection.begin() block's rollback leaves it. A COMMIT that failed leaves its transaction
    inactive but the connection's: closed so, the connection would skip the pool's reset and go
    back with the database's transaction still open."""
    try:
        if transaction is not None and connection.get_transaction() is transaction:
            transaction.rollback()
    finally:
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
    _bump(connection_of(session))


def _bump(connection: Connection) -> None:
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

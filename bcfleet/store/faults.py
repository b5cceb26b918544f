"""Database errors as the API answers them: lost connections (and when a call may be run once
more), and a flush that breaks a constraint (CONFLICT, with the caller's message).

The units of work (store/uow.py) translate a lost connection into DatabaseUnavailableError
(503, Retry-After) and every API call runs through run_retrying() (api/base.py), so a
connection that dies under a request costs at most one more run, never a 500.

The rule for running a call again:

- Only the whole call is run again, from its first statement: authentication, reads and
  writes alike, in new transactions. Nothing of the failed attempt survives: its
  transaction was rolled back by the server when the connection died.
- Only when no write transaction of the attempt had reached COMMIT. A connection lost
  before COMMIT was sent leaves nothing saved. A connection lost while COMMIT was on its
  way leaves the outcome unknown (the server may have committed and died before
  answering), and so does a later failure after an earlier write committed: running
  the call again could write twice. Those answer DATABASE_UNAVAILABLE with
  reason ``commit_outcome_unknown`` at once.
- Only once: a second lost connection answers DATABASE_UNAVAILABLE (reason
  ``connection_lost``, nothing saved) and the client retries after Retry-After.
- Never inside Fleet.transaction() (`fleet apply`): the enclosing transaction is lost
  as a whole and its caller sees the error.

An attempt may also ask to be run again itself, once, by raising RunAgainCarefully: a first
run with nothing committed (may_run_again_carefully()) may take a path that is cheaper and
correct only while no concurrent writer meets it, and when one does, the transaction is
rolled back and the call runs again on the careful path. A placement on PostgreSQL claims
its first host without a savepoint this way (placement/instance_placer.py).

A statement sent without waiting for its answer may carry its own guard (refuse_unless): when
the guard's condition does not hold on the server, the statement fails the transaction, so
nothing sent after it (up to and with COMMIT) is saved, and the attempt runs again carefully
(guard_refused). COMMIT sent behind a refused guard saves nothing, so the attempt counts no
commit for it (its outcome is known).

SQLite busy past its busy timeout (another process holds the lock) or a read-only file
refuses the call as a whole: the outermost call answers DATABASE_UNAVAILABLE with reason
``database_busy`` or ``database_read_only`` (sqlite_refusal), never the driver's text.

What counts as lost: SQLAlchemy invalidated the connection (it saw a disconnect), a
driver InterfaceError, or a psycopg OperationalError of SQLSTATE class 08 (connection
exception), 57P01-57P03 (administrator or crash shutdown, starting up), or with no
SQLSTATE at all (the client side found the socket closed, or could not connect). Lock
waits are not; neither is SQLite's "database is locked", which its busy timeout waits out.

A statement the server cancelled (SQLSTATE 57014: statement_timeout, or an administrator's
pg_cancel_backend) is not a lost connection, but it is the database's state, not the caller's
fault: it answers DATABASE_UNAVAILABLE (503, Retry-After) with reason ``statement_cancelled``
(nothing saved), or ``commit_outcome_unknown`` when COMMIT had been sent or an earlier write
of the call had committed. It is never run again here: a statement that timed out would most
likely time out again, and the client retries after Retry-After.

A transaction PostgreSQL aborted to break a deadlock (40P01) or a serialization failure
(40001) saved nothing either, and the server has already let the other side go on. It
follows the same rule: the whole call runs again when no write of the attempt had reached
COMMIT, up to twice; otherwise, or when it happens a third time, the caller gets CONFLICT
with reason ``transaction_aborted`` and may send the call again.

A broken constraint at a flush (a unique name a concurrent writer took first, a row that
other rows still refer to) is the caller's CONFLICT: flush_or_conflict() is the one place
that turns the driver's IntegrityError into it.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy.exc import DBAPIError, IntegrityError, InterfaceError, OperationalError

from bcfleet.errors import ConflictError, DatabaseUnavailableError, FleetError

if TYPE_CHECKING:
    from sqlmodel import Session

T = TypeVar("T")
log = logging.getLogger("bcfleet.store")

# admin_shutdown (pg_terminate_backend, a fast shutdown), crash_shutdown, cannot_connect_now.
SHUTDOWN_SQLSTATES = frozenset({"57P01", "57P02", "57P03"})
# deadlock_detected, serialization_failure: the server rolled the transaction back. And
# invalid_sql_statement_name: a statement prepared on the connection (store/pq_pipeline.py) is
# gone (a pooler's DISCARD ALL, an administrator's DEALLOCATE); the transaction failed with it,
# and the connection's statements are prepared afresh when the call runs again.
ABORTED_SQLSTATES = frozenset({"40P01", "40001", "26000"})
# query_canceled: statement_timeout ran out, or pg_cancel_backend() was called.
QUERY_CANCELED = "57014"
CONNECTION_LOST = "connection_lost"
STATEMENT_CANCELLED = "statement_cancelled"
COMMIT_OUTCOME_UNKNOWN = "commit_outcome_unknown"
TRANSACTION_ABORTED = "transaction_aborted"


def connection_lost(exc: BaseException) -> bool:
    """Whether an error means the database connection died (or could not be made)."""
    if not isinstance(exc, DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    if isinstance(exc.orig, sqlite3.Error):
        return False
    if isinstance(exc, InterfaceError):
        return True
    if isinstance(exc, OperationalError):
        state = getattr(exc.orig, "sqlstate", None)
        return state is None or state.startswith("08") or state in SHUTDOWN_SQLSTATES
    return False


def statement_cancelled(exc: BaseException) -> bool:
    """Whether the server cancelled the statement (QUERY_CANCELED): psycopg's QueryCanceled, bare or
    wrapped in SQLAlchemy's OperationalError."""
    error = exc.orig if isinstance(exc, DBAPIError) else exc
    if isinstance(error, sqlite3.Error):
        return False
    return getattr(error, "sqlstate", None) == QUERY_CANCELED


def aborted_by_server(exc: BaseException) -> bool:
    """Whether the database rolled the transaction back: a deadlock, a serialization failure, or a
    prepared statement it no longer held (ABORTED_SQLSTATES)."""
    if not isinstance(exc, DBAPIError) or isinstance(exc.orig, sqlite3.Error):
        return False
    return getattr(exc.orig, "sqlstate", None) in ABORTED_SQLSTATES


def aborted() -> ConflictError:
    """The error of a transaction the database aborted; nothing of it was saved."""
    return ConflictError(
        "the database aborted this change (a deadlock or a conflict with a concurrent one, or a "
        "prepared statement it no longer held); nothing was saved: try again",
        {"reason": TRANSACTION_ABORTED},
    )


@dataclass
class Attempt:
    """One run of one API call: how many of its write transactions reached COMMIT, and whether
    it is a careful run (one after RunAgainCarefully)."""

    commits: int = 0
    careful: bool = False


class RunAgainCarefully(Exception):  # noqa: N818 - a request to the retry loop, not an error
    """Raised by an attempt that took a cheaper path, valid only while no concurrent writer
    meets it, when one did (a placement that claimed without a savepoint and was refused):
    the transaction is rolled back and the call runs once more, careful (run_retrying)."""


# A guard's failure: the integer cast of a text that names it (invalid_text_representation),
# the one error plain SQL can raise at run time without a server-side function.
GUARD_REFUSED = "bcfleet guard refused"
_INVALID_TEXT_REPRESENTATION = "22P02"


def refuse_unless(condition: str, guard: str, detail: str) -> str:
    """An SQL expression (PostgreSQL): 0 when `condition` holds, else an error that fails the
    transaction and that guard_refused() knows. `detail` is an expression evaluated at run time
    (a column, an aggregate), so the planner cannot fold the error into the statement's plan."""
    return (
        f"CASE WHEN {condition} THEN 0 "
        f"ELSE CAST('{GUARD_REFUSED}: {guard} ' || ({detail}) AS integer) END"
    )


def guard_refused(exc: BaseException) -> bool:
    """Whether an error is a refused guard (refuse_unless): a concurrent writer met the cheaper
    path, the transaction failed and nothing of it is saved."""
    error = exc.orig if isinstance(exc, DBAPIError) else exc
    return getattr(
        error, "sqlstate", None
    ) == _INVALID_TEXT_REPRESENTATION and GUARD_REFUSED in str(error)


def may_run_again_carefully() -> bool:
    """Whether the running attempt may take such a path: the first run of a call run_retrying
    is running (never a call with no such loop around it, as `fleet apply`'s transaction and
    the jobs' own writes), with none of its writes committed."""
    attempt = _ATTEMPT.get()
    return attempt is not None and not attempt.careful and attempt.commits == 0


_ATTEMPT: ContextVar[Attempt | None] = ContextVar("bcfleet_attempt", default=None)


def commit_is_next() -> None:
    """Called by a write transaction just before it commits: from here its outcome can be unknown."""
    attempt = _ATTEMPT.get()
    if attempt is not None:
        attempt.commits += 1


def commit_refused() -> None:
    """The COMMIT commit_is_next() counted was refused by a guard before it: nothing was saved."""
    attempt = _ATTEMPT.get()
    if attempt is not None and attempt.commits:
        attempt.commits -= 1


def unavailable(*, during_commit: bool) -> DatabaseUnavailableError:
    """The error of a lost connection; during_commit: COMMIT had been sent."""
    if during_commit:
        return DatabaseUnavailableError(
            "the database connection was lost while committing: the change may or may not "
            "have been saved; check before sending it again",
            {"reason": COMMIT_OUTCOME_UNKNOWN},
        )
    return DatabaseUnavailableError(
        "the database connection was lost; nothing was saved: try again",
        {"reason": CONNECTION_LOST},
    )


def cancelled(*, during_commit: bool) -> DatabaseUnavailableError:
    """The error of a statement the server cancelled; during_commit: COMMIT had been sent (or an
    earlier write of the call had committed)."""
    if during_commit:
        return DatabaseUnavailableError(
            "the database cancelled a statement while committing (statement_timeout or an "
            "administrator's cancel): the change may or may not have been saved; check before "
            "sending it again",
            {"reason": COMMIT_OUTCOME_UNKNOWN},
        )
    return DatabaseUnavailableError(
        "the database cancelled a statement of this call (statement_timeout or an "
        "administrator's cancel); nothing was saved: try again",
        {"reason": STATEMENT_CANCELLED},
    )


DATABASE_BUSY = "database_busy"
DATABASE_READ_ONLY = "database_read_only"


def sqlite_refusal(exc: BaseException) -> DatabaseUnavailableError | None:
    """The error of an SQLite database that refused the call as a whole: busy past the busy
    timeout (another process holds its lock) or read-only; None for any other error.
    Nothing was saved: SQLite refuses before a write transaction begins or rolls it back."""
    if not isinstance(exc, OperationalError) or not isinstance(exc.orig, sqlite3.Error):
        return None
    text = str(exc.orig)
    if "database is locked" in text or "database is busy" in text:
        return DatabaseUnavailableError(
            "the database is busy: another process holds its lock; nothing was saved: try again",
            {"reason": DATABASE_BUSY},
        )
    if "readonly database" in text:
        return DatabaseUnavailableError(
            "the database file is read-only here; nothing was saved",
            {"reason": DATABASE_READ_ONLY},
            retry_after_seconds=None,
        )
    return None


def escaped_fault(exc: BaseException) -> DatabaseUnavailableError | None:
    """The error a database failure that escaped every unit of work answers (a lost connection or
    a cancelled statement), None for any other error. Whether anything was saved is unknown."""
    if connection_lost(exc):
        return unavailable(during_commit=True)
    if statement_cancelled(exc):
        return cancelled(during_commit=True)
    return None


@contextmanager
def lost_connections(*, committing: Callable[[], bool] = lambda: False) -> Iterator[None]:
    """Turn a lost connection or a cancelled statement inside the block into
    DatabaseUnavailableError (never a 500), and a refused guard into RunAgainCarefully.

    committing tells whether COMMIT had been sent when the error came.
    """
    try:
        yield
    except Exception as exc:
        error = database_error(exc, during_commit=committing())
        if error is None:
            raise
        raise error from exc


def database_error(exc: BaseException, *, during_commit: bool) -> Exception | None:
    """What lost_connections raises instead of `exc` (from it), None when `exc` goes on as it is;
    during_commit: COMMIT had been sent when it came. A refused guard under a COMMIT counted
    uncounts it (commit_refused)."""
    if isinstance(exc, DBAPIError):
        if guard_refused(exc):
            if during_commit:
                commit_refused()
            return RunAgainCarefully()
        if aborted_by_server(exc):
            return aborted()
        if statement_cancelled(exc):
            return cancelled(during_commit=during_commit)
        if not connection_lost(exc):
            return None
        return unavailable(during_commit=during_commit)
    # a driver error SQLAlchemy did not wrap (store/pq_pipeline.py)
    if isinstance(exc, Exception) and statement_cancelled(exc):
        return cancelled(during_commit=during_commit)
    return None


# Runs after the first: one for a lost connection, two for an aborted transaction.
_RUNS_AGAIN = {CONNECTION_LOST: 1, TRANSACTION_ABORTED: 2}


def _reason(error: FleetError) -> str | None:
    if isinstance(error, (DatabaseUnavailableError, ConflictError)):
        reason = error.details.get("reason")
        return reason if reason in _RUNS_AGAIN else None
    return None


def run_retrying(call: Callable[[], T]) -> T:
    """Run an API call; after a lost connection or an aborted transaction, again when nothing can have been saved.

    A call made inside another (an API method calling another) runs as part of the
    outer one: only the outermost call is ever run again.
    """
    if _ATTEMPT.get() is not None:
        return call()
    runs = dict.fromkeys(_RUNS_AGAIN, 0)
    careful = False
    while True:
        attempt = Attempt(careful=careful)
        token = _ATTEMPT.set(attempt)
        try:
            return call()
        except OperationalError as exc:
            refusal = sqlite_refusal(exc)
            if refusal is None:
                raise
            raise refusal from exc
        except RunAgainCarefully:
            if careful or attempt.commits:  # may_run_again_carefully() said no to both
                raise RuntimeError("RunAgainCarefully raised where it may not be") from None
            careful = True
            continue
        except (DatabaseUnavailableError, ConflictError) as error:
            reason = _reason(error)
            if reason is None:
                if attempt.commits and error.details.get("reason") == STATEMENT_CANCELLED:
                    raise cancelled(during_commit=True) from error  # an earlier write committed
                raise
            if attempt.commits or runs[reason] >= _RUNS_AGAIN[reason]:
                if attempt.commits and reason == CONNECTION_LOST:
                    raise unavailable(during_commit=True) from error
                raise
            runs[reason] += 1
        finally:
            _ATTEMPT.reset(token)
        log.warning("%s before COMMIT; running the call again", reason.replace("_", " "))


def flush_or_conflict(session: Session, conflict: FleetError) -> None:
    """Flush the session; when the flush breaks a constraint, raise `conflict` instead."""
    try:
        session.flush()
    except IntegrityError as exc:
        raise conflict from exc

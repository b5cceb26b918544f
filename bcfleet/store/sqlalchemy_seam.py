"""The SQLAlchemy internals the driver-level statements (store/driver_sql.py) use, in one place.

A DriverStatement runs its SQL on the driver's cursor as SQLAlchemy would: the statement
through Connection's own cursor execution when listeners must see it, a driver error wrapped
and handled by Connection's exception handling (a lost connection invalidated), and the
straight path only when nothing echoes and no dialect event runs. Those are private members
of SQLAlchemy's Connection and Dialect, which a release may change without notice. So they
are reached only here, and only on the versions this module was written for (WRITTEN_FOR, the
version pinned in pyproject.toml): an engine made on any other stops at once with UNSUPPORTED
(store/engine.make_engine calls check_sqlalchemy), never a wrong answer later. Moving to a
new version means reading these calls against it, then adding it to WRITTEN_FOR.

The kept writer connection (store/uow.py) sends each call's BEGIN and COMMIT as SQLAlchemy's
RootTransaction sends them (begin_again, commit_keeping), the RootTransaction object itself
begun once and left open between calls.
"""

from __future__ import annotations

from typing import Any, NoReturn

import sqlalchemy
from sqlalchemy import Connection
from sqlalchemy.engine import RootTransaction

from bcfleet.errors import UnsupportedError

WRITTEN_FOR = ("2.1.9",)
"""The SQLAlchemy versions whose Connection and Dialect internals this module was read against."""


def check_sqlalchemy(version: str | None = None) -> None:
    """UNSUPPORTED unless the installed SQLAlchemy (or `version`) is one of WRITTEN_FOR."""
    found = sqlalchemy.__version__ if version is None else version
    if found not in WRITTEN_FOR:
        raise UnsupportedError(
            f"bcfleet's database statements were written for SQLAlchemy "
            f"{', '.join(WRITTEN_FOR)}; this installation has SQLAlchemy {found}: "
            f"install sqlalchemy=={WRITTEN_FOR[-1]}",
            {"sqlalchemy": found, "supported": list(WRITTEN_FOR)},
        )


def quiet(connection: Connection) -> bool:
    """Nothing echoes the connection's statements and no dialect event runs them (a statement may
    then go straight to the cursor, listeners apart: driver_sql._plain asks those)."""
    return not connection._echo and not connection.dialect._has_events


def cursor_execute(connection: Connection, cursor: Any, statement: str, parameters: Any) -> None:
    """Run a statement on the cursor as SQLAlchemy runs its own: every cursor-execution listener
    sees it, a driver error is raised as SQLAlchemy wraps it."""
    connection._cursor_execute(cursor, statement, parameters)


def raise_wrapped(
    connection: Connection,
    error: BaseException,
    statement: str | None = None,
    parameters: Any = None,
    cursor: Any = None,
) -> NoReturn:
    """Raise a driver error as SQLAlchemy wraps it (IntegrityError, OperationalError…), with its
    handling done: a lost connection invalidated, the error events fired."""
    connection._handle_dbapi_exception(error, statement, parameters, cursor, None)
    raise error  # not reached: SQLAlchemy raised its own


def begin_again(connection: Connection, transaction: RootTransaction) -> None:
    """Send BEGIN as Connection.begin() sends it (the begin event's listeners, the dialect's
    do_begin, a driver error wrapped) on a connection whose RootTransaction SQLAlchemy holds open
    already, its last COMMIT sent by commit_keeping: the database's transaction begins again
    under the same RootTransaction (`transaction`, the connection's, active)."""
    connection._begin_impl(transaction)


def commit_keeping(connection: Connection) -> None:
    """Send COMMIT as RootTransaction.commit() sends it (the commit event's listeners, the
    dialect's do_commit, a driver error wrapped and handled: a lost connection invalidated),
    leaving the RootTransaction open for begin_again."""
    connection._commit_impl()

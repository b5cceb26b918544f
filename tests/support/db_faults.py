"""A seam that really loses database connections: closed under SQLite, terminated on PostgreSQL."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import psycopg
from sqlalchemy import event

from bcfleet.fleet import Fleet
from bcfleet.store.engine import WRITE_OPTION
from tests.support.waiting import holds_within

TERMINATE_OTHERS = (
    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
)


def libpq_url(fleet: Fleet) -> str:
    """The fleet's PostgreSQL URL as psycopg takes it."""
    return fleet.engine.url.set(drivername="postgresql").render_as_string(hide_password=False)


def kill(fleet: Fleet, dbapi_connection: Any) -> None:
    """Lose this connection for real: close it (SQLite) or have the server terminate it (PostgreSQL)."""
    if fleet.engine.dialect.name == "sqlite":
        dbapi_connection.close()
        return
    pid = dbapi_connection.info.backend_pid
    with psycopg.connect(libpq_url(fleet), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        gone = (
            "SELECT 1 FROM pg_stat_activity WHERE pid = %s"  # it exits at its next interrupt check
        )
        holds_within(lambda: admin.execute(gone, (pid,)).fetchone() is None, timeout=5)


@dataclass
class Faults:
    """Counts the statements (and write commits) that match, and kills the connection of the first few.

    ``statement`` is the start of the SQL to watch (``INSERT INTO tenants``); ``kills`` how many
    of its runs lose their connection just before the statement is sent; with ``at_commit``
    the connection is lost instead as a write transaction sends COMMIT (the engine's commit,
    or on PostgreSQL the COMMIT sent behind the statements waiting in the pipeline, see
    store/driver_sql.py: the commit event after it then finds the write counted).
    """

    fleet: Fleet
    statement: str
    kills: int = 1
    at_commit: bool = False
    runs: int = 0
    commits: int = 0
    killed: int = 0
    _armed: bool = field(default=False, repr=False)

    def __post_init__(self) -> None:
        event.listen(self.fleet.engine, "before_cursor_execute", self._before)
        event.listen(self.fleet.engine, "commit", self._commit)

    def remove(self) -> None:
        event.remove(self.fleet.engine, "before_cursor_execute", self._before)
        event.remove(self.fleet.engine, "commit", self._commit)

    def _before(self, conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement == "COMMIT":  # PostgreSQL: sent with the statements waiting for it
            self._commit(conn)
            return
        if not statement.lstrip().upper().startswith(self.statement.upper()):
            return
        self.runs += 1
        self._armed = True
        if not self.at_commit and self.killed < self.kills:
            self.killed += 1
            kill(self.fleet, conn.connection.dbapi_connection)

    def _commit(self, conn: Any) -> None:
        if not conn.get_execution_options().get(WRITE_OPTION) or not self._armed:
            return
        self._armed = False
        self.commits += 1
        if self.at_commit and self.killed < self.kills:
            self.killed += 1
            kill(self.fleet, conn.connection.dbapi_connection)

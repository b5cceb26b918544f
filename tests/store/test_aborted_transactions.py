"""A transaction PostgreSQL aborts to break a deadlock is run again, since nothing of it was saved."""

from __future__ import annotations

import threading
from typing import Any

import psycopg
import pytest
from sqlalchemy import event
from sqlalchemy.exc import OperationalError

from bcfleet.errors import ConflictError
from bcfleet.fleet import Fleet
from bcfleet.store.faults import TRANSACTION_ABORTED, run_retrying
from tests.support.builders import OP
from tests.support.db_faults import libpq_url
from tests.support.waiting import wait_until

ADVISORY = 81_432


class Deadlock:
    """On the first INSERT INTO tenants, a real deadlock that PostgreSQL breaks by aborting the fleet's side.

    The fleet's transaction takes an advisory lock; an outsider inserts the same tenant id
    (uncommitted) and waits for that lock; the fleet's INSERT then waits for the outsider.
    The outsider's deadlock_timeout is long, so the fleet's backend finds the cycle first.
    """

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.inserts = 0
        self.outsider_done = threading.Event()
        self.outsider_waiting = threading.Event()
        event.listen(fleet.engine, "before_cursor_execute", self._before)

    def remove(self) -> None:
        event.remove(self.fleet.engine, "before_cursor_execute", self._before)

    def _before(self, conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if not statement.startswith("INSERT INTO tenants"):
            return
        self.inserts += 1
        if self.inserts > 1:
            return
        conn.connection.dbapi_connection.execute("SELECT pg_advisory_xact_lock(%s)", (ADVISORY,))
        threading.Thread(target=self._outsider, daemon=True).start()
        url = libpq_url(self.fleet)
        with psycopg.connect(url, autocommit=True) as watcher:
            wait_until(
                lambda: watcher.execute(
                    "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
                ).fetchone(),
                what="the outsider to wait for the fleet's advisory lock",
            )

    def _outsider(self) -> None:
        with psycopg.connect(libpq_url(self.fleet)) as outsider:
            outsider.execute("SET deadlock_timeout = '20s'")
            outsider.execute(
                "INSERT INTO tenants (id, name, created_at, managed) "
                "VALUES ('acme', 'acme', now(), false)"
            )
            outsider.execute("SELECT pg_advisory_xact_lock(%s)", (ADVISORY,))
            outsider.rollback()  # it only wanted to be in the way
        self.outsider_done.set()


def test_a_deadlock_victim_is_run_again_and_saved_once(pg_fleet: Fleet) -> None:
    deadlock = Deadlock(pg_fleet)
    try:
        made = pg_fleet.api.tenants.create(OP, "acme")
    finally:
        deadlock.remove()
    assert made["id"] == "acme"
    assert deadlock.inserts == 2  # aborted once, run once more
    assert deadlock.outsider_done.wait(10)
    ids = [t["id"] for t in pg_fleet.api.tenants.list(OP)["items"]]
    assert ids.count("acme") == 1


def test_inside_one_transaction_a_deadlock_is_the_callers_conflict(pg_fleet: Fleet) -> None:
    deadlock = Deadlock(pg_fleet)
    try:
        with pytest.raises(ConflictError) as raised, pg_fleet.transaction() as joined:
            joined.api.tenants.create(OP, "acme")
    finally:
        deadlock.remove()
    assert raised.value.details == {"reason": TRANSACTION_ABORTED}
    assert raised.value.http_status == 409 and "nothing was saved" in raised.value.message
    assert deadlock.inserts == 1
    assert deadlock.outsider_done.wait(10)
    assert "acme" not in [t["id"] for t in pg_fleet.api.tenants.list(OP)["items"]]


def _aborted() -> OperationalError:
    orig = psycopg.errors.DeadlockDetected("deadlock detected")
    return OperationalError("UPDATE node_resources", {}, orig)


def test_aborted_runs_are_bounded_to_two_more() -> None:
    runs = 0

    def call() -> None:
        nonlocal runs
        runs += 1
        from bcfleet.store.faults import lost_connections

        with lost_connections():
            raise _aborted()

    with pytest.raises(ConflictError) as raised:
        run_retrying(call)
    assert runs == 3 and raised.value.details == {"reason": TRANSACTION_ABORTED}

"""Statements PostgreSQL cancels (statement_timeout, pg_cancel_backend: SQLSTATE 57014) answer
503 DATABASE_UNAVAILABLE with Retry-After, over HTTP and in the CLI, as a lost connection does."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import httpx
import psycopg
import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.store.engine import make_engine
from bcfleet.store.faults import (
    COMMIT_OUTCOME_UNKNOWN,
    STATEMENT_CANCELLED,
    escaped_fault,
    statement_cancelled,
)
from tests.support.db_faults import libpq_url
from tests.support.fleet import T0, open_fleet, run_cli
from tests.support.http import error_code, served
from tests.support.waiting import holds_within

pytestmark = pytest.mark.postgres

TIMEOUT_MS = 300
WAITING_ON_A_LOCK = (
    "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
    "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
)


@contextmanager
def tenants_locked(url: str) -> Iterator[psycopg.Connection]:
    """Another session holds the tenants table: every statement reading it waits."""
    with psycopg.connect(url) as holder:
        holder.execute("LOCK TABLE tenants IN ACCESS EXCLUSIVE MODE")
        yield holder
        holder.rollback()


@contextmanager
def fleet_on(pg_url: str) -> Iterator[Fleet]:
    fleet = open_fleet(pg_url, FakeClock(T0))
    try:
        yield fleet
    finally:
        fleet.close()


def cancel_the_waiting_one(url: str) -> None:
    """pg_cancel_backend() on the session that waits for the lock, once there is one."""
    with psycopg.connect(url, autocommit=True) as admin:
        waiting: list[int] = []

        def found() -> bool:
            waiting[:] = [pid for (pid,) in admin.execute(WAITING_ON_A_LOCK).fetchall()]
            return bool(waiting)

        holds_within(found, timeout=10)
        admin.execute("SELECT pg_cancel_backend(%s)", (waiting[0],))


def no_cancel(_url: str) -> None:
    """statement_timeout cancels by itself."""


def test_a_cancelled_statement_is_known_bare_and_wrapped(pg_url: str) -> None:
    with fleet_on(pg_url) as fleet, psycopg.connect(libpq_url(fleet), autocommit=True) as raw:
        raw.execute(f"SET statement_timeout = {TIMEOUT_MS}")
        with pytest.raises(psycopg.errors.QueryCanceled) as bare:
            raw.execute("SELECT pg_sleep(5)")
    engine = make_engine(pg_url)
    try:
        with pytest.raises(OperationalError) as wrapped, engine.connect() as connection:
            connection.execute(text(f"SET statement_timeout = {TIMEOUT_MS}"))
            connection.execute(text("SELECT pg_sleep(5)"))
    finally:
        engine.dispose()
    for error in (bare.value, wrapped.value):
        assert statement_cancelled(error)
        fault = escaped_fault(error)  # outside a unit of work: the outcome is unknown
        assert fault is not None and fault.http_status == 503
        assert fault.retry_after_seconds == 1


@pytest.mark.parametrize(
    ("pgoptions", "cancel"),
    [
        pytest.param(f"-c statement_timeout={TIMEOUT_MS}", no_cancel, id="statement_timeout"),
        pytest.param("", cancel_the_waiting_one, id="pg_cancel_backend"),
    ],
)
def test_over_http_a_cancelled_statement_answers_503_with_retry_after(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, pgoptions: str, cancel: Callable[[str], None]
) -> None:
    monkeypatch.setenv("PGOPTIONS", pgoptions)  # libpq reads it as each connection is made
    with fleet_on(pg_url) as fleet, served(fleet) as (_server, api):
        answers: list[httpx.Response] = []
        with tenants_locked(libpq_url(fleet)):
            caller = threading.Thread(target=lambda: answers.append(api.get("/v1/tenants")))
            caller.start()
            cancel(libpq_url(fleet))
            caller.join(timeout=15)
        (answer,) = answers
        assert answer.status_code == 503, answer.text
        assert answer.headers["retry-after"] == "1"
        assert error_code(answer) == "DATABASE_UNAVAILABLE"
        assert answer.json()["error"]["details"] == {"reason": STATEMENT_CANCELLED}
        assert api.get("/v1/tenants").status_code == 200  # the lock gone, all is well


def test_the_cli_says_database_unavailable_for_a_statement_that_timed_out(pg_url: str) -> None:
    with fleet_on(pg_url) as fleet, tenants_locked(libpq_url(fleet)):
        result = run_cli(
            "tenants", "list", "--json", db=pg_url,
            env={"PGOPTIONS": f"-c statement_timeout={TIMEOUT_MS}"},
        )  # fmt: skip
    assert result.exit_code == 1, (result.stdout, result.stderr)
    body = result.json()
    assert isinstance(body, dict)
    assert body["error"]["code"] == "DATABASE_UNAVAILABLE"
    assert body["error"]["details"] == {"reason": STATEMENT_CANCELLED}
    assert "Traceback" not in result.stderr


def test_a_cancelled_statement_that_escapes_every_unit_of_work_is_database_unavailable_in_the_cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A statement cancelled while the fleet opens (before any API call's unit of work: under a
    loaded server a 300 ms timeout can fall there) answers as the HTTP edge does, not INTERNAL."""
    import psycopg.errors

    from bcfleet.cli import main as cli_main

    def cancelled_while_opening(_args: list[str]) -> object:
        raise OperationalError("SELECT 1", {}, psycopg.errors.QueryCanceled("canceling statement"))

    monkeypatch.setattr(cli_main, "_run", cancelled_while_opening)
    with pytest.raises(SystemExit) as exiting:
        cli_main.main(["tenants", "list", "--json"])
    assert exiting.value.code == 1
    body = json.loads(capsys.readouterr().out)
    assert body["error"]["code"] == "DATABASE_UNAVAILABLE"
    # outside every unit of work nobody knows whether a write went through: said as HTTP says it
    assert body["error"]["details"] == {"reason": COMMIT_OUTCOME_UNKNOWN}

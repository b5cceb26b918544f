"""After a kill -9 of a job: `fleet jobs tick` tells cron of a job it could not run (exit 3) or
that failed (one line, exit 1, the traceback only with --debug); `force-unlock` names the job's
lease; and a dead holder's lease runs out in real time even with BCFLEET_NOW pinned."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from bcfleet.fleet import Fleet
from bcfleet.store import locks
from tests.support.fleet import T0, CliResult, run_cli

Cli = object


def held_elsewhere(url: str, job: str, ttl: float = 600) -> locks.Lease:
    """The lease of a holder that was killed: taken, never renewed nor given back."""
    other = Fleet.open(url)  # another process of the same environment (BCFLEET_NOW pinned)
    try:
        lease, ours = locks.take(
            other, f"job:{job}", holder="cron@host-2:4242 tick", operation=f"job {job}",
            ttl_seconds=ttl,
        )  # fmt: skip
    finally:
        other.close()
    assert ours
    return lease


@pytest.fixture
def pinned(db_url: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fleet on SQLite and on PostgreSQL, with BCFLEET_NOW pinned as cron tests pin it."""
    monkeypatch.setenv("BCFLEET_NOW", T0.isoformat())
    Fleet.open(db_url).close()
    return db_url


def test_a_due_job_skipped_for_another_holder_makes_tick_exit_3_naming_both(pinned: str) -> None:
    lease = held_elsewhere(pinned, "vps.usage")
    result = run_cli("jobs", "tick", db=pinned)
    assert result.exit_code == 3, result.stderr
    line = next(x for x in result.stderr.splitlines() if "vps.usage" in x)
    assert line.startswith("error: LOCKED: job vps.usage was due but not run: locked by ")
    assert "cron@host-2:4242 tick" in line and lease.id in line
    ran = run_cli("jobs", "tick", "--json", db=pinned)
    assert ran.exit_code == 3  # still held: still said
    assert [r["job"] for r in ran.json()["runs"] if r["id"] is None] == ["vps.usage"]  # type: ignore[index]


def test_force_unlock_of_a_job_lease_names_the_job_not_apply(pinned: str) -> None:
    lease = held_elsewhere(pinned, "vps.usage")
    unlocked = run_cli("force-unlock", lease.id, db=pinned)
    assert unlocked.exit_code == 0, unlocked.stderr
    assert "the lease of job vps.usage is free" in unlocked.stdout
    assert "fleet apply" not in unlocked.stdout
    assert run_cli("jobs", "tick", db=pinned).exit_code == 0


@pytest.mark.parametrize("debug", [pytest.param(False, id="plain"), pytest.param(True, id="debug")])
def test_a_failing_job_is_one_line_with_its_code_and_the_traceback_needs_debug(
    cli: Cli, sqlite_url: str, debug: bool
) -> None:
    database = sqlite3.connect(Path(sqlite_url.removeprefix("sqlite:///")))
    database.execute("DROP TABLE webhook_deliveries")  # the webhooks job cannot read its queue
    database.commit()
    database.close()
    result: CliResult = cli("jobs", "tick", *(["--debug"] if debug else []))  # type: ignore[operator]
    assert result.exit_code == 1
    failed = [x for x in result.stderr.splitlines() if x.startswith("error: job ")]
    assert failed == [
        "error: job webhooks failed: INTERNAL: sqlalchemy.exc.OperationalError: "
        "(sqlite3.OperationalError) no such table: webhook_deliveries"
    ]
    assert ("Traceback (most recent call last)" in result.stderr) is debug
    if not debug:
        assert "[SQL:" not in result.stderr
        assert len(result.stderr.splitlines()) == 2  # the line, and how to see the traceback


def test_a_dead_holders_lease_expires_with_bcfleet_now_pinned(pinned: str) -> None:
    """Every process under BCFLEET_NOW starts at the same instant, so a lease judged by that
    clock never ran out; leases are judged by the wall clock instead."""
    held_elsewhere(pinned, "vps.usage", ttl=1.0)
    tick = ("jobs", "tick", "--job", "vps.usage", "--json")
    assert run_cli(*tick, db=pinned).exit_code == 3  # alive: its lease runs
    time.sleep(1.2)  # one TTL of real time; the pinned clock has not moved
    ran = run_cli(*tick, db=pinned)
    assert ran.exit_code == 0, ran.stderr
    (run,) = ran.json()["runs"]  # type: ignore[index]
    assert (run["outcome"], run["startedAt"]) == ("ok", "2026-11-30T10:00:00Z")

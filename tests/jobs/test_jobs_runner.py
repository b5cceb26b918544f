"""Job runtime: the registry, leases in the locks table, recorded runs, due and overdue, `fleet jobs tick|list`."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlmodel import select

from bcfleet.clock import FakeClock
from bcfleet.errors import LockedError, NotFoundError
from bcfleet.fleet import Fleet
from bcfleet.jobs.registry import JOBS, JobSpec, get_job, job_names
from bcfleet.jobs.runner import current_holder, recent_runs, run_job, status, tick
from bcfleet.settings import FleetSettings
from bcfleet.store import locks
from bcfleet.store.models.jobs import JobRun, JobState
from tests.support import jobs as job_fixtures
from tests.support.fleet import T0, open_fleet


def runs(fleet: Fleet, job: str) -> list[JobRun]:
    with fleet.read() as session:
        rows = list(session.exec(select(JobRun).where(JobRun.job == job)).all())
    return sorted(rows, key=lambda r: (r.started_at, r.id))


# ---------------------------------------------------------------------------
# Registry


def test_the_six_jobs_of_the_product_with_their_default_intervals() -> None:
    """PRODUCT.md §7's six jobs, plus webhook delivery."""
    assert {s.name: s.default_interval for s in JOBS} == {
        "webhooks": 10.0,
        "vps.hosts": 30.0,
        "vps.usage": 300.0,
        "reservations.retry": 30.0,
        "reservations.lifecycle": 10.0,
        "spares": 30.0,
        "providers.reconcile": 60.0,
    }
    assert get_job("vps.usage").target == "bcfleet.jobs.vps_usage:run_vps_usage"
    assert get_job("reservations.lifecycle").target == "bcfleet.jobs.reservations:run_lifecycle"


def test_intervals_come_from_settings() -> None:
    settings = FleetSettings(job_intervals={"vps.usage": 60.0})
    assert get_job("vps.usage").interval(settings) == 60.0
    assert get_job("spares").interval(settings) == 30.0


def test_an_unknown_job_is_not_found_and_names_the_known_ones() -> None:
    with pytest.raises(NotFoundError) as error:
        get_job("vps.nope")
    assert error.value.details["jobs"] == list(job_names())


def test_a_job_whose_module_is_not_there_is_skipped_not_available(fleet: Fleet) -> None:
    missing = JobSpec("test.missing", "bcfleet.jobs.not_written_yet:run_it", 30.0, "later")
    result = run_job(fleet, missing)
    assert (result.outcome, result.error) == ("skipped", "not available")
    assert [r.outcome for r in runs(fleet, "test.missing")] == ["skipped"]


def test_a_module_without_the_function_is_skipped_too(fleet: Fleet) -> None:
    result = run_job(fleet, JobSpec("test.nofunc", "tests.support.jobs:nope", 30.0, "-"))
    assert result.outcome == "skipped"


# ---------------------------------------------------------------------------
# Recorded runs and schedule


def test_a_run_is_recorded_with_its_counts_and_the_next_due_time(fleet: Fleet) -> None:
    result = run_job(fleet, job_fixtures.spec("quick_job", interval=45))
    assert (result.outcome, result.counts) == ("ok", {"calls": 1})
    assert job_fixtures.calls == [T0]  # the job got the fleet's clock as now
    (row,) = runs(fleet, "test.quick_job")
    assert (row.id, row.outcome, row.counts, row.error) == (result.id, "ok", {"calls": 1}, None)
    assert row.id.startswith("run_")
    with fleet.read() as session:
        state = session.get(JobState, "test.quick_job")
    assert state is not None
    assert (state.last_run_at, state.last_outcome) == (T0, "ok")
    assert state.next_due_at == T0 + timedelta(seconds=45)


def test_a_failing_job_is_recorded_as_an_error_and_does_not_raise(fleet: Fleet) -> None:
    result = run_job(fleet, job_fixtures.spec("failing_job"))
    assert result.outcome == "error"
    assert result.error == "INTERNAL: RuntimeError: the provider said no"
    assert (
        runs(fleet, "test.failing_job")[0].error == "INTERNAL: RuntimeError: the provider said no"
    )


def test_the_lease_is_given_back_after_a_run(fleet: Fleet) -> None:
    run_job(fleet, job_fixtures.spec("quick_job"))
    with fleet.read() as session:
        assert current_holder(session, "job:test.quick_job", fleet.now()) is None


def test_runs_older_than_a_week_are_pruned(fleet: Fleet, clock: FakeClock) -> None:
    spec = job_fixtures.spec("quick_job")
    run_job(fleet, spec)
    clock.advance(days=8)
    run_job(fleet, spec)
    assert [r.started_at for r in runs(fleet, spec.name)] == [T0 + timedelta(days=8)]


# ---------------------------------------------------------------------------
# Leases


def acquire(fleet: Fleet, name: str, holder: str, ttl: float = 60) -> locks.Lease | None:
    lease, ours = locks.take(fleet, name, holder=holder, operation="job x", ttl_seconds=ttl)
    return lease if ours else None


def test_a_held_lease_is_not_taken_and_an_expired_one_is(fleet: Fleet, clock: FakeClock) -> None:
    first = acquire(fleet, "job:x", "a")
    assert first is not None
    assert acquire(fleet, "job:x", "b") is None
    clock.advance(seconds=59)
    assert acquire(fleet, "job:x", "b") is None
    clock.advance(seconds=1)  # a killed holder stops renewing: its lease runs out
    second = acquire(fleet, "job:x", "b")
    assert second is not None and second.id != first.id
    assert not locks.renew(fleet, first, 60)  # the old holder has lost it
    locks.release(fleet, first)  # and cannot release the new holder's lease
    with fleet.read() as session:
        assert current_holder(session, "job:x", fleet.now())["holder"] == "b"  # type: ignore[index]


def test_renewing_keeps_a_lease(fleet: Fleet, clock: FakeClock) -> None:
    held = acquire(fleet, "job:x", "a")
    assert held is not None
    clock.advance(seconds=50)
    assert locks.renew(fleet, held, 60)
    clock.advance(seconds=50)
    assert acquire(fleet, "job:x", "b") is None


def test_lease_expiry_lets_another_runner_take_over_the_job(
    sqlite_url: str, clock: FakeClock
) -> None:
    killed = open_fleet(sqlite_url, clock, lock_ttl_seconds=120)
    other = open_fleet(sqlite_url, clock, lock_ttl_seconds=120)
    spec = job_fixtures.spec("quick_job")
    # a runner took the lease and was killed before giving it back
    assert acquire(killed, "job:test.quick_job", "gone", ttl=120)
    assert run_job(other, spec).outcome == "skipped"
    clock.advance(seconds=121)
    assert run_job(other, spec).outcome == "ok"
    killed.close()
    other.close()


def test_concurrent_acquirers_get_one_lease(db_url: str, clock: FakeClock) -> None:
    """Eight threads, each with its own engine, race for one lease on SQLite and PostgreSQL."""
    fleets = [open_fleet(db_url, clock) for _ in range(8)]
    barrier = threading.Barrier(len(fleets))
    won: list[str] = []

    def race(fleet: Fleet, name: str) -> None:
        barrier.wait()
        if acquire(fleet, "job:race", name):
            won.append(name)

    threads = [threading.Thread(target=race, args=(f, f"r{i}")) for i, f in enumerate(fleets)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1
    for fleet in fleets:
        fleet.close()


def test_two_runners_never_run_one_job_at_once(db_url: str, clock: FakeClock) -> None:
    first, second = open_fleet(db_url, clock), open_fleet(db_url, clock)
    spec = job_fixtures.spec("held_job")
    results = {}
    runner = threading.Thread(target=lambda: results.setdefault("a", run_job(first, spec)))
    runner.start()
    assert job_fixtures.started.wait(10)
    results["b"] = run_job(second, spec)
    with pytest.raises(LockedError) as locked:
        run_job(second, spec, locked_is_error=True)
    job_fixtures.release.set()
    runner.join()
    assert (results["a"].outcome, results["b"].outcome) == ("ok", "skipped")
    assert locked.value.details["holder"]["operation"] == "job test.held_job"
    assert [r.outcome for r in runs(first, spec.name)] == ["ok"]  # the skipped run is not recorded
    first.close()
    second.close()


# ---------------------------------------------------------------------------
# Due, tick and check


def test_tick_runs_what_is_due_and_nothing_else(fleet: Fleet, clock: FakeClock) -> None:
    first = tick(fleet)
    assert [r.job for r in first] == list(job_names())  # never run: all due
    assert tick(fleet) == []
    clock.advance(seconds=10)
    assert [r.job for r in tick(fleet)] == ["reservations.lifecycle", "webhooks"]
    clock.advance(seconds=20)
    assert [r.job for r in tick(fleet)] == [
        "vps.hosts",
        "reservations.retry",
        "reservations.lifecycle",
        "spares",
        "webhooks",
    ]


def test_tick_of_a_named_job_runs_it_now_due_or_not(fleet: Fleet) -> None:
    tick(fleet)
    (result,) = tick(fleet, job="vps.usage")
    assert (result.job, result.outcome) == ("vps.usage", "ok")


def test_status_says_what_is_due_and_overdue(fleet: Fleet, clock: FakeClock) -> None:
    rows = {r["job"]: r for r in status(fleet)}
    assert rows["vps.usage"]["due"] and rows["vps.usage"]["overdue"]
    tick(fleet)
    rows = {r["job"]: r for r in status(fleet)}
    assert not rows["vps.usage"]["due"]
    assert rows["vps.usage"]["nextDueAt"] == "2026-11-30T10:05:00Z"
    clock.advance(minutes=6)
    rows = {r["job"]: r for r in status(fleet)}
    assert rows["vps.usage"]["due"] and not rows["vps.usage"]["overdue"]
    clock.advance(minutes=5)  # a whole interval past due
    assert {r["job"]: r for r in status(fleet)}["vps.usage"]["overdue"]


def test_recent_runs_newest_first(fleet: Fleet, clock: FakeClock) -> None:
    tick(fleet, job="vps.usage")
    clock.advance(seconds=1)
    tick(fleet, job="vps.usage")
    items = recent_runs(fleet, limit=5, job="vps.usage")
    assert [r["startedAt"] for r in items] == ["2026-11-30T10:00:01Z", "2026-11-30T10:00:00Z"]


def test_cli_tick_check_exits_2_when_something_is_overdue(cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    check = cli("jobs", "tick", "--check", "--json")
    assert check.exit_code == 2
    assert "vps.usage" in check.json()["overdue"]
    assert cli("jobs", "tick").exit_code == 0
    assert cli("jobs", "tick", "--check").exit_code == 0
    monkeypatch.setenv("BCFLEET_NOW", (T0 + timedelta(minutes=11)).isoformat())
    assert cli("jobs", "tick", "--check").exit_code == 2
    assert cli("jobs", "tick", "--check", "--grace", "3600").exit_code == 0


def test_cli_tick_job_and_list(cli) -> None:  # type: ignore[no-untyped-def]
    ran = cli("jobs", "tick", "--job", "vps.usage", "--json")
    assert ran.exit_code == 0, ran.stderr
    (run,) = ran.json()["runs"]
    assert (run["job"], run["outcome"]) == ("vps.usage", "ok")
    listing = cli("jobs", "list", "--json").json()
    usage = next(j for j in listing["jobs"] if j["job"] == "vps.usage")
    assert usage["lastOutcome"] == "ok" and usage["available"] is True
    assert listing["runs"][0]["id"] == run["id"]
    human = cli("jobs", "list")
    assert "vps.usage" in human.stdout and "NEXT DUE" in human.stdout
    assert cli("jobs", "tick", "--job", "nope").exit_code == 64


def test_cli_tick_of_a_job_held_elsewhere_exits_3(cli, sqlite_url: str) -> None:  # type: ignore[no-untyped-def]
    other = Fleet.open(sqlite_url)  # another process: BCFLEET_NOW pinned, leases in real time
    assert acquire(other, "job:vps.usage", "elsewhere", ttl=600)
    result = cli("jobs", "tick", "--job", "vps.usage", "--json")
    assert result.exit_code == 3
    assert result.json()["error"]["code"] == "LOCKED"
    other.close()

"""A job runs once per due time however many runners there are (two daemons, a daemon and a cron tick)."""

from __future__ import annotations

import threading
from datetime import timedelta
from itertools import pairwise

from sqlmodel import col, select

from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.jobs.runner import NOT_DUE, run_job, tick
from bcfleet.jobs.scheduler import run_scheduler
from bcfleet.jobs.stop import request_stop
from bcfleet.store.models.jobs import JobRun
from tests.support import jobs as job_fixtures
from tests.support.fleet import open_fleet


def run_starts(fleet: Fleet, job: str) -> list[JobRun]:
    with fleet.read() as session:
        query = select(JobRun).where(JobRun.job == job).order_by(col(JobRun.started_at))
        return list(session.exec(query).all())


def test_a_runner_that_finds_the_job_already_ran_for_this_due_time_skips_it(
    sqlite_url: str, clock: FakeClock
) -> None:
    first, second = open_fleet(sqlite_url, clock), open_fleet(sqlite_url, clock)
    spec = job_fixtures.spec("quick_job", interval=30)
    assert run_job(first, spec, only_if_due=True).outcome == "ok"
    late = run_job(second, spec, only_if_due=True)  # its timer fired just after the other's
    assert (late.outcome, late.error, late.id) == ("skipped", NOT_DUE, None)
    clock.advance(seconds=30)
    assert run_job(second, spec, only_if_due=True).outcome == "ok"
    assert len(run_starts(first, spec.name)) == 2  # the skip is not recorded
    assert len(job_fixtures.calls) == 2
    first.close()
    second.close()


def test_a_forced_run_still_runs_whether_due_or_not(fleet: Fleet) -> None:
    spec = job_fixtures.spec("quick_job", interval=30)
    run_job(fleet, spec)
    assert run_job(fleet, spec).outcome == "ok"  # `fleet jobs tick --job NAME`: due or not


def test_tick_runs_nothing_a_daemon_ran_since_it_looked(fleet: Fleet) -> None:
    """tick reads what is due, then runs each job only if it is still due under the lease."""
    tick(fleet)
    assert tick(fleet) == []  # nothing due, nothing reported as skipped


def test_two_daemons_run_each_job_once_per_due_time(sqlite_url: str, moving_fleet: Fleet) -> None:
    """Two schedulers over one database (each with its own engine), a job every 0.3 s:
    no recorded run starts before the due time the run before it set."""
    other = open_fleet(sqlite_url, moving_fleet.clock)
    spec = job_fixtures.spec("quick_job", interval=0.3)
    daemons = [
        threading.Thread(
            target=run_scheduler, args=(handle,), kwargs={"jobs": [spec], "install_signals": False}
        )
        for handle in (moving_fleet, other)
    ]
    for daemon in daemons:
        daemon.start()
    enough = threading.Event()

    def watch() -> None:
        while not enough.wait(0.05):
            if len(job_fixtures.calls) >= 6:
                enough.set()

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    enough.wait(30)
    request_stop()
    for daemon in daemons:
        daemon.join()
    runs = run_starts(moving_fleet, spec.name)
    assert len(runs) >= 6
    gaps = [after.started_at - before.started_at for before, after in pairwise(runs)]
    assert min(gaps) >= timedelta(seconds=0.3), gaps
    other.close()

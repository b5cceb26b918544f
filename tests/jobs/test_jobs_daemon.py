"""`fleet jobs run`: the APScheduler daemon runs jobs at their intervals and stops cleanly on a signal."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlmodel import select

from bcfleet.fleet import Fleet
from bcfleet.jobs.scheduler import run_scheduler
from bcfleet.jobs.stop import request_stop
from bcfleet.store.models.jobs import JobRun
from tests.support import jobs as job_fixtures
from tests.support.fleet import run_cli
from tests.support.waiting import holds_within


def recorded(fleet: Fleet, job: str) -> list[JobRun]:
    with fleet.read() as session:
        return list(session.exec(select(JobRun).where(JobRun.job == job)).all())


def stop_when(condition: Callable[[], bool], timeout: float = 20.0) -> threading.Thread:
    """A thread that requests the daemon's stop once condition() holds (or the timeout passes)."""

    def watch() -> None:
        holds_within(condition, timeout=timeout)
        request_stop()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_the_daemon_runs_a_job_at_its_interval_and_records_each_run(moving_fleet: Fleet) -> None:
    spec = job_fixtures.spec("quick_job", interval=0.2)
    stop_when(lambda: len(job_fixtures.calls) >= 3)
    assert run_scheduler(moving_fleet, jobs=[spec], install_signals=False) == 0
    runs = recorded(moving_fleet, spec.name)
    assert len(runs) >= 3
    assert {r.outcome for r in runs} == {"ok"}


def test_a_stop_lets_the_running_job_finish_and_record_its_run(fleet: Fleet) -> None:
    spec = job_fixtures.spec("held_job", interval=60)
    stop_when(job_fixtures.started.is_set)
    finisher = threading.Timer(0.5, job_fixtures.release.set)
    finisher.start()
    began = time.monotonic()
    assert run_scheduler(fleet, jobs=[spec], install_signals=False) == 0
    assert time.monotonic() - began >= 0.4  # it waited for the job
    assert [r.outcome for r in recorded(fleet, spec.name)] == ["ok"]


def test_one_job_never_overlaps_itself(moving_fleet: Fleet) -> None:
    """A 0.6 s job every 0.1 s: max_instances=1 and coalescing, never two at once."""
    spec = job_fixtures.spec("slow_job", interval=0.1)
    stop_when(lambda: len(job_fixtures.calls) >= 2)
    run_scheduler(moving_fleet, jobs=[spec], install_signals=False)
    runs = sorted(recorded(moving_fleet, spec.name), key=lambda r: r.id)
    assert len(runs) >= 2
    assert {r.outcome for r in runs} == {"ok"}  # no 'skipped: locked' — they never overlapped


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("timeout") is None, reason="needs coreutils timeout")
def test_fleet_jobs_run_under_timeout_exits_cleanly_with_its_last_run_recorded(
    tmp_path: Path,
) -> None:
    """SIGTERM, as `timeout` sends it, once the daemon has recorded a run (not after a fixed
    time, which a loaded machine can spend on starting Python)."""
    db = f"sqlite:///{tmp_path / 'fleet.db'}"
    Fleet.open(db).close()
    command = [
        sys.executable, "-m", "bcfleet", "jobs", "run", "--db", db,
        "--job", "vps.usage", "--interval", "vps.usage=1",
    ]  # fmt: skip
    daemon = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    watcher = Fleet.open(db)
    try:
        ran = holds_within(lambda: recorded(watcher, "vps.usage"), timeout=60)
    finally:
        watcher.close()
        daemon.send_signal(signal.SIGTERM)
        _, stderr = daemon.communicate(timeout=60)
    assert ran, stderr
    assert daemon.returncode == 0, stderr
    assert "stopping signal=SIGTERM" in stderr
    assert stderr.rstrip().endswith("scheduler stopped")
    listing = run_cli("jobs", "list", "--json", db=db).json()
    usage = next(j for j in listing["jobs"] if j["job"] == "vps.usage")  # type: ignore[index]
    assert usage["lastOutcome"] == "ok"
    runs = [r for r in listing["runs"] if r["job"] == "vps.usage"]  # type: ignore[index]
    assert runs and all(r["outcome"] == "ok" for r in runs)

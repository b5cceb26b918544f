"""`fleet jobs run`: the APScheduler 3 daemon that runs each job at its interval until SIGTERM/SIGINT.

APScheduler only calls bcfleet.jobs.runner.run_job: one IntervalTrigger per
job, max_instances=1 and coalesce=True (a late job runs once, not once per
missed interval), and a misfire grace of one interval. The database lease
keeps two daemons (or a daemon and a cron tick) from running one job at once.
Each daemon's interval timer runs in its own phase, so when it fires it first
waits for the due time job_state holds (set by whichever runner ran the job
last), then runs the job only if it is still due under the lease: with two
daemons a job runs once per due time, not once per daemon.

A job first runs when job_state says it is due (at once when overdue). On
SIGTERM or SIGINT the daemon stops scheduling, asks running jobs to stop at
their next transaction boundary (vps.usage checks between batches), waits for
them to finish and record their run, and returns 0.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, timedelta
from types import FrameType
from typing import TYPE_CHECKING, Any

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from apscheduler.triggers.interval import IntervalTrigger

from bcfleet.clock import SystemClock
from bcfleet.jobs.registry import JOBS, JobSpec, get_job
from bcfleet.jobs.runner import holder_name, run_job
from bcfleet.jobs.stop import clear_stop, request_stop, stop_requested, wait_for_stop
from bcfleet.store.models import load_all
from bcfleet.store.models.jobs import JobState

if TYPE_CHECKING:
    from bcfleet.jobs.handle import JobHandle

log = logging.getLogger("bcfleet.jobs")
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _scheduled_run(fleet: JobHandle, spec: JobSpec, interval: float, holder: str) -> None:
    """What APScheduler calls: one run, never raising into the scheduler."""
    if stop_requested():
        return
    try:
        wait = _seconds_until_due(fleet, spec.name, interval)
        if wait > 0 and wait_for_stop(wait):
            return
        run_job(fleet, spec, holder=holder, interval=interval, only_if_due=True)
    except Exception:  # noqa: BLE001 - e.g. the database is away; the next interval retries
        log.exception("job=%s outcome=error reason=runner-failed", spec.name)


def _seconds_until_due(fleet: JobHandle, name: str, interval: float) -> float:
    with fleet.read() as session:
        state = session.get(JobState, name)
    if state is None or state.next_due_at is None:
        return 0.0
    wait = (state.next_due_at - fleet.now()).total_seconds()
    return min(max(wait, 0.0), interval)


def build_scheduler(
    fleet: JobHandle, specs: Sequence[JobSpec], intervals: Mapping[str, float], holder: str
) -> BackgroundScheduler:
    """A scheduler with one interval job per spec, each first due when job_state says."""
    scheduler = BackgroundScheduler(
        timezone=UTC, executors={"default": ThreadPoolExecutor(max(len(specs), 1))}
    )
    wall = SystemClock()  # APScheduler keeps real time; jobs get the fleet's clock
    for spec in specs:
        interval = intervals[spec.name]
        first = wall.now() + timedelta(seconds=_seconds_until_due(fleet, spec.name, interval))
        scheduler.add_job(
            _scheduled_run,
            IntervalTrigger(seconds=interval, timezone=UTC),
            args=(fleet, spec, interval, holder),
            id=spec.name,
            name=spec.name,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(1, int(interval)),
            next_run_time=first,
        )
    return scheduler


def install_stop_signals() -> dict[int, Any]:
    """Make SIGTERM and SIGINT request a stop; returns the handlers they replaced.

    Outside the main thread (where Python cannot set handlers) this does nothing.
    """

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("stopping signal=%s", signal.Signals(signum).name)
        request_stop()

    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, on_signal) for sig in STOP_SIGNALS}


def ignore_stop_signals() -> None:
    """For a process on its way out after a stop: a late SIGTERM (timeout signals the child,
    then its process group) must not kill it during interpreter shutdown, when Python has
    put default handlers back, and turn a clean exit 0 into 143. Ignored signals stay ignored."""
    if threading.current_thread() is threading.main_thread():
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)


def restore_signals(previous: Mapping[int, Any]) -> None:
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def run_scheduler(
    fleet: JobHandle,
    *,
    jobs: Sequence[str | JobSpec] | None = None,
    intervals: Mapping[str, float] | None = None,
    install_signals: bool = True,
    on_started: Callable[[], None] | None = None,
) -> int:
    """Run the daemon until a stop is requested (SIGTERM/SIGINT or request_stop()); returns 0."""
    clear_stop()
    load_all()  # every table mapped before the threads run queries
    if install_signals:
        install_stop_signals()
    specs = [s if isinstance(s, JobSpec) else get_job(s) for s in (jobs or JOBS)]
    every = {
        s.name: float((intervals or {}).get(s.name, s.interval(fleet.settings))) for s in specs
    }
    holder = holder_name("scheduler")
    scheduler = build_scheduler(fleet, specs, every, holder)
    try:
        scheduler.start()
        log.info(
            "scheduler started holder=%r jobs=%s",
            holder,
            ",".join(f"{n}/{s:g}s" for n, s in every.items()),
        )
        if on_started is not None:
            on_started()
        while not wait_for_stop(1.0):
            pass
    finally:
        if scheduler.running:
            scheduler.shutdown(wait=True)  # running jobs finish and record their run
        clear_stop()
        log.info("scheduler stopped")
    return 0

"""Run one job under its lease, record the run and the job's schedule; `fleet jobs tick|list` and the daemon call it.

A run: load the job function (missing module: skipped, 'not available'), take
the lease job:<name> (held elsewhere: skipped, 'locked', nothing recorded),
when only a due job may run (the daemon, `fleet jobs tick`) read job_state again
under the lease (not due: another runner ran it for this due time; skipped,
nothing recorded), call run_x(fleet, now) with now from the fleet's clock, then in one
transaction record a job_runs row, set job_state (last run, outcome, next due
= start + interval) and give the lease back. A job that raises is recorded
with outcome error and its message; the runner itself never raises for it.
"""

from __future__ import annotations

import logging
import os
import socket
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col

from bcfleet.clock import format_time
from bcfleet.domain.bounds import check_limit
from bcfleet.domain.job_documents import JobRunJson, JobStatusJson, LeaseHolderJson
from bcfleet.domain.pages import JOB_RUNS
from bcfleet.errors import FleetError, LockedError
from bcfleet.jobs.registry import JOBS, JobFunction, JobSpec, get_job
from bcfleet.jobs.stop import stop_requested
from bcfleet.store.locks import (
    JOB_LEASE_PREFIX,
    RANDOM_IDS,
    Lease,
    kept_alive,
    live,
    release,
    release_in,
    take,
)
from bcfleet.store.models.jobs import JobRun, JobState

if TYPE_CHECKING:
    from bcfleet.jobs.handle import JobHandle

log = logging.getLogger("bcfleet.jobs")

RUN_RETENTION = timedelta(days=7)
"""Job runs older than this are pruned when the job records a new one."""
ERROR_TEXT_LIMIT = 4000
NOT_DUE = "not due"
"""The error of a skipped, unrecorded run: another runner ran the job for this due time."""


def holder_name(role: str = "") -> str:
    """host:pid, and the role (scheduler, tick) when given: who holds a job's lease."""
    name = f"{socket.gethostname()}:{os.getpid()}"
    return f"{name} {role}".strip()


def job_lock_name(job: str) -> str:
    return f"{JOB_LEASE_PREFIX}{job}"


def current_holder(session: Session, name: str, now: datetime) -> LeaseHolderJson | None:
    """Who holds a live lease of that name, for LOCKED details and `fleet jobs list`."""
    lease = live(session, name, now)
    if lease is None:
        return None
    return {
        "lockId": lease.id,
        "holder": lease.holder,
        "operation": lease.operation,
        "since": format_time(lease.created_at),
        "expiresAt": format_time(lease.expires_at),
    }


@dataclass(frozen=True)
class RunResult:
    """What one run did; id is None for a run that was not recorded (lease held elsewhere)."""

    job: str
    outcome: str  # ok | error | skipped
    started_at: datetime
    finished_at: datetime
    counts: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    id: str | None = None

    @property
    def duration_ms(self) -> int:
        return int((self.finished_at - self.started_at) / timedelta(milliseconds=1))

    def to_json(self) -> JobRunJson:
        return {
            "id": self.id,
            "job": self.job,
            "outcome": self.outcome,
            "counts": dict(self.counts),
            "error": self.error,
            "startedAt": format_time(self.started_at),
            "finishedAt": format_time(self.finished_at),
            "durationMs": self.duration_ms,
        }


def _spec(job: str | JobSpec) -> JobSpec:
    return job if isinstance(job, JobSpec) else get_job(job)


def run_job(
    fleet: JobHandle,
    job: str | JobSpec,
    *,
    holder: str | None = None,
    interval: float | None = None,
    locked_is_error: bool = False,
    only_if_due: bool = False,
) -> RunResult:
    """Run one job now, under its lease; the result is recorded unless the lease was held.

    With only_if_due the job runs only if it is still due once the lease is ours: the due
    check and the run record of the runner before are both made under the lease, so two
    runners (two daemons, a daemon and a cron tick) never run a job twice for one due time.
    """
    spec = _spec(job)
    holder = holder or holder_name("tick")
    every = spec.interval(fleet.settings) if interval is None else interval
    started = fleet.now()
    try:
        function = spec.load()
    except Exception as exc:  # noqa: BLE001 - a broken module is this job's error, not ours
        return _record(fleet, spec, every, holder, None, started, "error", {}, _error_text(exc))
    if function is None:
        return _record(fleet, spec, every, holder, None, started, "skipped", {}, "not available")
    ttl = fleet.settings.lock_ttl_seconds
    lease, ours = take(
        fleet,
        job_lock_name(spec.name),
        holder=holder,
        operation=f"job {spec.name}",
        ttl_seconds=ttl,
    )
    if not ours:
        return _locked(fleet, spec, started, locked_is_error)
    if only_if_due and not _due(fleet, spec.name):
        release(fleet, lease)
        log.debug("job=%s outcome=skipped reason=not-due", spec.name)
        return RunResult(spec.name, "skipped", started, fleet.now(), error=NOT_DUE)
    started = fleet.now()
    with kept_alive(fleet, lease, ttl):
        outcome, counts, error = _call(function, fleet, started)
    return _record(fleet, spec, every, holder, lease, started, outcome, counts, error)


def _call(
    function: JobFunction, fleet: JobHandle, now: datetime
) -> tuple[str, dict[str, int], str | None]:
    try:
        counts = function(fleet, now)
    except Exception as exc:  # noqa: BLE001 - recorded as the run's error
        log.debug("job failed", exc_info=True)  # the traceback: shown with --debug only
        return "error", {}, _error_text(exc)
    return "ok", {str(k): int(v) for k, v in dict(counts or {}).items()}, None


def _error_text(exc: BaseException) -> str:
    """The run's error on one line, as `fleet jobs tick` and `jobs list` show it: CODE: message
    (INTERNAL and the exception's class for anything that is not a FleetError). The rest (a
    driver's SQL and parameters, the traceback) is logged at DEBUG, never recorded."""
    if isinstance(exc, FleetError):
        text = f"{exc.code}: {exc.message}"
    else:
        text = f"{FleetError.code}: " + "".join(traceback.format_exception_only(exc)).strip()
    return text.splitlines()[0][:ERROR_TEXT_LIMIT] if text else FleetError.code


def _locked(fleet: JobHandle, spec: JobSpec, started: datetime, raise_it: bool) -> RunResult:
    with fleet.read() as session:
        holder = current_holder(session, job_lock_name(spec.name), fleet.lease_now())
    if raise_it:
        raise LockedError(
            f"job {spec.name} is running elsewhere", {"job": spec.name, "holder": holder}
        )
    by = holder["holder"] if holder else "another runner"
    log.info("job=%s outcome=skipped reason=locked holder=%r", spec.name, by)
    lease = f" (lock {holder['lockId']}, expires {holder['expiresAt']})" if holder else ""
    return RunResult(spec.name, "skipped", started, fleet.now(), error=f"locked by {by}{lease}")


def _upsert_state(session: Session) -> postgresql.Insert | sqlite.Insert:
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(JobState)
    return sqlite.insert(JobState)


def _record(
    fleet: JobHandle,
    spec: JobSpec,
    interval: float,
    holder: str,
    lease: Lease | None,
    started: datetime,
    outcome: str,
    counts: dict[str, int],
    error: str | None,
) -> RunResult:
    """One transaction: the job_runs row, the job's schedule, the lease given back."""
    finished = fleet.now()
    run_id = RANDOM_IDS.new("run", finished)
    due = started + timedelta(seconds=interval)
    result = RunResult(spec.name, outcome, started, finished, counts, error, run_id)
    with fleet.write(bump_revision=False) as session:
        session.add(JobRun(holder=holder, **_run_fields(result)))
        schedule = {"last_run_at": started, "last_outcome": outcome, "next_due_at": due}
        statement = _upsert_state(session).values(job=spec.name, **schedule)
        session.connection().execute(
            statement.on_conflict_do_update(index_elements=["job"], set_=schedule)
        )
        session.connection().execute(
            delete(JobRun).where(
                col(JobRun.job) == spec.name,
                col(JobRun.started_at) < started - RUN_RETENTION,
            )
        )
        if lease is not None:
            release_in(session, lease)
    _log(result)
    return result


def _run_fields(result: RunResult) -> dict[str, Any]:
    return {
        "id": result.id,
        "job": result.job,
        "started_at": result.started_at,
        "finished_at": result.finished_at,
        "outcome": result.outcome,
        "counts": dict(result.counts),
        "error": result.error,
    }


def _log(result: RunResult) -> None:
    """One structured line per run: key=value text, and the same fields as record attributes."""
    fields = "".join(f" {k}={v}" for k, v in result.counts.items())
    extra = {
        "job": result.job,
        "outcome": result.outcome,
        "counts": dict(result.counts),
        "duration_ms": result.duration_ms,
        "run_id": result.id,
    }
    level = logging.ERROR if result.outcome == "error" else logging.INFO
    message = "job=%s outcome=%s duration_ms=%d run=%s%s"
    args: tuple[Any, ...] = (result.job, result.outcome, result.duration_ms, result.id, fields)
    if result.error:
        message += " error=%r"
        args = (*args, result.error)
    log.log(level, message, *args, extra=extra)


# ---------------------------------------------------------------------------
# What is due: `fleet jobs tick`, `fleet jobs tick --check`, `fleet jobs list`


def _states(session: Session) -> dict[str, JobState]:
    return {s.job: s for s in session.execute(select(JobState)).scalars().all()}


def is_due(state: JobState | None, now: datetime) -> bool:
    return state is None or state.next_due_at is None or state.next_due_at <= now


def _due(fleet: JobHandle, job: str) -> bool:
    with fleet.read() as session:
        return is_due(session.get(JobState, job, populate_existing=True), fleet.now())


def tick(fleet: JobHandle, *, job: str | None = None, holder: str | None = None) -> list[RunResult]:
    """Run every due job once, in PRODUCT.md §7's order; or the named job now, due or not."""
    holder = holder or holder_name("tick")
    if job is not None:
        return [run_job(fleet, job, holder=holder, locked_is_error=True)]
    with fleet.read() as session:
        states = _states(session)
    results: list[RunResult] = []
    for spec in JOBS:
        if stop_requested():
            break
        if is_due(states.get(spec.name), fleet.now()):
            result = run_job(fleet, spec, holder=holder, only_if_due=True)
            if result.error != NOT_DUE:
                results.append(result)
    return results


def status(
    fleet: JobHandle, *, intervals: Mapping[str, float] | None = None, grace: float | None = None
) -> list[JobStatusJson]:
    """Each job: interval, availability, last run, next due, due, overdue, lease holder."""
    now = fleet.now()
    with fleet.read() as session:
        states = _states(session)
        leased = fleet.lease_now()
        holders = {s.name: current_holder(session, job_lock_name(s.name), leased) for s in JOBS}
    rows: list[JobStatusJson] = []
    for spec in JOBS:
        interval = (intervals or {}).get(spec.name, spec.interval(fleet.settings))
        state = states.get(spec.name)
        available = _available(spec)
        late = timedelta(seconds=interval if grace is None else grace)
        due_at = state.next_due_at if state else None
        rows.append(
            {
                "job": spec.name,
                "description": spec.description,
                "intervalSeconds": interval,
                "available": available,
                "lastRunAt": format_time(state.last_run_at) if state else None,
                "lastOutcome": state.last_outcome if state else None,
                "nextDueAt": format_time(due_at),
                "due": is_due(state, now),
                "overdue": available and (due_at is None or now > due_at + late),
                "heldBy": holders[spec.name],
                "watermark": format_time(state.watermark) if state else None,
            }
        )
    return rows


def _available(spec: JobSpec) -> bool:
    try:
        return spec.load() is not None
    except Exception:  # noqa: BLE001 - a module that fails to import is available but broken
        return True


def recent_runs(
    fleet: JobHandle, *, limit: int = JOB_RUNS.default, job: str | None = None
) -> list[JobRunJson]:
    """The latest recorded runs, newest first (at most pages.JOB_RUNS.maximum)."""
    check_limit(limit, JOB_RUNS.maximum)
    query = select(JobRun).order_by(JobRun.started_at.desc()).limit(limit)  # type: ignore[attr-defined]
    if job is not None:
        query = query.where(JobRun.job == get_job(job).name)  # type: ignore[arg-type]
    with fleet.read() as session:
        runs = session.execute(query).scalars().all()
    return [
        RunResult(
            r.job, r.outcome, r.started_at, r.finished_at, dict(r.counts), r.error, r.id
        ).to_json()
        for r in runs
    ]

"""`fleet jobs run|tick|list`: the scheduler daemon, one pass for cron, and what ran and what is due."""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

import click

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.api.jobs import job_names
from bcfleet.cli.common import WHOLE, Seconds, fleet_command, output, parse_pairs, state, table
from bcfleet.clock import OffsetClock, parse_time
from bcfleet.domain.pages import JOB_RUNS
from bcfleet.errors import EXIT_CHANGES, EXIT_ERROR, EXIT_LOCKED, EXIT_OK

JOB_NAME = click.Choice(list(job_names()))
STRUCTURED = ("job", "outcome", "counts", "duration_ms", "run_id")


@click.group("jobs")
def group() -> None:
    """Scheduled jobs: vps.hosts, vps.usage, reservations.*, spares, providers.reconcile."""


class JsonLines(logging.Formatter):
    """One JSON object per log record, with the run fields (job, outcome, counts, …) when present."""

    def format(self, record: logging.LogRecord) -> str:
        body: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S%z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        body.update({k: getattr(record, k) for k in STRUCTURED if hasattr(record, k)})
        if record.exc_info:
            body["exception"] = self.formatException(record.exc_info)
        return json.dumps(body, default=str)


def _not_a_run(record: logging.LogRecord) -> bool:
    """False for a run's own log line: `fleet jobs tick` reports each run itself."""
    return not hasattr(record, "outcome")


def _configure_logging(level: int, as_json: bool, *, runs: bool = True) -> None:
    """Log to stderr; --debug (and only it) adds the jobs' tracebacks (logged at DEBUG)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        JsonLines() if as_json else logging.Formatter("%(asctime)s %(levelname)s %(message)s")
    )
    if not runs:
        handler.addFilter(_not_a_run)
    logger = logging.getLogger("bcfleet")
    logger.handlers[:] = [handler]
    logger.setLevel(logging.DEBUG if state().debug else level)
    logger.propagate = False
    logging.getLogger("apscheduler").setLevel(logging.WARNING)


def _runs_table(runs: list[dict[str, Any]]) -> str:
    rows = [
        {**r, "counts": " ".join(f"{k}={v}" for k, v in r["counts"].items()) or "-"} for r in runs
    ]
    columns = [
        ("JOB", "job"),
        ("STARTED", "startedAt"),
        ("OUTCOME", "outcome"),
        ("MS", "durationMs"),
        ("COUNTS", "counts"),
        ("ERROR", "error"),
    ]
    return table(rows, columns)


def _every(seconds: float) -> str:
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}m"
    return f"{seconds:g}s"


def _jobs_table(jobs: list[dict[str, Any]]) -> str:
    jobs = [
        {
            **j,
            "every": _every(j["intervalSeconds"]),
            "runningOn": j["heldBy"]["holder"] if j["heldBy"] else None,
        }
        for j in jobs
    ]
    columns = [
        ("JOB", "job"),
        ("EVERY", "every"),
        ("AVAILABLE", "available"),
        ("LAST RUN", "lastRunAt"),
        ("OUTCOME", "lastOutcome"),
        ("NEXT DUE", "nextDueAt"),
        ("DUE", "due"),
        ("OVERDUE", "overdue"),
        ("RUNNING ON", "runningOn"),
    ]
    return table(jobs, columns)


@fleet_command(group, "list")
@click.option(
    "--runs", "run_count", type=WHOLE, default=JOB_RUNS.default, show_default=True,
    help="Recent runs.",
)  # fmt: skip
@click.option("--job", type=JOB_NAME, help="Only this job's runs.")
def list_(run_count: int, job: str | None) -> None:
    """Each job's last run and next due time, then the latest runs."""
    s = state()
    jobs = s.fleet.api.jobs
    body = {
        "jobs": jobs.status(LOCAL_OPERATOR),
        "runs": jobs.runs(LOCAL_OPERATOR, limit=run_count, job=job),
    }
    output(body, lambda b: _jobs_table(b["jobs"]) + "\n\n" + _runs_table(b["runs"]))


def _say_failed_and_held(runs: list[dict[str, Any]]) -> int:
    """One stderr line per failed run and per job skipped for another holder's lease; the
    exit code they call for (1 a job failed, else 3 a lease was held, else 0)."""
    failed = [r for r in runs if r["outcome"] == "error"]
    held = [r for r in runs if r["outcome"] == "skipped" and r["id"] is None]  # JobRunJson.id
    for run in failed:
        click.echo(f"error: job {run['job']} failed: {run['error']}", err=True)
    for run in held:
        click.echo(
            f"error: LOCKED: job {run['job']} was due but not run: {run['error']}; it runs at "
            "the next tick once that holder is done or its lease expires (`fleet force-unlock "
            "LOCK` if the holder is gone)",
            err=True,
        )
    if failed and not state().debug:
        click.echo("(run again with --debug for the tracebacks)", err=True)
    return EXIT_ERROR if failed else EXIT_LOCKED if held else EXIT_OK


@fleet_command(group, "tick")
@click.option("--job", type=JOB_NAME, help="Run this job now, due or not.")
@click.option("--check", is_flag=True, help="Run nothing; exit 2 when a job is overdue.")
@click.option(
    "--grace",
    type=Seconds(),
    help="With --check: seconds past its due time before a job counts as overdue "
    "(default: the job's interval).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log one line per run on stderr.")
def tick_(job: str | None, check: bool, grace: float | None, verbose: bool) -> int:
    """Run every due job once and exit (for cron and systemd timers).

    Exit 0 when every due job ran; 1 when a job failed (one line each on stderr, the traceback
    only with --debug); 3 when a due job was skipped because another runner holds its lease
    (the line names the job and the holder), so cron hears of a job that did not run.
    """
    s = state()
    _configure_logging(logging.INFO if verbose else logging.WARNING, as_json=False, runs=verbose)
    if check:
        jobs = s.fleet.api.jobs.status(LOCAL_OPERATOR, grace=grace)
        late = [j["job"] for j in jobs if j["overdue"]]
        output(
            {"overdue": late, "jobs": jobs},
            lambda b: _jobs_table(b["jobs"]) + f"\n\noverdue: {', '.join(late) or 'none'}",
        )
        return EXIT_CHANGES if late else EXIT_OK
    # SIGTERM: finish the running batch and job, start no other
    results = s.fleet.api.jobs.tick(LOCAL_OPERATOR, job=job)
    output({"runs": results}, lambda b: _runs_table(b["runs"]) if b["runs"] else "nothing due")
    return _say_failed_and_held([dict(r) for r in results])


@fleet_command(group, "run")
@click.option("--job", "only", multiple=True, type=JOB_NAME, help="Run only these jobs.")
@click.option("--interval", "overrides", multiple=True, help="NAME=SECONDS, e.g. vps.usage=60.")
@click.option("--log-json", is_flag=True, help="Log JSON lines instead of text.")
def run(only: tuple[str, ...], overrides: tuple[str, ...], log_json: bool) -> int:
    """The scheduler daemon: every job at its interval until SIGTERM or SIGINT (then exit 0)."""
    s = state()
    _configure_logging(logging.INFO, as_json=log_json)
    intervals: dict[str, float] = {}
    for item in overrides:
        intervals.update(parse_pairs(item, "--interval"))
    for name, seconds in intervals.items():
        if seconds <= 0:
            raise click.BadParameter(
                f"{name}={seconds:g} must be positive", param_hint="--interval"
            )
    pinned = os.environ.get("BCFLEET_NOW")
    if pinned:
        s.fleet.clock = OffsetClock(parse_time(pinned))  # a daemon's time moves on from there
    return s.fleet.api.jobs.daemon(LOCAL_OPERATOR, jobs=only, intervals=intervals)

"""Jobs: each scheduled job's last run and outcome, when it is next due, and its recent failures."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from rich.text import Text

from bcfleet.tui.actions import actions_for
from bcfleet.tui.format import DASH, DIM_DASH, Cell, age, countdown, croppable
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.widgets.keyed_table import Column, Row

COLUMNS = (
    Column("job", "JOB", name=True),
    Column("every", "EVERY", give_way=2),
    Column("last", "LAST RUN"),
    Column("outcome", "OUTCOME"),
    Column("next", "NEXT DUE"),
    Column("failures", "FAILED", give_way=1),
    Column("error", "LAST ERROR", crop_to=16),
)


def every_text(seconds: float | None) -> str:
    if not seconds:
        return DASH
    return f"{seconds / 60:g}m" if seconds >= 60 and seconds % 60 == 0 else f"{seconds:g}s"


def outcome_cell(outcome: str | None) -> Cell:
    """ok, error (bold) or skipped; '-' for a job that never ran."""
    if not outcome:
        return DIM_DASH
    if outcome == "error":
        return Text("error", style="bold red")
    return Text(outcome, style="dim") if outcome == "skipped" else outcome


def due_cell(job: Mapping[str, Any], now: datetime) -> tuple[Cell, float]:
    """'in 25s', 'due now', 'overdue' (in words), or 'not available' for a job not in this build."""
    if not job.get("available", True):
        return Text("not available", style="dim"), float("inf")
    if job.get("overdue"):
        return Text("overdue", style="bold yellow"), float("-inf")
    left, seconds = countdown(job.get("nextDueAt"), now)
    if job.get("due") or left.plain == "passed":
        return "due now", 0.0
    return left.plain if left.plain != DASH else DIM_DASH, seconds


def job_row(job: Mapping[str, Any], now: datetime) -> Row:
    last, last_seconds = age(job.get("lastRunAt"), now)
    due, due_seconds = due_cell(job, now)
    failures = int(job.get("failures") or 0)
    failed: Cell = Text(str(failures), style="bold red") if failures else "0"
    outcome = outcome_cell(job.get("lastOutcome"))
    error = str(job.get("lastError") or DASH)
    return Row(
        key=str(job["job"]),
        cells=(
            str(job["job"]),
            every_text(job.get("intervalSeconds")),
            f"{last} ago" if last != DASH else DASH,
            outcome,
            due,
            failed,
            croppable(error),
        ),
        sort=(
            job["job"],
            job.get("intervalSeconds") or 0,
            last_seconds,
            outcome.plain if isinstance(outcome, Text) else outcome,
            due_seconds,
            failures,
            error,
        ),
    )


class JobsView(TableView):
    TITLE = "Jobs"
    ABOUT = (
        "The scheduled jobs (vps.hosts, vps.usage, reservations.retry, reservations.lifecycle, "
        "spares, providers.reconcile): how often each runs, its last run and outcome, when it "
        "is next due (or overdue), how many of the recent runs failed and the last error. "
        "Enter shows the job's latest runs."
    )
    COLUMNS = COLUMNS
    NOUN = ("job", "jobs")
    ACTIONS = actions_for("jobs")

    def fetch(self) -> Any:
        return self.source.jobs()

    def item(self, key: str) -> Any:
        return next((j for j in self.data or () if j["job"] == key), None)

    def rows(self, data: Any) -> Iterable[Row]:
        now = self.now or self.source.now()
        return (job_row(job, now) for job in data)

    def open_row(self, key: str) -> None:
        from bcfleet.tui.screens.detail import DetailScreen

        def load() -> Mapping[str, Any]:
            job = next((j for j in self.source.jobs() if j["job"] == key), {"job": key})
            return {**job, "runs": self.source.job_runs(key)}

        self.app.push_screen(DetailScreen("Job", ["Jobs", key], load))

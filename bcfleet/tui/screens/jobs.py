"""Jobs: each scheduled job's last run, its outcome, when it is next due, and its failures."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.text import Text

from bcfleet.tui.format import DASH, age, countdown
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.widgets.keyed_table import Column, Row

COLUMNS = (
    Column("job", "JOB"),
    Column("every", "EVERY"),
    Column("last", "LAST RUN"),
    Column("outcome", "OUTCOME"),
    Column("next", "NEXT DUE"),
    Column("failures", "FAILURES"),
    Column("error", "LAST ERROR"),
)


def outcome_cell(outcome: str | None) -> Text:
    if not outcome:
        return Text(DASH, style="dim")
    style = {"ok": "green", "succeeded": "green", "failed": "bold red", "error": "bold red"}
    return Text(outcome, style=style.get(outcome, ""))


def job_row(job: Mapping[str, Any], now: Any) -> Row:
    last, last_seconds = age(job.get("lastRunAt") or job.get("lastStartedAt"), now)
    due, due_seconds = countdown(job.get("nextDueAt"), now)
    if due.plain == "passed":
        due = Text("overdue", style="bold yellow")
    failures = int(job.get("failures") or 0)
    outcome = outcome_cell(job.get("lastOutcome"))
    every = job.get("intervalSeconds")
    return Row(
        key=job["name"],
        cells=(
            job["name"],
            f"{every}s" if every else DASH,
            f"{last} ago" if last != DASH else DASH,
            outcome,
            due,
            Text(str(failures), style="bold red" if failures else ""),
            str(job.get("lastError") or DASH),
        ),
        sort=(
            job["name"],
            every or 0,
            last_seconds,
            outcome.plain,
            due_seconds,
            failures,
            job.get("lastError") or "",
        ),
    )


class JobsView(TableView):
    TITLE = "Jobs"
    ABOUT = (
        "The scheduled jobs (vps.hosts, vps.usage, reservations.retry, reservations.lifecycle, "
        "spares, providers.reconcile): the last run and its outcome, when each is next due, "
        "and how many runs failed."
    )
    COLUMNS = COLUMNS
    NOUN = ("job", "jobs")

    def fetch(self) -> Any:
        return self.source.jobs()

    def rows(self, data: Any) -> Iterable[Row]:
        now = self.now or self.source.now()
        return (job_row(job, now) for job in data)

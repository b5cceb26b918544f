"""The documents of the scheduled jobs: one run, a job's schedule, who holds a job's lease."""

from typing import Annotated, TypedDict

from bcfleet.domain.json_types import OneOf, Time

OUTCOMES = ("ok", "error", "skipped")
"""How a run ended: it did its work, it failed (its error says why), or it was not due."""

OutcomeText = Annotated[str, OneOf(OUTCOMES)]


class JobRunJson(TypedDict):
    """One run of a job; id is null for a run that was not recorded (its lease was held)."""

    id: str | None
    job: str
    outcome: OutcomeText
    counts: dict[str, int]
    error: str | None
    startedAt: Time
    finishedAt: Time
    durationMs: int


class LeaseHolderJson(TypedDict):
    """Who holds a job's lease (or the apply lock): what LOCKED names."""

    lockId: str
    holder: str
    operation: str
    since: Time
    expiresAt: Time


class JobStatusJson(TypedDict):
    """A job's schedule: its interval, its last run, when it is next due, who runs it now."""

    job: str
    description: str
    intervalSeconds: float
    available: bool
    lastRunAt: Time | None
    lastOutcome: OutcomeText | None
    nextDueAt: Time | None
    due: bool
    overdue: bool
    heldBy: LeaseHolderJson | None
    watermark: Time | None

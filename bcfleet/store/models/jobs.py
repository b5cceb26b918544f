"""Job tables: one row per job run, and each job's schedule state (last run, next due, watermark)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Index, Text
from sqlmodel import Field, SQLModel

from bcfleet.store.types import UTCDateTime, empty_dict


class JobRun(SQLModel, table=True):
    """One run of one job, recorded when it ends: outcome ok | error | skipped, counts, error text."""

    __tablename__ = "job_runs"
    __table_args__ = (Index("ix_job_runs_job_started", "job", "started_at"),)

    id: str = Field(primary_key=True)  # run_…
    job: str
    holder: str = ""  # host:pid of the runner
    started_at: datetime = Field(sa_type=UTCDateTime)
    finished_at: datetime = Field(sa_type=UTCDateTime)
    outcome: str  # ok | error | skipped
    counts: dict[str, int] = Field(default_factory=empty_dict, sa_type=JSON)
    error: str | None = Field(default=None, sa_type=Text)


class JobState(SQLModel, table=True):
    """A job's schedule: when it last ran and is next due; vps.usage keeps its watermark here."""

    __tablename__ = "job_state"

    job: str = Field(primary_key=True)
    last_run_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    last_outcome: str | None = None
    next_due_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    # vps.usage: the start of the first window not yet written
    watermark: datetime | None = Field(default=None, sa_type=UTCDateTime)

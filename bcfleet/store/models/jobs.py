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


class JobFault(SQLModel, table=True):
    """One item a job failed on (a reservation, an instance, a tenant's spares), until it succeeds again.

    `error` is the operator's full reason (shown by `fleet doctor`, root's); the item's tenant sees
    a message that names nothing but its own item (on the item: a JobFailed condition or lastError).
    `since` is the first usage window vps.usage could not meter for the subject (None elsewhere).
    """

    __tablename__ = "job_faults"
    __table_args__ = (Index("ix_job_faults_subject", "subject_id"),)

    job: str = Field(primary_key=True)
    subject_kind: str = Field(primary_key=True)  # reservation | instance | tenant
    subject_id: str = Field(primary_key=True)
    tenant_id: str | None = None
    error: str = Field(sa_type=Text)
    message: str = Field(sa_type=Text)  # what the item's tenant may read
    failures: int = 1
    first_failed_at: datetime = Field(sa_type=UTCDateTime)
    last_failed_at: datetime = Field(sa_type=UTCDateTime)
    since: datetime | None = Field(default=None, sa_type=UTCDateTime)

"""The vps.usage job: write every closed 5-minute usage window since the watermark, exactly once.

Each batch of windows is one transaction that locks the job's job_state row,
reads the watermark (the first window not yet written), inserts the batch's
windows with INSERT … SELECT … ON CONFLICT DO NOTHING (bcfleet.jobs.usage_sql)
and moves the watermark past them. A crash rolls the batch back whole; a rerun
or an overlapping run starts from the committed watermark, and the unique key
(subject_id, meter, window_start) turns any repeat into nothing. After
downtime the job catches up every missed window, a batch at a time, oldest
first, and between batches it honours a stop request (SIGTERM).

A window is metered once it closed SETTLE ago, so a transaction that started
before the window's end (placing an instance, activating a reservation) has
committed by the time the window is read.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col, select

from bcfleet.domain.usage import WINDOW, closed_windows, window_start
from bcfleet.jobs.stop import stop_requested
from bcfleet.jobs.usage_sql import (
    branches,
    earliest_start,
    insert_billed,
    insert_dead,
    possible_gpu_meters,
    split_by_catalogue,
)
from bcfleet.store.models import BillingMeter
from bcfleet.store.models.jobs import JobState

if TYPE_CHECKING:
    from bcfleet.fleet import Fleet

JOB = "vps.usage"
SETTLE = timedelta(seconds=30)
BATCH_WINDOWS = 12
"""Windows per transaction when catching up (an hour)."""


@dataclass(frozen=True)
class Batch:
    windows: int
    written: int
    dead_lettered: int


def run_vps_usage(fleet: Fleet, now: datetime) -> dict[str, int]:
    """Meter every window closed by now − SETTLE that is not written yet; returns the counts."""
    bound = now - SETTLE
    counts = {"windows": 0, "written": 0, "deadLettered": 0, "batches": 0}
    while True:
        batch = meter_next_batch(fleet, bound, now)
        if batch is None:
            break
        counts["windows"] += batch.windows
        counts["written"] += batch.written
        counts["deadLettered"] += batch.dead_lettered
        counts["batches"] += 1
        if stop_requested():
            break
    return counts


def meter_next_batch(
    fleet: Fleet, bound: datetime, now: datetime, *, limit: int = BATCH_WINDOWS
) -> Batch | None:
    """One transaction: the next batch of closed windows after the watermark; None when none is left."""
    with fleet.write(bump_revision=False) as session:
        watermark = _locked_watermark(session, bound)
        windows = closed_windows(watermark, bound, limit=limit)
        if not windows:
            return None
        catalogue = set(session.exec(select(BillingMeter.name)).all())
        subjects = branches(windows[0], windows[-1] + WINDOW)
        billed, dead = split_by_catalogue(subjects, catalogue, possible_gpu_meters(session))
        written = insert_billed(session, billed, windows, now)
        dead_lettered = insert_dead(session, dead, windows, now)
        _set_watermark(session, windows[-1] + WINDOW)
        return Batch(len(windows), written, dead_lettered)


def _insert(session: Session) -> postgresql.Insert | sqlite.Insert:
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(JobState)
    return sqlite.insert(JobState)


def _locked_watermark(session: Session, bound: datetime) -> datetime:
    """The watermark, with the job_state row locked for this transaction (created if missing)."""
    session.execute(_insert(session).values(job=JOB).on_conflict_do_nothing(index_elements=["job"]))
    state = session.exec(select(JobState).where(col(JobState.job) == JOB).with_for_update()).one()
    if state.watermark is not None:
        return state.watermark
    first = earliest_start(session)
    start = window_start(min(first, bound) if first is not None else bound)
    _set_watermark(session, start)
    return start


def _set_watermark(session: Session, watermark: datetime) -> None:
    session.execute(
        update(JobState)
        .where(col(JobState.job) == JOB)
        .values(watermark=watermark)
        .execution_options(synchronize_session=False)
    )


def watermark(fleet: Fleet) -> datetime | None:
    """The first window not yet written (None before the first run)."""
    with fleet.read() as session:
        state = session.get(JobState, JOB)
        return None if state is None else state.watermark

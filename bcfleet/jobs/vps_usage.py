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

Faults stay local (bcfleet/jobs/faults.py): when a batch's statement fails on a bad value, the
subjects are halved until the ones at fault are found; the others are metered, and each bad
subject (an instance or a reservation) gets a job fault with `since`, the first window it
missed, shown on it as a JobFailed condition and by `fleet doctor`, and counted as `failed`.
Later runs meter a faulted subject's missed windows on their own (remeter_faulted) and clear
the fault once they succeed: no window is lost, and none is written twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col, select

from bcfleet.domain.usage import WINDOW, closed_windows, window_start
from bcfleet.jobs.faults import Item, clear_in, isolate, record_in, statement_fault
from bcfleet.jobs.stop import stop_requested
from bcfleet.jobs.usage_sql import (
    Branch,
    any_resized,
    branches,
    earliest_start,
    insert_billed,
    insert_dead,
    possible_gpu_meters,
    split_by_catalogue,
    subject_keys,
    subjects_between,
    subjects_except,
)
from bcfleet.store.engine import large_page_cache
from bcfleet.store.job_faults import faulted_ids, faults_of
from bcfleet.store.models import BillingMeter
from bcfleet.store.models.jobs import JobState

if TYPE_CHECKING:
    from bcfleet.jobs.handle import JobHandle

JOB = "vps.usage"
SETTLE = timedelta(seconds=30)
BATCH_WINDOWS = 12
"""Windows per transaction when catching up (an hour)."""


KINDS = ("instance", "reservation")


@dataclass(frozen=True)
class Batch:
    windows: int
    written: int
    dead_lettered: int
    failed: int = 0


def run_vps_usage(fleet: JobHandle, now: datetime) -> dict[str, int]:
    """Meter every window closed by now − SETTLE that is not written yet; returns the counts."""
    bound = now - SETTLE
    counts = {"windows": 0, "written": 0, "deadLettered": 0, "batches": 0, "failed": 0}
    retried = remeter_faulted(fleet, now)
    counts["written"] += retried.written
    counts["deadLettered"] += retried.dead_lettered
    counts["failed"] += retried.failed
    while True:
        batch = meter_next_batch(fleet, bound, now)
        if batch is None:
            break
        counts["windows"] += batch.windows
        counts["written"] += batch.written
        counts["deadLettered"] += batch.dead_lettered
        counts["failed"] += batch.failed
        counts["batches"] += 1
        if stop_requested():
            break
    return counts


def meter_next_batch(
    fleet: JobHandle, bound: datetime, now: datetime, *, limit: int = BATCH_WINDOWS
) -> Batch | None:
    """One transaction: the next batch of closed windows after the watermark; None when none is left.

    Subjects with a vps.usage fault are left out (remeter_faulted tries them); a subject whose
    windows cannot be computed now is found by halving, gets its fault, and the rest is metered.
    """
    with fleet.write(bump_revision=False) as session:
        large_page_cache(session)  # it reads every instance: a 2 MiB cache rereads the file
        watermark = _locked_watermark(session, bound)
        windows = closed_windows(watermark, bound, limit=limit)
        if not windows:
            return None
        faulted = {subject for _, subject in faulted_ids(session, JOB, KINDS)}
        resized = any_resized(session, windows[0])
        batch = branches(windows[0], windows[-1] + WINDOW, resized=resized)
        subjects = subjects_except(batch, faulted)
        written, dead_lettered, bad = _meter_isolating(session, subjects, windows, now)
        for (subject_id, kind, tenant_id), error in bad.items():
            item = Item(kind, subject_id, tenant_id)
            record_in(session, JOB, item, error, now, since=windows[0])
        _set_watermark(session, windows[-1] + WINDOW)
        return Batch(len(windows), written, dead_lettered, len(bad))


def _meter(
    session: Session, subjects: Sequence[Branch], windows: Sequence[datetime], now: datetime
) -> tuple[int, int]:
    """Insert the subjects' windows: (billed rows written, dead letters written)."""
    catalogue = set(session.exec(select(BillingMeter.name)).all())
    billed, dead = split_by_catalogue(subjects, catalogue, possible_gpu_meters(session))
    return insert_billed(session, billed, windows, now), insert_dead(session, dead, windows, now)


def _meter_isolating(
    session: Session, subjects: Sequence[Branch], windows: Sequence[datetime], now: datetime
) -> tuple[int, int, dict[tuple[str, str, str], BaseException]]:
    """_meter for all subjects at once; when that fails, by halves, to find the subjects at fault."""
    savepoint = session.begin_nested()
    try:
        written, dead = _meter(session, subjects, windows, now)
    except Exception as error:
        savepoint.rollback()
        if not statement_fault(error):
            raise
    else:
        savepoint.commit()
        return written, dead, {}
    keys = subject_keys(session, subjects)
    by_id = {key[0]: key for key in keys}

    def attempt(first: str, last: str) -> tuple[int, int]:
        return _meter(session, subjects_between(subjects, first, last), windows, now)

    totals, bad = isolate(session, [key[0] for key in keys], attempt)
    written, dead = totals or [0, 0]
    return written, dead, {by_id[subject_id]: error for subject_id, error in bad.items()}


def remeter_faulted(fleet: JobHandle, now: datetime) -> Batch:
    """Meter each faulted subject's missed windows, from its fault's `since` to the watermark.

    One transaction per subject, a batch of windows at a time: all of them metered clears the
    fault; a failing batch keeps the fault with `since` at that batch (earlier ones stay written).
    """
    with fleet.read() as session:
        state = session.get(JobState, JOB)
        upto = None if state is None else state.watermark
        faults = [f for kind in KINDS for f in faults_of(session, JOB, kind)]
    written = dead_lettered = failed = 0
    for fault in faults:
        if upto is None or fault.since is None:
            continue
        item = Item(fault.subject_kind, fault.subject_id, fault.tenant_id)
        with fleet.write(bump_revision=False) as session:
            done = _remeter(session, item, fault.since, upto, now)
        written += done.written
        dead_lettered += done.dead_lettered
        failed += done.failed
    return Batch(0, written, dead_lettered, failed)


def _remeter(session: Session, item: Item, since: datetime, upto: datetime, now: datetime) -> Batch:
    written = dead_lettered = 0
    start = since
    while start < upto:
        windows = closed_windows(start, upto, limit=BATCH_WINDOWS)
        if not windows:
            break
        only = [b.where(b.subject == item.id) for b in branches(windows[0], windows[-1] + WINDOW)]
        savepoint = session.begin_nested()
        try:
            billed, dead = _meter(session, only, windows, now)
        except Exception as error:
            savepoint.rollback()
            if not statement_fault(error):
                raise
            record_in(session, JOB, item, error, now, since=windows[0])
            return Batch(0, written, dead_lettered, 1)
        savepoint.commit()
        written, dead_lettered = written + billed, dead_lettered + dead
        start = windows[-1] + WINDOW
    clear_in(session, JOB, item)
    return Batch(0, written, dead_lettered, 0)


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


def watermark(fleet: JobHandle) -> datetime | None:
    """The first window not yet written (None before the first run)."""
    with fleet.read() as session:
        state = session.get(JobState, JOB)
        return None if state is None else state.watermark

"""Faults stay local: a job runs each item in its own transaction, and a failure is kept on that item, not the job.

The reservations, spares, providers and vps.usage jobs call it. `FaultLog.run` runs one
item's work in a write transaction; when the work raises, the transaction is rolled back
(only that item's changes are lost), the failure is written in a new transaction on a
job_faults row (the operator's full reason, read by `fleet doctor`) and on the item itself
(a ``JobFailed`` condition on a reservation or an instance, whose message names only that
item: its tenant reads it), and the run's ``failed`` count goes up. The next success of the
item removes both. A lost database connection is no item's fault: it ends the run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

from sqlalchemy import ColumnElement
from sqlalchemy.exc import DBAPIError
from sqlmodel import Session, col, select

from bcfleet.domain.bounds import printable
from bcfleet.errors import DatabaseUnavailableError, FleetError
from bcfleet.placement.conditions import clear_condition, has_condition, set_condition
from bcfleet.store.faults import connection_lost
from bcfleet.store.id_chunks import id_chunks
from bcfleet.store.job_faults import (
    ERROR_TEXT_MAX,
    delete_fault,
    error_text,
    faulted_ids,
    upsert_fault,
)
from bcfleet.store.models import Instance, Reservation

if TYPE_CHECKING:
    from bcfleet.jobs.handle import JobHandle

T = TypeVar("T")
CONDITION = "JobFailed"
log = logging.getLogger("bcfleet.jobs")

# The items that carry a JobFailed condition; others (a tenant's spares) show the job_faults row.
_MARKED: dict[str, Any] = {"reservation": Reservation, "instance": Instance}


@dataclass(frozen=True)
class Item:
    """One thing a job tends: its kind (reservation | instance | tenant), id and tenant."""

    kind: str
    id: str
    tenant_id: str | None = None


class Failed:
    """What FaultLog.run returns for an item whose work raised (the failure is recorded)."""

    def __init__(self, error: BaseException) -> None:
        self.error = error


def ends_the_run(error: BaseException) -> bool:
    """Errors that are no item's fault: the database is gone, or the process is told to stop."""
    return isinstance(error, DatabaseUnavailableError) or not isinstance(error, Exception)


def tenant_message(job: str, kind: str, error: BaseException) -> str:
    """What the item's tenant reads: the job, and our error's code and message, else no detail."""
    cause = f"{error.code}: {error.message}" if isinstance(error, FleetError) else "internal error"
    text = f"{job} failed on this {kind} ({cause}); it is tried again on the job's next run"
    return printable(text)[:ERROR_TEXT_MAX]


def record_in(
    session: Session,
    job: str,
    item: Item,
    error: BaseException,
    now: datetime,
    *,
    since: datetime | None = None,
    mark: bool = True,
) -> None:
    """Write the failure on the job_faults row and, where the item has conditions, on the item."""
    message = tenant_message(job, item.kind, error)
    upsert_fault(
        session,
        job=job,
        kind=item.kind,
        subject_id=item.id,
        tenant_id=item.tenant_id,
        error=error_text(error),
        message=message,
        at=now,
        since=since,
    )
    log.warning("%s: %s %s failed: %s", job, item.kind, item.id, error_text(error))
    model = _MARKED.get(item.kind)
    if model is None or not mark:
        return
    savepoint = session.begin_nested()
    try:  # the item's own row may be what is broken: then the job_faults row is all there is
        row = session.get(model, item.id, with_for_update=True)
        if row is not None:
            row.conditions = set_condition(
                list(row.conditions or []), CONDITION, reason=_reason(job), message=message, at=now
            )
            session.add(row)
            session.flush()
    except Exception:  # noqa: BLE001 - marking is best effort; the fault row is kept
        savepoint.rollback()
        return
    savepoint.commit()


def clear_in(session: Session, job: str, item: Item) -> None:
    """The item succeeded: remove its fault row and its JobFailed condition."""
    delete_fault(session, job, item.kind, item.id)
    model = _MARKED.get(item.kind)
    if model is None:
        return
    row = session.get(model, item.id)
    if row is not None and has_condition(row.conditions or [], CONDITION):
        row.conditions = clear_condition(list(row.conditions), CONDITION)
        session.add(row)


def _reason(job: str) -> str:
    """The condition's reason: the job's name in CamelCase (reservations.retry → ReservationsRetry)."""
    return "".join(part[:1].upper() + part[1:] for part in job.replace("_", ".").split("."))


class FaultLog:
    """One job run's view of its faults: which items had one, and how many failed this run."""

    def __init__(self, fleet: JobHandle, job: str, kinds: tuple[str, ...]) -> None:
        self.fleet = fleet
        self.job = job
        self.failed = 0
        with fleet.read() as session:
            self.known = faulted_ids(session, job, kinds)

    def had_fault(self, item: Item) -> bool:
        return (item.kind, item.id) in self.known

    def run(self, item: Item, work: Callable[[Session], T]) -> T | Failed:
        """The item's work in its own transaction; a failure is recorded and returned as Failed."""
        try:
            with self.fleet.write() as session:
                result = work(session)
                if self.had_fault(item):
                    clear_in(session, self.job, item)
        except BaseException as error:
            if ends_the_run(error):
                raise
            self.record(item, error)
            return Failed(error)
        self.known.discard((item.kind, item.id))
        return result

    def record(
        self, item: Item, error: BaseException, *, mark: bool = True, count: bool = True
    ) -> None:
        """Keep the failure (its own transaction) and count it in `failed`.

        mark=False leaves the item's conditions alone, for a job that writes its own (the
        providers job's ProviderError); count=False for a failure the job counts otherwise.
        """
        self.failed += int(count)
        with self.fleet.write() as session:
            record_in(session, self.job, item, error, self.fleet.now(), mark=mark)
        self.known.add((item.kind, item.id))

    def keep(self, session: Session, item: Item, error: BaseException) -> None:
        """Keep a failure in the caller's transaction (the item's own work ran in a savepoint)."""
        self.failed += 1
        record_in(session, self.job, item, error, self.fleet.now())
        self.known.add((item.kind, item.id))

    def prune(self, kind: str, key: Any, in_scope: ColumnElement[bool]) -> None:
        """Drop the faults of items the job will not visit again (released, deleted, gone).

        One transaction, only when the job has faults of that kind: a reservation cancelled
        while it carried a retry fault, say, must not stay in `fleet doctor` for ever.
        """
        faulted = sorted(i for k, i in self.known if k == kind)
        if not faulted:
            return
        with self.fleet.write() as session:
            present: set[Any] = set()
            kept: set[Any] = set()
            for chunk in id_chunks(faulted):
                present.update(session.exec(select(key).where(col(key).in_(chunk))).all())
                kept.update(session.exec(select(key).where(col(key).in_(chunk), in_scope)).all())
            for subject_id in faulted:
                if subject_id not in kept:
                    item = Item(kind, subject_id)
                    if subject_id in present:
                        clear_in(session, self.job, item)
                    else:
                        delete_fault(session, self.job, kind, subject_id)
                    self.known.discard((kind, subject_id))

    def forget(self, item: Item) -> None:
        """The item succeeded outside run(): clear its fault in a transaction of its own."""
        if self.had_fault(item):
            with self.fleet.write() as session:
                clear_in(session, self.job, item)
            self.known.discard((item.kind, item.id))

    def clear(self, session: Session, item: Item) -> None:
        """Clear the item's fault in the caller's transaction, if it had one."""
        if self.had_fault(item):
            clear_in(session, self.job, item)
            self.known.discard((item.kind, item.id))


def statement_fault(error: BaseException) -> bool:
    """Whether a failed statement is the data's fault (a bad value), not the database's state.

    A lost connection, a lock wait, a deadlock or a serialization failure would fail any item:
    those end the run (its transaction is rolled back and the next run tries again).
    """
    if not isinstance(error, DBAPIError) or connection_lost(error):
        return False
    state = getattr(error.orig, "sqlstate", None)
    if state is not None:
        return not (state.startswith("40") or state in ("55P03", "57014"))
    text = str(error.orig).lower()
    return "locked" not in text and "busy" not in text


def isolate(
    session: Session,
    keys: Sequence[str],
    attempt: Callable[[str, str], tuple[int, ...]],
    is_fault: Callable[[BaseException], bool] = statement_fault,
) -> tuple[list[int], dict[str, BaseException]]:
    """Run attempt(first, last) over ranges of the ordered keys, halving any range that fails.

    Each try runs in a savepoint, so a failed one leaves nothing; what succeeds is kept. The
    result: the attempts' summed counts, and each key that fails alone with its error. Costs one
    statement when nothing fails, and about 2·log2(n) more per bad key.
    """
    totals: list[int] = []
    bad: dict[str, BaseException] = {}
    ranges = [(0, len(keys))] if keys else []
    while ranges:
        low, high = ranges.pop()
        savepoint = session.begin_nested()
        try:
            counts = attempt(keys[low], keys[high - 1])
            session.flush()
        except Exception as error:
            savepoint.rollback()
            if not is_fault(error):
                raise
            if high - low == 1:
                bad[keys[low]] = error
                continue
            middle = (low + high) // 2
            ranges += [(middle, high), (low, middle)]
            continue
        savepoint.commit()
        totals = [a + b for a, b in zip(totals, counts, strict=True)] if totals else list(counts)
    return totals, bad

"""The job_faults rows: what a job failed on, kept until the item succeeds; the jobs write them, doctor and views read them."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from sqlalchemy import delete
from sqlmodel import Session, col, select

from bcfleet.domain.bounds import printable
from bcfleet.store.models.jobs import JobFault

ERROR_TEXT_MAX = 500


def error_text(error: BaseException) -> str:
    """An error as one printable line for operators (escaped, cut short): `Type: message`."""
    return printable(f"{type(error).__name__}: {error}")[:ERROR_TEXT_MAX]


def upsert_fault(
    session: Session,
    *,
    job: str,
    kind: str,
    subject_id: str,
    tenant_id: str | None,
    error: str,
    message: str,
    at: datetime,
    since: datetime | None = None,
) -> JobFault:
    """Record one more failure of the item; the first failure's time is kept, `since` set when given."""
    row = session.exec(
        select(JobFault)
        .where(
            col(JobFault.job) == job,
            col(JobFault.subject_kind) == kind,
            col(JobFault.subject_id) == subject_id,
        )
        .with_for_update()
    ).first()
    if row is None:
        row = JobFault(
            job=job,
            subject_kind=kind,
            subject_id=subject_id,
            tenant_id=tenant_id,
            error=error[:ERROR_TEXT_MAX],
            message=message[:ERROR_TEXT_MAX],
            first_failed_at=at,
            last_failed_at=at,
            since=since,
        )
    else:
        row.error, row.message = error[:ERROR_TEXT_MAX], message[:ERROR_TEXT_MAX]
        row.failures += 1
        row.last_failed_at = at
        row.tenant_id = tenant_id if tenant_id is not None else row.tenant_id
        row.since = since if since is not None else row.since
    session.add(row)
    session.flush()
    return row


def delete_fault(session: Session, job: str, kind: str, subject_id: str) -> None:
    """The item succeeded: forget its fault."""
    session.execute(
        delete(JobFault).where(
            col(JobFault.job) == job,
            col(JobFault.subject_kind) == kind,
            col(JobFault.subject_id) == subject_id,
        )
    )


def faulted_ids(session: Session, job: str, kinds: Iterable[str]) -> set[tuple[str, str]]:
    """(kind, id) of every item of these kinds the job has a fault on."""
    rows = session.exec(
        select(JobFault.subject_kind, JobFault.subject_id).where(
            col(JobFault.job) == job, col(JobFault.subject_kind).in_(list(kinds))
        )
    ).all()
    return {(kind, subject_id) for kind, subject_id in rows}


def faults_of(session: Session, job: str, kind: str) -> list[JobFault]:
    """The job's faults on items of one kind, oldest first."""
    return list(
        session.exec(
            select(JobFault)
            .where(col(JobFault.job) == job, col(JobFault.subject_kind) == kind)
            .order_by(col(JobFault.first_failed_at), col(JobFault.subject_id))
        ).all()
    )


def fault_of(session: Session, job: str, kind: str, subject_id: str) -> JobFault | None:
    return session.get(JobFault, (job, kind, subject_id))


def all_faults(session: Session) -> list[JobFault]:
    """Every fault, by job then item: `fleet doctor` lists them."""
    return list(
        session.exec(
            select(JobFault).order_by(
                col(JobFault.job), col(JobFault.subject_kind), col(JobFault.subject_id)
            )
        ).all()
    )

"""Job leases in the locks table: one holder per job across schedulers and ticks, with an expiry.

Acquiring is one guarded statement, INSERT … ON CONFLICT (name) DO UPDATE …
WHERE locks.expires_at <= now: it takes a free or expired lease and leaves a
live one alone, atomically on PostgreSQL (row lock on the conflicting row)
and on SQLite (writers are serialized by BEGIN IMMEDIATE). The caller then
reads the row back: the lease is ours when the row carries our lease id. A
holder that is killed stops renewing, and its lease expires after the TTL.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlmodel import Session, col

from bcfleet.clock import format_time
from bcfleet.ids import IdFactory
from bcfleet.store.models import Lock

if TYPE_CHECKING:
    from bcfleet.fleet import Fleet

log = logging.getLogger("bcfleet.jobs")

RANDOM_IDS = IdFactory()
"""Lease and run ids are never seeded: two runners with seeded fleets must not mint the same id."""


def holder_name(role: str = "") -> str:
    """host:pid, and the role (scheduler, tick) when given: who holds a lease."""
    name = f"{socket.gethostname()}:{os.getpid()}"
    return f"{name} {role}".strip()


def job_lock_name(job: str) -> str:
    return f"job:{job}"


@dataclass(frozen=True)
class Lease:
    name: str
    id: str
    holder: str
    expires_at: datetime


def _insert(session: Session) -> postgresql.Insert | sqlite.Insert:
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(Lock)
    return sqlite.insert(Lock)


def acquire(
    fleet: Fleet, name: str, *, holder: str, operation: str, ttl_seconds: float
) -> Lease | None:
    """Take the lease `name` if it is free or expired; None when someone else holds it."""
    now = fleet.now()
    lease_id = RANDOM_IDS.new("lock", now)
    values: dict[str, Any] = {
        "name": name,
        "id": lease_id,
        "holder": holder,
        "pid": os.getpid(),
        "hostname": socket.gethostname(),
        "operation": operation,
        "created_at": now,
        "expires_at": now + timedelta(seconds=ttl_seconds),
    }
    with fleet.write(bump_revision=False) as session:
        statement = _insert(session).values(**values)
        taken = {key: getattr(statement.excluded, key) for key in values if key != "name"}
        statement = statement.on_conflict_do_update(
            index_elements=["name"],
            set_=taken,
            where=Lock.__table__.c.expires_at <= now,  # type: ignore[attr-defined]
        )
        session.connection().execute(statement)
        current = session.execute(select(col(Lock.id)).where(col(Lock.name) == name)).scalar_one()
    if current != lease_id:
        return None
    return Lease(name, lease_id, holder, values["expires_at"])


def renew(fleet: Fleet, lease: Lease, ttl_seconds: float) -> bool:
    """Push the lease's expiry out again; False when it was lost (expired and taken)."""
    expires = fleet.now() + timedelta(seconds=ttl_seconds)
    with fleet.write(bump_revision=False) as session:
        result = session.connection().execute(
            update(Lock)
            .where(col(Lock.name) == lease.name, col(Lock.id) == lease.id)
            .values(expires_at=expires)
        )
        return bool(result.rowcount)


def release_in(session: Session, lease: Lease) -> None:
    """Give the lease up inside the caller's transaction (only if it is still ours)."""
    session.connection().execute(
        delete(Lock).where(col(Lock.name) == lease.name, col(Lock.id) == lease.id)
    )


def release(fleet: Fleet, lease: Lease) -> None:
    with fleet.write(bump_revision=False) as session:
        release_in(session, lease)


def current_holder(session: Session, name: str, now: datetime) -> dict[str, Any] | None:
    """Who holds a live lease of that name, for LOCKED details and `fleet jobs list`."""
    row = session.get(Lock, name)
    if row is None or row.expires_at <= now:
        return None
    return {
        "lockId": row.id,
        "holder": row.holder,
        "operation": row.operation,
        "since": format_time(row.created_at),
        "expiresAt": format_time(row.expires_at),
    }


@contextmanager
def kept_alive(fleet: Fleet, lease: Lease, ttl_seconds: float) -> Iterator[None]:
    """Renew the lease from a background thread every third of its TTL while the block runs."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(max(ttl_seconds / 3, 0.05)):
            try:
                if not renew(fleet, lease, ttl_seconds):
                    log.warning("lease lost lock=%s holder=%s", lease.name, lease.holder)
                    return
            except Exception:  # noqa: BLE001 - a busy database: try again next beat
                log.warning("lease renewal failed lock=%s", lease.name, exc_info=True)

    thread = threading.Thread(target=beat, name=f"lease {lease.name}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()

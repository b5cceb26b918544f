"""Named locks in the ``locks`` table: the apply lock and the jobs' leases, one expiry rule for both.

A lock is a row naming its holder, pid, host and operation, and when it
expires. Taking it is one guarded statement, INSERT … ON CONFLICT (name) DO
UPDATE … WHERE locks.expires_at <= now: it takes a free or expired lock and
leaves a live one alone, atomically on PostgreSQL (row lock on the conflicting
row) and on SQLite (writers are serialized by BEGIN IMMEDIATE). The caller then
reads the row back: the lock is ours when the row carries our id.

Every holder renews its lock from a background thread every third of the TTL
(``kept_alive``), so a live holder keeps it however long it works or waits at a
prompt, and a holder killed with SIGKILL stops renewing and loses it one TTL
later (``lock_ttl_seconds``, 30 seconds by default). Leases are timed by the fleet's
lease clock (``Fleet.lease_now``): the wall clock, also when ``BCFLEET_NOW`` pins the
fleet's own clock, so a killed holder's lease runs out in real time even then (with a pinned
clock it never did: every process started at the same instant). Taking, renewing and
releasing a lock never bump the state revision, so they cannot make a saved
plan stale.
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
from sqlalchemy.exc import OperationalError
from sqlmodel import Session, col

from bcfleet.clock import format_time
from bcfleet.errors import LockedError
from bcfleet.ids import IdFactory
from bcfleet.store.models import Lock

if TYPE_CHECKING:
    from bcfleet.store.handle import StoreHandle

log = logging.getLogger("bcfleet.locks")

JOB_LEASE_PREFIX = "job:"
"""A job's lease is the lock named job:<job> (the apply lock is named apply)."""

RANDOM_IDS = IdFactory()
"""Lock ids are never seeded: two processes with seeded fleets must not mint the same id."""


@dataclass(frozen=True)
class Lease:
    """One holding of a named lock."""

    name: str
    id: str
    holder: str
    pid: int
    hostname: str
    operation: str
    created_at: datetime
    expires_at: datetime

    @classmethod
    def of(cls, row: Lock) -> Lease:
        return cls(
            row.name,
            row.id,
            row.holder,
            row.pid,
            row.hostname,
            row.operation,
            row.created_at,
            row.expires_at,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "name": self.name,
            "holder": self.holder,
            "pid": self.pid,
            "hostname": self.hostname,
            "operation": self.operation,
            "createdAt": format_time(self.created_at),
            "expiresAt": format_time(self.expires_at),
        }


def _insert(session: Session) -> postgresql.Insert | sqlite.Insert:
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(Lock)
    return sqlite.insert(Lock)


def take(
    fleet: StoreHandle, name: str, *, holder: str, operation: str, ttl_seconds: float
) -> tuple[Lease, bool]:
    """Take the lock if it is free or expired: (the live lease, whether it is ours)."""
    now = fleet.lease_now()
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
    try:
        return _take(fleet, values)
    except OperationalError as exc:
        if "database is locked" not in str(exc):
            raise
    # SQLite: another process's write transaction (an apply under this lock, say) kept the
    # database past its busy timeout; the lock is that writer's, renewed or not.
    with fleet.read() as session:
        row = session.get(Lock, name)
    if row is None:
        raise LockedError(
            "the database is busy with another writer's transaction; try again", {"lock": name}
        )
    return Lease.of(row), False


def _take(fleet: StoreHandle, values: dict[str, Any]) -> tuple[Lease, bool]:
    name, lease_id, now = values["name"], values["id"], values["created_at"]
    with fleet.write(bump_revision=False) as session:
        statement = _insert(session).values(**values)
        taken = {key: getattr(statement.excluded, key) for key in values if key != "name"}
        statement = statement.on_conflict_do_update(
            index_elements=["name"],
            set_=taken,
            where=Lock.__table__.c.expires_at <= now,  # type: ignore[attr-defined]
        )
        session.connection().execute(statement)
        row = session.get(Lock, name, populate_existing=True)
        assert row is not None  # the statement inserted it or left the holder's row
        lease = Lease.of(row)
    return lease, lease.id == lease_id


def renew(fleet: StoreHandle, lease: Lease, ttl_seconds: float) -> bool:
    """Push the lease's expiry out again; False when it was lost (expired and taken)."""
    expires = fleet.lease_now() + timedelta(seconds=ttl_seconds)
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


def release(fleet: StoreHandle, lease: Lease) -> None:
    with fleet.write(bump_revision=False) as session:
        release_in(session, lease)


def live(session: Session, name: str, now: datetime) -> Lease | None:
    """The lock's holder while its lease runs, else None."""
    row = session.get(Lock, name)
    return Lease.of(row) if row is not None and row.expires_at > now else None


def by_id(session: Session, lock_id: str) -> Lock | None:
    return session.execute(select(Lock).where(col(Lock.id) == lock_id)).scalars().first()


@contextmanager
def kept_alive(fleet: StoreHandle, lease: Lease, ttl_seconds: float) -> Iterator[None]:
    """Renew the lease from a background thread every third of its TTL while the block runs."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(max(ttl_seconds / 3, 0.05)):
            try:
                if not renew(fleet, lease, ttl_seconds):
                    log.warning("lock lost lock=%s holder=%s", lease.name, lease.holder)
                    return
            except Exception:  # noqa: BLE001 - a busy database: try again next beat
                log.warning("lock renewal failed lock=%s", lease.name, exc_info=True)

    thread = threading.Thread(target=beat, name=f"lock {lease.name}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()

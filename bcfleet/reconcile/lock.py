"""The apply lock, kept in the database so every process sharing the state sees it.

One row of ``locks`` named ``apply`` names its holder (user@host), pid, host,
operation, when it was taken and when it expires (``lock_ttl_seconds``, 10
minutes by default). A second apply polls until ``--lock-timeout`` runs out and
then fails with LOCKED naming the holder; the default timeout is 0, as in
Terraform, so CI and cron fail fast instead of queueing. An expired lock is
taken over; ``fleet force-unlock ID`` removes a lock whose holder died.
Taking and releasing the lock never bump the state revision, so they cannot
make a saved plan stale.
"""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, select

from bcfleet.api.auth import Credential
from bcfleet.clock import format_time
from bcfleet.errors import LockedError, NotFoundError
from bcfleet.reconcile.observe import require_operator
from bcfleet.store.models import Lock

if TYPE_CHECKING:
    from bcfleet.fleet import Fleet

APPLY_LOCK = "apply"
POLL_SECONDS = 0.25


@dataclass(frozen=True)
class LockInfo:
    id: str
    name: str
    holder: str
    pid: int
    hostname: str
    operation: str
    created_at: datetime
    expires_at: datetime

    @classmethod
    def of(cls, row: Lock) -> LockInfo:
        return cls(
            row.id,
            row.name,
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


def default_holder() -> str:
    """user@host of this process, for the lock's holder."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, as in some containers
        user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    return f"{user}@{socket.gethostname()}"


def _holder(fleet: Fleet, name: str) -> LockInfo | None:
    """Who holds the lock now, read without writing: on SQLite a write would queue behind
    the holder's own apply transaction instead of answering at once."""
    with fleet.read() as session:
        row = session.get(Lock, name)
        return LockInfo.of(row) if row is not None and row.expires_at > fleet.now() else None


def _try_take(fleet: Fleet, lock: Lock) -> LockInfo | None:
    """Take the lock, or return who holds it. An expired holder is replaced."""
    holder = _holder(fleet, lock.name)
    if holder is not None:
        return holder
    try:
        with fleet.write(bump_revision=False) as session:
            row = session.get(Lock, lock.name, with_for_update=True)
            if row is not None and row.expires_at > fleet.now():
                return LockInfo.of(row)
            if row is not None:
                session.delete(row)
                session.flush()
            session.add(lock)
    except IntegrityError:  # PostgreSQL: another process inserted it at the same moment
        with fleet.read() as session:
            row = session.get(Lock, lock.name)
            if row is not None:
                return LockInfo.of(row)
        return _try_take(fleet, lock)
    return None


def acquire(
    fleet: Fleet,
    *,
    operation: str,
    timeout: float = 0.0,
    name: str = APPLY_LOCK,
    holder: str | None = None,
) -> LockInfo:
    """Take the named lock, polling up to ``timeout`` seconds; LOCKED naming the holder after."""
    deadline = fleet.now() + timedelta(seconds=max(timeout, 0.0))
    while True:
        now = fleet.now()
        row = Lock(
            name=name,
            id=fleet.new_id("lock"),
            holder=holder or default_holder(),
            pid=os.getpid(),
            hostname=socket.gethostname(),
            operation=operation,
            created_at=now,
            expires_at=now + timedelta(seconds=fleet.settings.lock_ttl_seconds),
        )
        info = LockInfo.of(row)
        held = _try_take(fleet, row)
        if held is None:
            return info
        remaining = (deadline - fleet.now()).total_seconds()
        if remaining <= 0:
            raise locked_error(held, timeout)
        fleet.clock.sleep(min(POLL_SECONDS, remaining))


def locked_error(held: LockInfo, timeout: float) -> LockedError:
    waited = f" after waiting {timeout:g}s" if timeout > 0 else ""
    message = (
        f"the {held.name} lock is held by {held.holder} (pid {held.pid} on {held.hostname}, "
        f"{held.operation}) since {format_time(held.created_at)}{waited}; it expires at "
        f"{format_time(held.expires_at)}. If no apply is running, remove it with "
        f"`fleet force-unlock {held.id}`"
    )
    if held.hostname == socket.gethostname() and not _pid_alive(held.pid):
        message += f" (process {held.pid} is not running on this host)"
    return LockedError(message, {"lock": held.to_json()})


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists but belongs to someone else
        return True
    return True


def release(fleet: Fleet, info: LockInfo) -> None:
    """Give the lock back, if it is still ours (it may have expired and been taken over)."""
    with fleet.write(bump_revision=False) as session:
        row = session.get(Lock, info.name)
        if row is not None and row.id == info.id:
            session.delete(row)


@contextmanager
def held(
    fleet: Fleet, *, operation: str, timeout: float = 0.0, holder: str | None = None
) -> Iterator[LockInfo]:
    """The apply lock for the duration of a block; released however the block ends."""
    info = acquire(fleet, operation=operation, timeout=timeout, holder=holder)
    try:
        yield info
    except BaseException:
        with suppress(Exception):  # a lost database must not hide the block's own error
            release(fleet, info)
        raise
    release(fleet, info)


def current(fleet: Fleet, name: str = APPLY_LOCK) -> LockInfo | None:
    """The lock's row, expired or not."""
    with fleet.read() as session:
        row = session.get(Lock, name)
        return LockInfo.of(row) if row is not None else None


def force_unlock(fleet: Fleet, credential: Credential | None, lock_id: str) -> LockInfo:
    """Remove a lock by its id, whoever holds it (root's admin only); NOT_FOUND otherwise."""
    with fleet.write(bump_revision=False) as session:
        require_operator(session, credential, fleet.now())
        row = _by_id(session, lock_id)
        if row is None:
            raise NotFoundError(f"no lock with id {lock_id!r}", {"lock": lock_id})
        info = LockInfo.of(row)
        session.delete(row)
        return info


def _by_id(session: Session, lock_id: str) -> Lock | None:
    return session.exec(select(Lock).where(Lock.id == lock_id)).first()

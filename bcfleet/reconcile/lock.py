"""The apply lock: the ``apply`` row of the locks table (bcfleet/store/locks.py), with its errors.

It names its holder (user@host), pid, host, operation, when it was taken and
when it expires. The holder renews it while it plans, waits at the prompt and
applies, so a live apply never loses it and a killed one frees it one lock TTL
later (30 seconds by default). A second apply polls until ``--lock-timeout``
runs out and then fails with LOCKED naming the holder; the default timeout is
0, as in Terraform, so CI and cron fail fast instead of queueing.
``fleet force-unlock ID`` removes a lock whose holder died.
"""

from __future__ import annotations

import getpass
import os
import socket
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import timedelta
from typing import TYPE_CHECKING

from bcfleet.api.auth import Credential, require_fleet_operator
from bcfleet.clock import format_time
from bcfleet.errors import LockedError, NotFoundError
from bcfleet.store.locks import JOB_LEASE_PREFIX, by_id, kept_alive, live, release, take
from bcfleet.store.locks import Lease as Lease  # re-exported: the lock's holder, for callers
from bcfleet.store.models import Lock

if TYPE_CHECKING:
    from bcfleet.api.handle import ApiHandle

APPLY_LOCK = "apply"
POLL_SECONDS = 0.25

WaitNotice = Callable[[Lease, float], None]
"""Told once, with the holder and the timeout, when a lock is found held and will be waited for."""


def default_holder() -> str:
    """user@host of this process, for the lock's holder."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, as in some containers
        user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    return f"{user}@{socket.gethostname()}"


def _holder(fleet: ApiHandle, name: str) -> Lease | None:
    """Who holds the lock now, read without writing: on SQLite a write would queue behind
    the holder's own apply transaction instead of answering at once."""
    with fleet.read() as session:
        return live(session, name, fleet.lease_now())


def acquire(
    fleet: ApiHandle,
    *,
    operation: str,
    timeout: float = 0.0,
    name: str = APPLY_LOCK,
    holder: str | None = None,
    on_wait: WaitNotice | None = None,
) -> Lease:
    """Take the named lock, polling up to ``timeout`` seconds; LOCKED naming the holder after."""
    deadline = fleet.lease_now() + timedelta(seconds=max(timeout, 0.0))
    told = on_wait is None
    while True:
        held = _holder(fleet, name)
        if held is None:
            held, ours = take(
                fleet,
                name,
                holder=holder or default_holder(),
                operation=operation,
                ttl_seconds=fleet.settings.lock_ttl_seconds,
            )
            if ours:
                return held
        remaining = (deadline - fleet.lease_now()).total_seconds()
        if remaining <= 0:
            raise locked_error(held, timeout)
        if not told and on_wait is not None:
            on_wait(held, timeout)
            told = True
        fleet.lease_clock.sleep(min(POLL_SECONDS, remaining))


def locked_error(held: Lease, timeout: float) -> LockedError:
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


@contextmanager
def held(
    fleet: ApiHandle,
    *,
    operation: str,
    timeout: float = 0.0,
    holder: str | None = None,
    on_wait: WaitNotice | None = None,
) -> Iterator[Lease]:
    """The apply lock for the duration of a block, renewed while it runs; released however
    the block ends."""
    lease = acquire(fleet, operation=operation, timeout=timeout, holder=holder, on_wait=on_wait)
    try:
        with kept_alive(fleet, lease, fleet.settings.lock_ttl_seconds):
            yield lease
    except BaseException:
        with suppress(Exception):  # a lost database must not hide the block's own error
            release(fleet, lease)
        raise
    release(fleet, lease)


def current(fleet: ApiHandle, name: str = APPLY_LOCK) -> Lease | None:
    """The lock's row, expired or not."""
    with fleet.read() as session:
        row = session.get(Lock, name)
        return Lease.of(row) if row is not None else None


def freed(lease: Lease) -> str:
    """What removing the lock frees, as `fleet force-unlock` says it."""
    if lease.name == APPLY_LOCK:
        return "fleet apply is unlocked"
    if lease.name.startswith(JOB_LEASE_PREFIX):
        job = lease.name.removeprefix(JOB_LEASE_PREFIX)
        return f"the lease of job {job} is free: the next tick or daemon run may run the job"
    return f"the {lease.name} lock is free"


def force_unlock(fleet: ApiHandle, credential: Credential | None, lock_id: str) -> Lease:
    """Remove a lock (the apply lock or a job's lease) by its id, whoever holds it (root's
    admin only); NOT_FOUND otherwise."""
    with fleet.write(bump_revision=False) as session:
        require_fleet_operator(session, credential, fleet.now())
        row = by_id(session, lock_id)
        if row is None:
            raise NotFoundError(f"no lock with id {lock_id!r}", {"lock": lock_id})
        info = Lease.of(row)
        session.delete(row)
        return info

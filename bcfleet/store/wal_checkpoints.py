"""SQLite WAL checkpoints off the commit path: a thread of the process copies the log into the database file.

SQLite's own rule checkpoints inside the COMMIT that takes the log past 1,000 pages, so about
one write in thirty (a placement writes about thirty pages) waited several milliseconds for
it, and a placement's p99 was that wait. Here the writer connections checkpoint inline only
past a far backstop (BACKSTOP_PAGES), and every EVERY_COMMITS commits of the engine wake a
thread that runs a PASSIVE checkpoint on a connection of its own, opened for that checkpoint
alone: a PASSIVE checkpoint takes no lock that writers or readers wait for, and what it
cannot copy yet (frames written while it ran) the next one copies. When the log reaches the
backstop, the committing writer checkpoints inline as before: with no writer beside it, that
one copies the last frames and lets the log start over from its beginning.

The thread starts with an engine's first EVERY_COMMITS commits; a process that writes a little
(one CLI command) never starts it and leaves the log to SQLite's checkpoint when its last
connection closes. Fleet.close() stops it and waits for a checkpoint in progress, so nothing
of this process touches the file once close returns (`fleet demo --reset` removes it).
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import weakref
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine

log = logging.getLogger(__name__)

EVERY_COMMITS = 32  # about 1,000 pages of placements: the cadence of SQLite's own rule
# A commit counts as 1 + its rows changed // ROWS_PER_COMMIT: the pages it adds to the log grow
# with its rows (measured: a placement's 10 rows 22 pages, a batch of 100's 604 rows 178, of
# 1,000's 6,004 rows 707), so 32 batches of 100 no longer fill the log past BACKSTOP_PAGES, and
# checkpoint inside a COMMIT, before the thread wakes. Over-counting only wakes it sooner.
ROWS_PER_COMMIT = 100
BACKSTOP_PAGES = 4_000  # a writer connection checkpoints inline past this (wal_autocheckpoint)
_ATTRIBUTE = "_bcfleet_wal_checkpoints"
_ALL: weakref.WeakSet[WalCheckpoints] = weakref.WeakSet()


class WalCheckpoints:
    """The checkpoint thread of one engine's database file (started by the commits that need it)."""

    def __init__(self, path: str) -> None:
        # read-write, never create: a checkpoint never makes a file that was removed
        self._uri = Path(path).resolve().as_uri() + "?mode=rw"
        self._commits = 0
        self._wake = threading.Event()
        self._stopped = False
        self._thread: threading.Thread | None = None
        self._starting = threading.Lock()
        self.done = 0  # checkpoints run (tests and benchmarks read it)
        _ALL.add(self)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def committed(self, rows: int = 0) -> None:
        """A write transaction of the engine committed, changing `rows` rows; every EVERY_COMMITS
        commits (a big one counting as several: ROWS_PER_COMMIT) wake the thread."""
        # an increment lost between two threads only delays a checkpoint
        self._commits += 1 + max(rows, 0) // ROWS_PER_COMMIT
        if self._commits < EVERY_COMMITS or self._stopped:
            return
        self._commits = 0
        if self._thread is None:
            with self._starting:
                if self._thread is None and not self._stopped:
                    self._thread = threading.Thread(
                        target=self._run, name="bcfleet-wal-checkpoints", daemon=True
                    )
                    self._thread.start()
        self._wake.set()

    def stop(self, *, wait: bool = True) -> None:
        """End the thread; with wait, return once it is over (a later commit starts a new one)."""
        with self._starting:
            self._stopped = True
            self._wake.set()
            thread = self._thread
            if not wait or thread is threading.current_thread():
                return
            if thread is not None:
                thread.join()
            self._thread, self._stopped, self._commits = None, False, 0
            self._wake.clear()

    def forget_thread(self) -> None:
        """In a forked child: the parent's thread is not here; the child's commits start its own."""
        self._thread, self._commits = None, 0
        self._starting = threading.Lock()
        self._wake = threading.Event()

    def _run(self) -> None:
        while True:
            self._wake.wait()
            self._wake.clear()
            if self._stopped:
                return
            self._checkpoint()

    def _checkpoint(self) -> None:
        try:
            with _IN_SQLITE:
                connection = sqlite3.connect(self._uri, timeout=0, isolation_level=None, uri=True)
                try:
                    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
                finally:
                    connection.close()
            self.done += 1
        except sqlite3.Error as error:  # another process's checkpoint running, the file gone
            log.debug("WAL checkpoint skipped: %s", error)


# Held by a checkpoint thread while it is inside SQLite, and by os.fork() across the fork: a
# child forked mid-checkpoint would inherit SQLite's internal mutexes locked by a thread it
# does not have, and hang at its first connection. A fork waits for the checkpoint instead.
_IN_SQLITE = threading.Lock()


def _forget_threads_in_child() -> None:
    _IN_SQLITE.release()
    for checkpoints in list(_ALL):
        checkpoints.forget_thread()


os.register_at_fork(
    before=_IN_SQLITE.acquire,
    after_in_parent=_IN_SQLITE.release,
    after_in_child=_forget_threads_in_child,
)


def attach(engine: Engine, path: str) -> WalCheckpoints:
    """Give a file database's engine its checkpoint thread, stopped when the engine goes."""
    checkpoints = WalCheckpoints(path)
    setattr(engine, _ATTRIBUTE, checkpoints)
    weakref.finalize(engine, checkpoints.stop, wait=False)
    return checkpoints


def of(engine: Engine) -> WalCheckpoints | None:
    """The engine's checkpoint thread; None for PostgreSQL and in-memory SQLite."""
    found: WalCheckpoints | None = getattr(engine, _ATTRIBUTE, None)
    return found


def committed(engine: Engine, rows: int = 0) -> None:
    """Count a committed write transaction of the engine that changed `rows` rows (nothing on
    PostgreSQL)."""
    checkpoints = of(engine)
    if checkpoints is not None:
        checkpoints.committed(rows)


def rows_changed(connection: Connection) -> int:
    """Rows the SQLite connection has changed since it opened (0 on PostgreSQL): a transaction's
    are the difference between its last statement and its first."""
    return changes_made(connection.connection.dbapi_connection)


def changes_made(dbapi_connection: Any) -> int:
    """rows_changed of the driver's own connection (its sqlite3 total_changes; 0 on PostgreSQL)."""
    changes: int = getattr(dbapi_connection, "total_changes", 0)
    return changes


def stop(engine: Engine) -> None:
    """Stop the engine's checkpoint thread and wait for it (before its connections are disposed)."""
    checkpoints = of(engine)
    if checkpoints is not None:
        checkpoints.stop()

"""SQLite's log is checkpointed by a thread of the writing process, not inside a commit; the thread
starts only when a process writes steadily, stops with the fleet and never creates a file."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import text

from bcfleet.fleet import Fleet
from bcfleet.store import wal_checkpoints
from bcfleet.store.driver_sql import DriverStatement
from bcfleet.store.engine import make_engine
from bcfleet.store.models import Event
from bcfleet.store.uow import write_session

AT = datetime(2026, 12, 2, 17, 0, tzinfo=UTC)
INSERT_EVENT = DriverStatement(Event.__table__.insert())  # type: ignore[attr-defined]


def _commits(fleet: Fleet, count: int, prefix: str = "evt_wal") -> None:
    for i in range(count):
        with fleet.write() as session:
            INSERT_EVENT.run(
                session,
                {
                    "id": f"{prefix}_{i}",
                    "type": "test.wal",
                    "tenant_id": None,
                    "subject_id": None,
                    "data": None,
                    "at": AT,
                },
            )


def _eventually(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "the checkpoint thread did not run"
        time.sleep(0.01)


def _log_left(path: str) -> tuple[int, int]:
    """(frames in the log, frames of it already in the database file), as a new reader sees them."""
    connection = sqlite3.connect(path)
    try:
        _busy, frames, copied = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        return int(frames), int(copied)
    finally:
        connection.close()


def test_a_few_commits_start_no_thread_and_writers_checkpoint_inline_only_past_the_backstop(
    tmp_path: Path,
) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'few.db'}")
    try:
        checkpoints = wal_checkpoints.of(engine)
        assert checkpoints is not None
        for i in range(wal_checkpoints.EVERY_COMMITS - 1):
            with write_session(engine, bump_revision=False) as session:
                session.execute(text(f"CREATE TABLE t{i} (a INTEGER)"))
        assert not checkpoints.running and checkpoints.done == 0
        with engine.connect() as connection:
            limit = connection.exec_driver_sql("PRAGMA wal_autocheckpoint").scalar()
        assert limit == wal_checkpoints.BACKSTOP_PAGES
        with write_session(engine, bump_revision=False) as session:
            session.execute(text("CREATE TABLE last (a INTEGER)"))
        assert checkpoints.running
    finally:
        wal_checkpoints.stop(engine)
        engine.dispose()


def _checkpointed_once(fleet: Fleet) -> wal_checkpoints.WalCheckpoints:
    """EVERY_COMMITS commits, then the checkpoint they woke has run."""
    checkpoints = wal_checkpoints.of(fleet.engine)
    assert checkpoints is not None
    _commits(fleet, wal_checkpoints.EVERY_COMMITS)
    assert checkpoints.running
    _eventually(lambda: checkpoints.done == 1)
    return checkpoints


def test_steady_commits_are_checkpointed_by_the_thread_and_close_stops_it(
    fleet: Fleet, sqlite_url: str
) -> None:
    checkpoints = _checkpointed_once(fleet)
    fleet.close()
    assert not checkpoints.running
    reopened = Fleet.open(sqlite_url, clock=fleet.clock)
    try:
        with reopened.read() as session:
            count = session.execute(text("SELECT count(*) FROM events WHERE type = 'test.wal'"))
        assert count.scalar() == wal_checkpoints.EVERY_COMMITS
        again = wal_checkpoints.of(reopened.engine)
        assert again is not None and not again.running
        _commits(reopened, wal_checkpoints.EVERY_COMMITS, prefix="evt_again")
        assert again.running  # a later run of commits starts a thread of its own
        _eventually(lambda: again.done == 1)
    finally:
        reopened.close()


def test_the_thread_copies_the_log_while_the_writer_holds_its_connections(
    fleet: Fleet, sqlite_url: str
) -> None:
    checkpoints = _checkpointed_once(fleet)
    checkpoints.stop()
    path = sqlite_url.removeprefix("sqlite:///")
    frames, copied = _log_left(path)
    assert frames > 0 and copied == frames


def test_a_checkpoint_of_a_removed_file_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "gone.db"
    engine = make_engine(f"sqlite:///{path}")
    try:
        checkpoints = wal_checkpoints.of(engine)
        assert checkpoints is not None
        with write_session(engine, bump_revision=False) as session:
            session.execute(text("CREATE TABLE t (a INTEGER)"))
        engine.dispose()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        checkpoints._checkpoint()  # what a woken thread runs
        assert not path.exists()
        assert checkpoints.done == 0
    finally:
        wal_checkpoints.stop(engine)
        engine.dispose()


def test_in_memory_and_postgresql_engines_have_no_checkpoint_thread(db_url: str) -> None:
    memory = make_engine("sqlite://")
    try:
        assert wal_checkpoints.of(memory) is None
    finally:
        memory.dispose()
    if db_url.startswith("postgresql"):
        engine = make_engine(db_url)
        try:
            assert wal_checkpoints.of(engine) is None
        finally:
            engine.dispose()


def _commit_in_child(url: str, count: int) -> None:
    """In a forked child: its commits start a thread of its own, not the parent's."""
    engine = make_engine(url)
    try:
        checkpoints = wal_checkpoints.of(engine)
        assert checkpoints is not None and not checkpoints.running
        for i in range(count):
            with write_session(engine, bump_revision=False) as session:
                session.execute(text(f"CREATE TABLE child{i} (a INTEGER)"))
        assert checkpoints.running
        _eventually(lambda: checkpoints.done == 1)
    finally:
        wal_checkpoints.stop(engine)
        engine.dispose()


def test_a_forked_child_forgets_the_parents_thread_and_starts_its_own(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'forked.db'}"
    engine = make_engine(url)
    try:
        checkpoints = wal_checkpoints.of(engine)
        assert checkpoints is not None
        for i in range(wal_checkpoints.EVERY_COMMITS):
            with write_session(engine, bump_revision=False) as session:
                session.execute(text(f"CREATE TABLE parent{i} (a INTEGER)"))
        assert checkpoints.running
        child = multiprocessing.get_context("fork").Process(
            target=_commit_in_child, args=(url, wal_checkpoints.EVERY_COMMITS)
        )
        child.start()
        child.join(30)
        assert child.exitcode == 0
    finally:
        wal_checkpoints.stop(engine)
        engine.dispose()


def test_a_path_with_spaces_and_signs_a_uri_escapes_is_checkpointed(tmp_path: Path) -> None:
    folder = tmp_path / "a fleet #1 [é]"
    folder.mkdir()
    engine = make_engine(f"sqlite:///{folder / 'fleet.db'}")
    try:
        checkpoints = wal_checkpoints.of(engine)
        assert checkpoints is not None
        for i in range(wal_checkpoints.EVERY_COMMITS):
            with write_session(engine, bump_revision=False) as session:
                session.execute(text(f"CREATE TABLE t{i} (a INTEGER)"))
        _eventually(lambda: checkpoints.done == 1)
        assert sorted(p.name for p in folder.iterdir())[0] == "fleet.db"  # nothing beside it made
    finally:
        wal_checkpoints.stop(engine)
        engine.dispose()


def test_a_fork_waits_for_a_checkpoint_in_progress(tmp_path: Path, monkeypatch: Any) -> None:
    """A child forked while the thread is inside SQLite would inherit SQLite's mutexes held by a
    thread it does not have, and hang at its first connection (seen about once in 150 forks)."""
    inside, leave = threading.Event(), threading.Event()
    real_connect = sqlite3.connect

    def slow_connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        inside.set()
        leave.wait(10)
        return real_connect(*args, **kwargs)

    monkeypatch.setattr(wal_checkpoints.sqlite3, "connect", slow_connect)
    url = f"sqlite:///{tmp_path / 'fork.db'}"
    engine = make_engine(url)
    forked: list[float] = []
    try:
        for i in range(wal_checkpoints.EVERY_COMMITS):
            with write_session(engine, bump_revision=False) as session:
                session.execute(text(f"CREATE TABLE t{i} (a INTEGER)"))
        assert inside.wait(10), "the checkpoint thread did not start its checkpoint"

        def fork() -> None:
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            forked.append(time.monotonic())
            os.waitpid(pid, 0)

        forking = threading.Thread(target=fork)
        forking.start()
        time.sleep(0.3)
        assert forked == []  # os.fork() is held back while the checkpoint runs
        released = time.monotonic()
        leave.set()
        forking.join(10)
        assert forked and forked[0] >= released
    finally:
        leave.set()
        wal_checkpoints.stop(engine)
        engine.dispose()


def test_a_commit_of_many_rows_counts_as_many_commits(tmp_path: Path) -> None:
    """A batch's commit adds many pages to the log: it brings the checkpoint nearer by its rows."""
    checkpoints = wal_checkpoints.WalCheckpoints(str(tmp_path / "none.db"))
    big = (wal_checkpoints.EVERY_COMMITS - 2) * wal_checkpoints.ROWS_PER_COMMIT
    checkpoints.committed(big)  # counts as EVERY_COMMITS - 1
    assert not checkpoints.running
    checkpoints.committed(wal_checkpoints.ROWS_PER_COMMIT - 1)  # one: the thread wakes
    assert checkpoints.running
    checkpoints.stop()


def test_a_write_transaction_counts_the_rows_it_changed(fleet: Fleet) -> None:
    counted: list[int] = []
    checkpoints = wal_checkpoints.of(fleet.engine)
    assert checkpoints is not None
    checkpoints.committed = counted.append  # type: ignore[method-assign]
    _commits(fleet, 1)
    with fleet.write() as session:
        for i in range(3):
            INSERT_EVENT.run(
                session,
                {"id": f"evt_rows{i}", "type": "test.wal", "tenant_id": None,
                 "subject_id": None, "data": None, "at": AT},
            )  # fmt: skip
    assert counted == [1, 3]

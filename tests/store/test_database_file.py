"""An SQLite file deleted or replaced under an open fleet, or held locked by another process:
every call answers DATABASE_UNAVAILABLE with the reason, never writes into a file nobody sees,
and a locked database says busy after the busy timeout, not the driver's text."""

from __future__ import annotations

import os
import shutil
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.clock import FakeClock
from bcfleet.errors import DatabaseUnavailableError
from bcfleet.fleet import Fleet
from bcfleet.ids import IdFactory
from bcfleet.settings import FleetSettings
from bcfleet.store.faults import sqlite_refusal
from tests.support.fleet import T0


def open_at(path: Path, **options: float) -> Fleet:
    url = f"sqlite:///{path}"
    return Fleet.open(
        url,
        clock=FakeClock(T0),
        settings=FleetSettings(db_url=url),
        ids=IdFactory(seed=7),
        **options,
    )


def make_tenant(fleet: Fleet, name: str) -> None:
    fleet.api.tenants.create(OP, name, name=name)


def reason(error: pytest.ExceptionInfo[DatabaseUnavailableError]) -> str:
    return str(error.value.details["reason"])


def test_a_deleted_file_refuses_reads_and_writes_and_saves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "fleet.db"
    fleet = open_at(path)
    make_tenant(fleet, "acme")
    for name in os.listdir(tmp_path):  # rm fleet.db*
        os.remove(tmp_path / name)
    with pytest.raises(DatabaseUnavailableError) as refused:
        make_tenant(fleet, "globex")
    assert reason(refused) == "database_file_missing"
    assert (
        str(path) in refused.value.message and "nothing was read or saved" in refused.value.message
    )
    with pytest.raises(DatabaseUnavailableError) as refused:
        fleet.api.tenants.list(OP)
    assert reason(refused) == "database_file_missing"
    fleet.close()
    assert not path.exists()  # no write went anywhere a later open would see


def test_a_replaced_file_refuses_and_the_new_file_is_left_as_it_was(tmp_path: Path) -> None:
    path, other = tmp_path / "fleet.db", tmp_path / "other" / "fleet.db"
    other.parent.mkdir()
    fleet = open_at(path)
    make_tenant(fleet, "acme")
    second = open_at(other)
    make_tenant(second, "initech")
    second.close()
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"fleet.db{suffix}").unlink(missing_ok=True)
    shutil.copy(other, tmp_path / "new.db")
    os.replace(tmp_path / "new.db", path)  # as `fleet demo --reset` from another terminal
    with pytest.raises(DatabaseUnavailableError) as refused:
        make_tenant(fleet, "globex")
    assert reason(refused) == "database_file_replaced"
    fleet.close()
    reopened = open_at(path)
    names = sorted(t["id"] for t in reopened.api.tenants.list(OP)["items"])
    assert names == ["initech", "root"]
    reopened.close()


def test_a_database_another_process_holds_locked_says_busy_after_the_timeout(
    tmp_path: Path,
) -> None:
    path = tmp_path / "fleet.db"
    fleet = open_at(path, busy_timeout_s=0.2)
    make_tenant(fleet, "acme")
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(DatabaseUnavailableError) as refused:
            make_tenant(fleet, "globex")
        assert reason(refused) == "database_busy"
        assert refused.value.message == (
            "the database is busy: another process holds its lock; nothing was saved: try again"
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    make_tenant(fleet, "globex")  # free again: the same call goes through
    assert {"acme", "globex"} <= {t["id"] for t in fleet.api.tenants.list(OP)["items"]}
    fleet.close()


@pytest.mark.parametrize(
    ("driver_text", "expected"),
    [
        ("database is locked", "database_busy"),
        ("attempt to write a readonly database", "database_read_only"),
        ("no such table: tenants", None),
    ],
)
def test_sqlite_refusals_are_named_by_reason(driver_text: str, expected: str | None) -> None:
    error = OperationalError("INSERT …", {}, sqlite3.OperationalError(driver_text))
    refusal = sqlite_refusal(error)
    assert (None if refusal is None else refusal.details["reason"]) == expected


def test_a_connection_opened_after_the_file_was_deleted_creates_no_new_file(tmp_path: Path) -> None:
    """A pooled connection opened after `rm fleet.db*` (the pool was emptied, or every pooled one
    was busy) must not create an empty file at the path: the file is said deleted, not replaced."""
    path = tmp_path / "fleet.db"
    fleet = open_at(path)
    make_tenant(fleet, "acme")
    for name in os.listdir(tmp_path):  # rm fleet.db*
        os.remove(tmp_path / name)
    fleet.engine.dispose()  # the next call opens a fresh connection
    with pytest.raises(DatabaseUnavailableError) as refused:
        fleet.api.tenants.list(OP)
    assert reason(refused) == "database_file_missing"
    assert not path.exists()
    fleet.close()

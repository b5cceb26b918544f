"""Fixtures: a fleet per test on SQLite (a fresh file) and on PostgreSQL (a database per test run)."""

from __future__ import annotations

import contextlib
import io
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlmodel import SQLModel

from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.ids import IdFactory
from bcfleet.settings import FleetSettings
from bcfleet.store.engine import make_engine
from bcfleet.store.schema import create_fresh

T0 = datetime(2026, 11, 30, 10, 0, 0, tzinfo=UTC)
PG_ADMIN_URL = os.environ.get(
    "BCFLEET_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
IN_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")


def _pg_available() -> str | None:
    """None when PostgreSQL answers, else why not."""
    try:
        engine = create_engine(PG_ADMIN_URL, connect_args={"connect_timeout": 3})
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        engine.dispose()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means "not available"
        return str(exc).splitlines()[0]


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A PostgreSQL database of this test run's own (per xdist worker), dropped at the end."""
    problem = _pg_available()
    if problem is not None:
        if IN_CI:
            pytest.fail(f"PostgreSQL is required when CI=true: {problem}")
        pytest.skip(f"PostgreSQL not available: {problem}")
    name = f"bcfleet_test_{os.getpid()}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    engine = make_engine(url)
    create_fresh(engine)
    engine.dispose()
    yield url
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def _truncate_all(url: str) -> None:
    engine = make_engine(url)
    tables = ", ".join(f'"{t.name}"' for t in SQLModel.metadata.sorted_tables)
    with engine.begin() as connection:
        connection.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))
        connection.execute(text("ALTER SEQUENCE bcfleet_state_revision RESTART WITH 1"))
        connection.execute(text("SELECT setval('bcfleet_state_revision', 1, false)"))
    engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database URL, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fleet.db'}"
    url: str = request.getfixturevalue("pg_database")
    _truncate_all(url)
    return url


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'fleet.db'}"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


def open_fleet(url: str, clock: FakeClock, **settings: object) -> Fleet:
    return Fleet.open(
        url,
        clock=clock,
        settings=FleetSettings(db_url=url, **settings),  # type: ignore[arg-type]
        ids=IdFactory(seed=7),
    )


@pytest.fixture
def fleet(sqlite_url: str, clock: FakeClock) -> Iterator[Fleet]:
    """A fleet on a fresh SQLite file with a fake clock at 2026-11-30T10:00:00Z."""
    handle = open_fleet(sqlite_url, clock)
    yield handle
    handle.close()


@pytest.fixture
def any_fleet(db_url: str, clock: FakeClock) -> Iterator[Fleet]:
    """A fleet on SQLite and, in a second run, on PostgreSQL."""
    handle = open_fleet(db_url, clock)
    yield handle
    handle.close()


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str

    def json(self) -> object:
        import json

        return json.loads(self.stdout)


def run_cli(*args: str, db: str | None = None, env: dict[str, str] | None = None) -> CliResult:
    """Run `fleet ARGS` in this process as a user would type it; returns its exit code and output."""
    from bcfleet.cli.main import main

    argv = list(args) + (["--db", db] if db else [])
    out, err = io.StringIO(), io.StringIO()
    old_env = {k: os.environ.get(k) for k in (env or {})}
    os.environ.update(env or {})
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
            except SystemExit as exit_:
                code = int(exit_.code or 0) if not isinstance(exit_.code, str) else 1
    finally:
        for key, value in old_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return CliResult(code, out.getvalue(), err.getvalue())


@pytest.fixture
def cli(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> object:
    """`cli("flavors", "list", …)` runs the CLI against this test's fresh SQLite fleet."""
    monkeypatch.setenv("BCFLEET_NOW", T0.isoformat())
    Fleet.open(sqlite_url).close()  # read verbs never create a database

    def call(*args: str) -> CliResult:
        return run_cli(*args, db=sqlite_url)

    return call


def python_cli(
    *args: str, db: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> list[str]:
    """The argv of `python -m bcfleet ARGS --db DB` for subprocess tests."""
    del cwd, env
    return [sys.executable, "-m", "bcfleet", *args, "--db", db]

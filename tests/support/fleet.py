"""The tests' shared world: the start time, database URLs, a fleet opener and the CLI runner."""

from __future__ import annotations

import atexit
import contextlib
import functools
import io
import os
import shutil
import sqlite3
import sys
import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Connection, create_engine, text
from sqlmodel import SQLModel

from bcfleet.clock import Clock
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


def pg_available() -> str | None:
    """None when PostgreSQL answers, else why not."""
    try:
        engine = create_engine(PG_ADMIN_URL, connect_args={"connect_timeout": 3})
        with engine.connect() as connection:
            connection.execute(text("SELECT 1"))
        engine.dispose()
        return None
    except Exception as exc:  # noqa: BLE001 - any failure means "not available"
        return str(exc).splitlines()[0]


def create_test_database(connection: Connection, name: str) -> None:
    """CREATE DATABASE name for a test, committing without waiting for the WAL's flush.

    `synchronous_commit = off` is this test database's own setting: a commit is visible at once
    as ever, and only a crash of the server itself could lose the last ones, which no test does.
    It spares each commit the disk's flush (about 5 ms on the CI machine's disk). bcfleet never
    sets it (docs/scaleout.md)."""
    connection.execute(text(f'CREATE DATABASE "{name}"'))
    connection.execute(text(f'ALTER DATABASE "{name}" SET synchronous_commit = off'))


@contextlib.contextmanager
def empty_pg_database(prefix: str) -> Iterator[str]:
    """A new empty PostgreSQL database beside PG_ADMIN_URL's, dropped afterwards.

    Without PostgreSQL the test is skipped, or fails when CI=true.
    """
    problem = pg_available()
    if problem is not None:
        if IN_CI:
            pytest.fail(f"PostgreSQL is required when CI=true: {problem}")
        pytest.skip(f"PostgreSQL not available: {problem}")
    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    admin = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        create_test_database(connection, name)
    try:
        yield PG_ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def truncate_all(url: str) -> None:
    """Empty every table of a PostgreSQL test database and restart its sequences.

    DELETE, children first, rather than TRUNCATE: a test's tables hold a few rows, and TRUNCATE
    gives each of the ~100 tables and indexes a new file and scans the server's whole buffer
    cache for each (about a second a test); the DELETEs take about a millisecond. Every
    sequence restarts, as TRUNCATE … RESTART IDENTITY did."""
    engine = make_engine(url)
    with engine.begin() as connection:
        connection.execute(text(_empty_every_table()))
        for (sequence,) in connection.execute(text(_SEQUENCES)):
            connection.execute(text("SELECT setval(:s, 1, false)"), {"s": sequence})
    engine.dispose()


def _empty_every_table() -> str:
    """One DELETE a table, each table before the tables it refers to."""
    tables = reversed(SQLModel.metadata.sorted_tables)
    return "; ".join(f'DELETE FROM "{table.name}"' for table in tables)


_SEQUENCES = (
    "SELECT quote_ident(sequence_schema) || '.' || quote_ident(sequence_name) "
    "FROM information_schema.sequences WHERE sequence_schema = current_schema()"
)


def open_fleet(url: str, clock: Clock, **settings: object) -> Fleet:
    """A fleet at url with this clock, seeded ids and these settings."""
    start_from_schema_copy(url)
    return Fleet.open(
        url,
        clock=clock,
        settings=FleetSettings(db_url=url, **settings),  # type: ignore[arg-type]
        ids=IdFactory(seed=7),
    )


def start_from_schema_copy(url: str) -> None:
    """A new SQLite file starts as a copy of a schema made once per process.

    Building the schema (the DDL of every table and Alembic's stamp) takes some 30 ms of CPU,
    and over a thousand tests open a new SQLite fleet; the copy is what building it writes, so
    Fleet.open finds a database at head as it would after making one. Other URLs, and files
    that exist, are left alone."""
    if not url.startswith("sqlite:///") or "?" in url:
        return
    path = Path(url.removeprefix("sqlite:///"))
    if path.name and not path.exists() and path.parent.is_dir():
        shutil.copyfile(_schema_file(), path)


@functools.cache
def _schema_file() -> Path:
    """A SQLite file holding the empty schema at head, made by create_fresh; gone at exit."""
    folder = Path(tempfile.mkdtemp(prefix="bcfleet-schema-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / "schema.db"
    engine = make_engine(f"sqlite:///{path}")
    create_fresh(engine)
    engine.dispose()
    with contextlib.closing(sqlite3.connect(path)) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path


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


def python_cli(
    *args: str, db: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> list[str]:
    """The argv of `python -m bcfleet ARGS --db DB` for subprocess tests."""
    del cwd, env
    return [sys.executable, "-m", "bcfleet", *args, "--db", db]

"""Fixtures: a fleet per test on SQLite (a fresh file) and on PostgreSQL (a database per test run)."""

from __future__ import annotations

import gc
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.store.engine import make_engine
from bcfleet.store.models import load_all
from bcfleet.store.schema import create_fresh
from tests.support.fleet import (
    T0,
    CliResult,
    empty_pg_database,
    open_fleet,
    run_cli,
    start_from_schema_copy,
    truncate_all,
)
from tests.support.sampling import full_suite, summary_line

load_all()  # the helpers read SQLModel.metadata (tables to empty, schemas to compare)


@pytest.fixture(autouse=True)
def bcfleet_logger_as_it_was() -> Iterator[None]:
    """The bcfleet logger as each test found it: an in-process `fleet jobs tick` or `jobs run`
    gives it a stderr handler of its own and stops its propagation (as the CLI process
    should), which would hide later tests' log lines from their capture."""
    logger = logging.getLogger("bcfleet")
    handlers, level, propagate = list(logger.handlers), logger.level, logger.propagate
    yield
    logger.handlers[:] = handlers
    logger.setLevel(level)
    logger.propagate = propagate


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A PostgreSQL database of this test run's own (per xdist worker), dropped at the end."""
    with empty_pg_database(f"bcfleet_test_{os.getpid()}") as url:
        engine = make_engine(url)
        create_fresh(engine)
        engine.dispose()
        yield url


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh, empty database URL, once on SQLite and once on PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'fleet.db'}"
    url: str = request.getfixturevalue("pg_database")
    truncate_all(url)
    return url


LONG_TESTS = Path(__file__).with_name("long_tests.txt")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Tests marked `full` only under BCFLEET_FULL_SUITE=1; the tests of long_tests.txt first,
    longest first; the rest in their usual order.

    scripts/check runs xdist with --dist worksteal: a worker that runs out of tests takes half
    of the other's queue, so with the long ones at the start the queues end on short tests,
    instead of one worker running a two-minute test alone at the end.
    """
    if not full_suite():
        deselected = [item for item in items if item.get_closest_marker("full")]
        if deselected:
            config.hook.pytest_deselected(items=deselected)
            items[:] = [item for item in items if not item.get_closest_marker("full")]
    lines = LONG_TESTS.read_text().splitlines()
    rank = {node: i for i, node in enumerate(n for n in lines if n and not n.startswith("#"))}
    items.sort(key=lambda item: rank.get(item.nodeid, len(rank)))


def pytest_sessionfinish() -> None:
    """Every test has run: what is left on the heap is kept out of the collector's sight.

    At unconfigure, pytest's unraisable-exception plugin runs five full collections. Over the heap
    of an xdist worker that ran some 4,000 tests they took longer than the worker is given to
    exit, and it was interrupted, printing a KeyboardInterrupt warning after the last test.
    """
    gc.freeze()


WALKED = "tests/cli/test_cli_hostile_walk.py::test_hostile_"


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """A run that walked the hostile CLI walk ends saying which sample it was (its seed)."""
    walked = {
        report.nodeid
        for reports in terminalreporter.stats.values()
        for report in reports
        if isinstance(report, pytest.TestReport) and report.nodeid.startswith(WALKED)
    }
    if walked:
        terminalreporter.write_line(summary_line(len(walked)))


@pytest.fixture
def pg_url(pg_database: str) -> str:
    """This test run's PostgreSQL database, emptied for this test (PostgreSQL only)."""
    truncate_all(pg_database)
    return pg_database


@pytest.fixture
def pg_fleet(pg_url: str) -> Iterator[Fleet]:
    """A fleet on PostgreSQL only, for tests whose point is row locks or the server's own checks."""
    handle = open_fleet(pg_url, FakeClock(T0))
    yield handle
    handle.close()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'fleet.db'}"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(T0)


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


@pytest.fixture
def cli(sqlite_url: str, monkeypatch: pytest.MonkeyPatch) -> object:
    """`cli("flavors", "list", …)` runs the CLI against this test's fresh SQLite fleet."""
    monkeypatch.setenv("BCFLEET_NOW", T0.isoformat())
    start_from_schema_copy(sqlite_url)  # read verbs never create a database
    Fleet.open(sqlite_url).close()

    def call(*args: str) -> CliResult:
        return run_cli(*args, db=sqlite_url)

    return call

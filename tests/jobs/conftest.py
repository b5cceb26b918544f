"""Jobs tests: the recording job fixtures start empty and released for every test; a fleet whose time moves."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bcfleet.clock import OffsetClock
from bcfleet.fleet import Fleet
from tests.support import jobs as job_fixtures
from tests.support.fleet import T0, open_fleet


@pytest.fixture(autouse=True)
def _fresh_fixtures() -> Iterator[None]:
    job_fixtures.reset()
    yield
    job_fixtures.release.set()


@pytest.fixture
def moving_fleet(sqlite_url: str) -> Iterator[Fleet]:
    """A fleet whose clock starts at T0 and moves with real time, as a daemon's does: the
    daemon runs a job when job_state says it is due, which a frozen clock never reaches."""
    handle = open_fleet(sqlite_url, OffsetClock(T0))
    yield handle
    handle.close()

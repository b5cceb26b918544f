"""Jobs tests: the recording job fixtures start empty and released for every test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import jobs as job_fixtures


@pytest.fixture(autouse=True)
def _fresh_fixtures() -> Iterator[None]:
    job_fixtures.reset()
    yield
    job_fixtures.release.set()

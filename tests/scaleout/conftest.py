"""Scale-out tests: an empty PostgreSQL database with bcfleet's schema, of this test alone."""

from __future__ import annotations

import pytest

from tests.support.fleet import truncate_all


@pytest.fixture
def pg_url(pg_database: str) -> str:
    """This test run's PostgreSQL database, emptied for this test (PostgreSQL only)."""
    truncate_all(pg_database)
    return pg_database

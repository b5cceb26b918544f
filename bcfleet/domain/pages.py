"""The one default and maximum page length of each list; the API, HTTP routes (and OpenAPI), the
client, the CLI and the console all read them from here.

A list asked for without a length answers `default` items; a longer ask than `maximum` is
INVALID_INPUT (the API checks with `bounds.check_limit(limit, page.maximum)`).
"""

from __future__ import annotations

from dataclasses import dataclass

from bcfleet.domain.bounds import PAGE_MAX


@dataclass(frozen=True, slots=True)
class Page:
    """A list's page length when none is asked for, and the longest it answers."""

    name: str
    default: int
    maximum: int


EVENTS = Page("events", default=100, maximum=PAGE_MAX)
JOB_RUNS = Page("job runs", default=20, maximum=PAGE_MAX)
WEBHOOK_DELIVERIES = Page("webhook deliveries", default=100, maximum=PAGE_MAX)
USAGE = Page("usage windows", default=100, maximum=10_000)  # a day of windows of a large fleet
USAGE_DEAD_LETTERS = Page("usage dead letters", default=100, maximum=10_000)

ALL = (EVENTS, JOB_RUNS, WEBHOOK_DELIVERIES, USAGE, USAGE_DEAD_LETTERS)

"""Each list has one default and one maximum page length (domain.pages), read alike by every edge.

For each list operation the test reads, from the code, the API method's default, the OpenAPI
document's `limit` default and maximum, the HTTP client's and the CLI's defaults and the
console's, and checks they are the page's; and that the API refuses one past the maximum.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import click
import pytest

from bcfleet.api.events import EventsAPI
from bcfleet.api.jobs import JobsAPI
from bcfleet.api.usage import UsageAPI
from bcfleet.api.webhooks import WebhooksAPI
from bcfleet.cli import events as cli_events
from bcfleet.cli import jobs as cli_jobs
from bcfleet.cli import usage as cli_usage
from bcfleet.cli import webhooks as cli_webhooks
from bcfleet.client.fleet_client import FleetClient
from bcfleet.domain import pages
from bcfleet.domain.pages import Page
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.http.app import openapi_document
from bcfleet.jobs.runner import recent_runs
from bcfleet.tui.remote_source import RemoteSource
from bcfleet.tui.source import LocalSource
from tests.support.builders import OP


@dataclass(frozen=True)
class Listing:
    """Where one list is asked for on each edge."""

    page: Page
    api: Callable[..., Any]
    path: str
    cli: click.Command
    cli_option: str = "limit"
    client: Callable[..., Any] | None = None
    console: tuple[Callable[..., Any], ...] = ()


LISTINGS = [
    pytest.param(
        Listing(pages.EVENTS, EventsAPI.list, "/v1/events", cli_events.list_,
                client=FleetClient.events, console=(LocalSource.events, RemoteSource.events)),
        id="events",
    ),
    pytest.param(
        Listing(pages.JOB_RUNS, JobsAPI.runs, "/v1/jobs/{job}/runs", cli_jobs.list_,
                cli_option="run_count", client=FleetClient.job_runs),
        id="job-runs",
    ),
    pytest.param(
        Listing(pages.WEBHOOK_DELIVERIES, WebhooksAPI.deliveries,
                "/v1/webhooks/{id}/deliveries", cli_webhooks.deliveries),
        id="webhook-deliveries",
    ),
    pytest.param(Listing(pages.USAGE, UsageAPI.list, "/v1/usage", cli_usage.list_), id="usage"),
    pytest.param(
        Listing(pages.USAGE_DEAD_LETTERS, UsageAPI.dead_letters, "/v1/usage/dead-letters",
                cli_usage.dead_letters),
        id="usage-dead-letters",
    ),
]  # fmt: skip


def default_of(function: Callable[..., Any], name: str = "limit") -> Any:
    return inspect.signature(function).parameters[name].default


def openapi_limit(path: str) -> dict[str, Any]:
    operation = openapi_document()["paths"][path]["get"]
    (limit,) = [p for p in operation["parameters"] if p["name"] == "limit"]
    return dict(limit["schema"])


def cli_default(command: click.Command, option: str) -> Any:
    (param,) = [p for p in command.params if p.name == option]
    return param.default


@pytest.mark.parametrize("listing", LISTINGS)
def test_every_edge_has_the_pages_default_and_maximum(listing: Listing) -> None:
    page = listing.page
    schema = openapi_limit(listing.path)
    found = {
        "api": default_of(listing.api),
        "openapi default": schema.get("default"),
        "cli": cli_default(listing.cli, listing.cli_option),
        **{f"console {f.__qualname__}": default_of(f) for f in listing.console},
    }
    if listing.client is not None:
        found["client"] = default_of(listing.client)
    assert found == dict.fromkeys(found, page.default)
    assert (schema["minimum"], schema["maximum"]) == (1, page.maximum)


def test_every_list_with_a_limit_is_walked() -> None:
    with_limit = {
        path
        for path, verbs in openapi_document()["paths"].items()
        for verb, op in verbs.items()
        if verb == "get" and any(p["name"] == "limit" and "default" in p["schema"]
                                 for p in op.get("parameters", ()))
    }  # fmt: skip
    assert with_limit == {p.values[0].path for p in LISTINGS}  # type: ignore[attr-defined]


def test_the_job_runner_reads_the_same_default() -> None:
    assert default_of(recent_runs) == pages.JOB_RUNS.default


@pytest.mark.parametrize(
    "ask",
    [
        pytest.param(lambda f: f.api.events.list(OP, limit=pages.EVENTS.maximum + 1), id="events"),
        pytest.param(
            lambda f: f.api.jobs.runs(OP, limit=pages.JOB_RUNS.maximum + 1), id="job-runs"
        ),
        pytest.param(lambda f: f.api.usage.list(OP, limit=pages.USAGE.maximum + 1), id="usage"),
        pytest.param(
            lambda f: f.api.usage.dead_letters(OP, limit=pages.USAGE_DEAD_LETTERS.maximum + 1),
            id="usage-dead-letters",
        ),
    ],
)
def test_one_past_the_maximum_is_invalid_input(fleet: Fleet, ask: Callable[[Fleet], Any]) -> None:
    with pytest.raises(InvalidInputError):
        ask(fleet)

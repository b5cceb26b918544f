"""Metered usage over HTTP (pages by cursor, NDJSON and CSV exports, dead letters) and the fleet's counters on /metrics."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from typing import Any

import pytest

from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app
from bcfleet.jobs.runner import run_job
from bcfleet.jobs.vps_hosts import run_vps_hosts
from tests.support.builders import OP, flavor, token
from tests.support.capacity import pool_with_hosts
from tests.support.http import ApiClient, error_code, served
from tests.support.reservations import gpu_pool, reserve


@pytest.fixture
def metered(fleet: Fleet, clock: FakeClock) -> Iterator[tuple[ApiClient, ApiClient]]:
    """acme ran one instance for 20 minutes; the usage job wrote its windows."""
    pool = pool_with_hosts(fleet)
    run_vps_hosts(fleet, clock.now())
    flavor(fleet, pool["id"])
    fleet.api.usage.setup_meters(OP)
    fleet.api.instances.create(OP, tenant_id="acme", pool_id=pool["id"], flavor="g1.small")
    clock.advance(minutes=20)
    run_job(fleet, "vps.usage")
    fleet.api.tenants.create(OP, "globex")
    with served(fleet, tally_seconds=0) as (_server, root):
        yield root.as_(token(fleet, "acme", "alice")), root.as_(token(fleet, "globex", "eve"))


def test_usage_pages_by_cursor_and_filters(metered: tuple[ApiClient, ApiClient]) -> None:
    acme, globex = metered
    everything = acme.get("/v1/usage", params={"limit": 10000}).json()["items"]
    assert everything, "the usage job wrote windows"
    assert {w["tenantId"] for w in everything} == {"acme"}
    first = acme.get("/v1/usage", params={"limit": 1}).json()
    rest = acme.get("/v1/usage", params={"after": first["cursor"], "limit": 10000}).json()
    assert [w["id"] for w in first["items"] + rest["items"]] == [w["id"] for w in everything]
    meter = everything[0]["meter"]
    only = acme.get("/v1/usage", params={"meter": meter}).json()["items"]
    assert {w["meter"] for w in only} == {meter}
    assert globex.get("/v1/usage").json()["items"] == []
    bad = acme.get("/v1/usage", params={"since": "yesterday"})
    assert error_code(bad) == "INVALID_INPUT"
    backwards = acme.get(
        "/v1/usage", params={"since": "2026-12-01T00:00:00Z", "until": "2026-11-01T00:00:00Z"}
    )
    assert error_code(backwards) == "INVALID_INPUT"


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_usage_exports_stream_every_window(metered: tuple[ApiClient, ApiClient], fmt: str) -> None:
    acme, _globex = metered
    listed = acme.get("/v1/usage", params={"limit": 10000}).json()["items"]
    response = acme.get("/v1/usage/export", params={"format": fmt})
    assert response.status_code == 200
    if fmt == "json":
        rows: list[dict[str, Any]] = [json.loads(line) for line in response.text.splitlines()]
        assert [r["id"] for r in rows] == [w["id"] for w in listed]
    else:
        assert response.headers["content-type"].startswith("text/csv")
        rows = list(csv.DictReader(io.StringIO(response.text)))
        assert [r["quantity"] for r in rows] == [w["quantity"] for w in listed]
    assert error_code(acme.get("/v1/usage/export", params={"format": "xml"})) == "INVALID_INPUT"


def test_dead_letters_and_replay_need_root(metered: tuple[ApiClient, ApiClient]) -> None:
    acme, _globex = metered
    assert acme.get("/v1/usage/dead-letters").status_code == 200
    assert acme.post("/v1/usage/replay").status_code == 403


def test_job_runs_are_counted_on_metrics(fleet: Fleet) -> None:
    run_job(fleet, "vps.hosts")
    run_job(fleet, "vps.hosts")
    app = create_app(fleet, tally_seconds=0)  # the tallies run by hand here, not in the background
    for tally in app.state.tallies:
        tally.collect()
        tally.collect()  # runs already counted are not counted again
    text = app.state.served.metrics.render()
    assert 'bcfleet_job_runs_total{job="vps.hosts",outcome="ok"} 2' in text


def test_placements_and_preemptions_are_counted_from_the_event_log(fleet: Fleet) -> None:
    pool = gpu_pool(fleet, hosts=1, gpus=4)
    reserve(fleet, pool, tenant="acme", spot=True)
    reserve(fleet, pool, tenant="beta")  # a regular reservation preempts the spot one
    app = create_app(fleet, tally_seconds=0)
    for tally in app.state.tallies:
        tally.collect()
    text = app.state.served.metrics.render()
    assert "bcfleet_placements_total 2" in text
    assert "bcfleet_preemptions_total 1" in text


def test_a_reference_that_names_nothing_is_an_empty_filter_or_not_found(
    metered: tuple[ApiClient, ApiClient],
) -> None:
    """What http/rules.reference says of the text it lets through: a filter naming nothing
    matches nothing, a pool looked up and not found is NOT_FOUND, NUL and "" are refused."""
    acme, _ = metered
    for name in ("meter", "subject"):
        nothing = acme.get("/v1/usage", params={name: "no-such-thing"})
        assert nothing.status_code == 200 and nothing.json()["items"] == []
        assert error_code(acme.get("/v1/usage", params={name: "a\x00b"})) == "INVALID_INPUT"
        assert error_code(acme.get("/v1/usage", params={name: ""})) == "INVALID_INPUT"
    unknown = acme.post("/v1/instances", json={"pool": "no-such-pool", "flavor": "g1.small"})
    assert error_code(unknown) == "NOT_FOUND"

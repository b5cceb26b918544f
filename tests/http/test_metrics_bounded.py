"""/metrics stays the same size whatever callers send: labels come from closed sets (a declared
method or `other`, a route template or `unmatched`, a status class), judged on a real server."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from bcfleet.fleet import Fleet
from bcfleet.http.metrics import Metrics
from tests.support.http import served
from tests.support.raw_http import pipelined, pipelined_in_parallel

Series = set[tuple[str, tuple[tuple[str, str], ...]]]


def series(text: str) -> Series:
    """Every series of an exposition, as prometheus_client's own parser reads it."""
    return {
        (sample.name, tuple(sorted(sample.labels.items())))
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def made_up(i: int) -> tuple[str, str]:
    """A distinct method no route declares, on a distinct path (every hundredth 1,000 characters)."""
    method = f"Q{i}" if i % 100 else "L" * 1000 + str(i)
    path = f"/v1/pools/p{i}" if i % 2 else f"/v1/nowhere/{i}/x"
    return method, path


def test_ten_thousand_made_up_methods_and_paths_add_no_series(fleet: Fleet) -> None:
    with served(fleet) as (server, api):
        warm = [("WARM", "/v1/nowhere"), ("GET", "/v1/nowhere"), ("GET", "/v1/pools/p-warm")]
        assert pipelined(server.port, warm) == len(warm)
        api.as_(None).get("/metrics")  # the scrape's own series
        before = series(api.as_(None).get("/metrics").text)
        flood = [made_up(i) for i in range(10_000)] + [
            ("GET", f"/v1/pools/p{i}") for i in range(2_000)
        ]
        assert pipelined_in_parallel(server.port, flood) == len(flood)
        scraped = api.as_(None).get("/metrics")
    assert scraped.status_code == 200
    after = series(scraped.text)
    assert after == before, f"{len(after - before)} new series"
    counted = {labels: value for (name, labels), value in _samples(scraped.text).items()
               if name == "bcfleet_http_requests_total"}  # fmt: skip
    assert counted[(("method", "other"), ("route", "unmatched"), ("status", "4xx"))] == 10_001
    assert counted[(("method", "GET"), ("route", "/v1/pools/{pool}"), ("status", "4xx"))] == 2_001


def _samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


@pytest.mark.parametrize(
    ("method", "status", "labels"),
    [
        pytest.param("GET", 200, ("GET", "2xx"), id="a declared method keeps its name"),
        pytest.param("OPTIONS", 204, ("OPTIONS", "2xx"), id="OPTIONS is declared"),
        pytest.param("get", 404, ("other", "4xx"), id="methods are case-sensitive"),
        pytest.param("PROPFIND", 405, ("other", "4xx"), id="a method no route declares"),
        pytest.param("A" * 1000, 405, ("other", "4xx"), id="a long made-up method"),
        pytest.param("GET", 503, ("GET", "5xx"), id="a status counts by its class"),
        pytest.param("GET", 999, ("GET", "other"), id="a status outside 100-599"),
    ],
)
def test_each_label_comes_from_a_closed_set(
    method: str, status: int, labels: tuple[str, str]
) -> None:
    metrics = Metrics()
    metrics.observe(method, "/v1/pools", status, 0.01)
    text = metrics.render()
    expected_method, expected_status = labels
    found = {
        dict(labels_)["method"]: dict(labels_)["status"]
        for name, labels_ in series(text)
        if name == "bcfleet_http_requests_total"
    }
    assert found == {expected_method: expected_status}

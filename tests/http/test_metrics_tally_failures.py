"""The metrics tally loop of a real server survives a failing reader: one line in the log, no
traceback without --debug, the other tally and the next rounds go on."""

from __future__ import annotations

import logging
from typing import Any

import httpx
import pytest

from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app
from bcfleet.http.quiet_log import RateLimited, held_back
from bcfleet.http.server import BackgroundServer
from tests.support.builders import OP
from tests.support.waiting import wait_until

FAILURES = 5


@pytest.mark.parametrize(
    "debug",
    [
        pytest.param(False, id="one line, no traceback"),
        pytest.param(True, id="the traceback under --debug"),
    ],
)
def test_a_failing_tally_logs_one_line_and_the_loop_goes_on(
    fleet: Fleet, debug: bool, caplog: pytest.LogCaptureFixture
) -> None:
    fleet.api.pools.create(OP, tenant_id="root", name="vps-fra", kind="vps-host")
    app = create_app(fleet, tally_seconds=0.01, debug=debug)
    events, runs = app.state.tallies
    calls = {"events": 0, "runs": 0}
    read_page, read_runs = events.read_page, runs.read_runs

    def failing_then_fine(after: int | None) -> Any:
        calls["events"] += 1
        if calls["events"] <= FAILURES:
            raise ValueError("a row that does not decode")
        return read_page(after)

    def counted_runs(limit: int) -> Any:
        calls["runs"] += 1
        return read_runs(limit)

    events.read_page, runs.read_runs = failing_then_fine, counted_runs
    caplog.set_level(logging.INFO, logger="bcfleet.http")
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url) as http:
        wait_until(
            lambda: 'bcfleet_events_total{type="pool.created"} 1' in http.get("/metrics").text,
            timeout=10,
            what="the events to be tallied once the reader recovers",
        )
    assert calls["runs"] >= FAILURES  # the other tally ran in every round
    lines = [r for r in caplog.records if "tallying" in r.getMessage()]
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert "EventTally" in lines[0].getMessage() and "ValueError" in caplog.text
    assert (lines[0].exc_info is not None) is debug
    assert ("Traceback" in caplog.text) is debug


def test_a_kind_of_line_is_logged_once_an_interval_counting_the_rest() -> None:
    now = [0.0]
    quiet = RateLimited(60.0, clock=lambda: now[0])
    seen = []
    for t in (0.0, 1.0, 30.0, 59.9, 60.0, 61.0, 200.0):
        now[0] = t
        seen.append((quiet.admit("accept:EMFILE"), quiet.admit("tally:ValueError")))
    assert [a for a, _ in seen] == [0, None, None, None, 3, None, 1]
    assert [b for _, b in seen] == [0, None, None, None, 3, None, 1]  # each kind on its own
    assert held_back(3) == " (3 more like it since the last line)" and held_back(0) == ""

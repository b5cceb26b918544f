"""Server-sent events: the caller's log as it grows, resumed from a cursor, never another tenant's."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bcfleet.fleet import Fleet
from bcfleet.http.routes.events import sse_frame
from tests.support.builders import OP, token
from tests.support.http import ApiClient, served


@pytest.fixture
def api(fleet: Fleet) -> Iterator[ApiClient]:
    with served(fleet, poll_seconds=0.02) as (_server, client):
        yield client


def read_events(
    api: ApiClient,
    count: int,
    *,
    headers: dict[str, str] | None = None,
    watching: threading.Event | None = None,
    **params: Any,
) -> list[dict[str, Any]]:
    """The first `count` events of a stream (bounded: the server closes after `limit`);
    `watching` is set once the first of them has arrived."""
    events: list[dict[str, Any]] = []
    auth = {"Authorization": f"Bearer {api.token}", **(headers or {})}
    query = {"limit": count, **params}
    with api.http.stream("GET", "/v1/events/stream", params=query, headers=auth) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        frame: dict[str, Any] = {}
        for line in response.iter_lines():
            if line.startswith("id: "):
                frame["id"] = int(line[4:])
            elif line.startswith("event: "):
                frame["event"] = line[7:]
            elif line.startswith("data: "):
                frame["data"] = json.loads(line[6:])
            elif line == "" and "data" in frame:
                events.append(frame)
                frame = {}
                if watching is not None:
                    watching.set()
    return events


def test_a_stream_starts_at_the_beginning_and_names_each_event(api: ApiClient) -> None:
    for name in ("a-pool", "b-pool"):
        api.post("/v1/pools", json={"name": name, "kind": "vps-host"})
    events = read_events(api, 2)
    assert [(e["id"], e["event"]) for e in events] == [(1, "pool.created"), (2, "pool.created")]
    assert events[1]["data"]["data"] == {"name": "b-pool"}


@pytest.mark.parametrize("how", ["last-event-id", "after"])
def test_a_stream_resumes_after_the_cursor(api: ApiClient, how: str) -> None:
    for name in ("a-pool", "b-pool", "c-pool"):
        api.post("/v1/pools", json={"name": name, "kind": "vps-host"})
    first = read_events(api, 2)
    cursor = first[-1]["id"]
    if how == "last-event-id":
        rest = read_events(api, 1, headers={"Last-Event-ID": str(cursor)})
    else:
        rest = read_events(api, 1, after=cursor)
    assert [e["data"]["data"]["name"] for e in rest] == ["c-pool"]


def test_events_made_while_watching_arrive_in_order(api: ApiClient) -> None:
    api.post("/v1/pools", json={"name": "a-pool", "kind": "vps-host"})

    watching = threading.Event()

    def later() -> None:
        assert watching.wait(10), "the stream never delivered its first event"
        for name in ("b-pool", "c-pool"):
            api.post("/v1/pools", json={"name": name, "kind": "vps-host"})

    writer = threading.Thread(target=later)
    writer.start()
    events = read_events(api, 3, watching=watching)
    writer.join(5)
    assert [e["data"]["data"]["name"] for e in events] == ["a-pool", "b-pool", "c-pool"]
    assert [e["id"] for e in events] == sorted(e["id"] for e in events)


def test_a_tenant_streams_only_its_own_events(fleet: Fleet, api: ApiClient) -> None:
    for tenant in ("acme", "globex"):
        fleet.api.tenants.create(OP, tenant)
        fleet.api.pools.create(OP, tenant_id=tenant, name=f"{tenant}-pool", kind="vps-host")
    globex = api.as_(token(fleet, "globex", "g-admin"))
    events = read_events(globex, 1)
    assert events[0]["data"]["data"] == {"name": "globex-pool"}
    refused = globex.get("/v1/events/stream", params={"tenant": "acme", "limit": 1})
    assert refused.status_code == 403


@pytest.mark.parametrize(
    ("headers", "params", "status"),
    [
        pytest.param({}, {}, 401, id="no-token"),
        pytest.param({"Last-Event-ID": "x"}, {}, 400, id="bad-last-event-id"),
        pytest.param({}, {"after": "-1"}, 400, id="bad-after"),
    ],
)
def test_bad_stream_requests_answer_json_errors(
    api: ApiClient, headers: dict[str, str], params: dict[str, str], status: int
) -> None:
    client = api.as_(None) if status == 401 else api
    response = client.get("/v1/events/stream", headers=headers, params=params)
    assert response.status_code == status
    assert response.json()["error"]["code"] in ("UNAUTHENTICATED", "INVALID_INPUT")


def test_an_idle_stream_sends_keep_alives_and_ends_when_the_client_leaves(fleet: Fleet) -> None:
    with served(fleet, poll_seconds=0.01, heartbeat_seconds=0.05) as (server, api):
        auth = {"Authorization": f"Bearer {api.token}"}
        seen: list[str] = []
        deadline = time.monotonic() + 5
        with httpx.stream(
            "GET", f"{server.url}/v1/events/stream", headers=auth, timeout=5
        ) as response:
            for line in response.iter_lines():
                seen.append(line)
                if line.startswith(": keep-alive") or time.monotonic() > deadline:
                    break
        assert ": keep-alive" in seen
        assert api.get("/healthz").status_code == 200  # the server is fine after the hang-up


def test_a_frame_is_id_event_and_one_line_of_json() -> None:
    frame = sse_frame({"seq": 7, "type": "pool.created", "data": {"text": "a\nb"}})
    lines = frame.split("\n")
    assert lines[:2] == ["id: 7", "event: pool.created"]
    assert json.loads(lines[2].removeprefix("data: "))["data"]["text"] == "a\nb"
    assert frame.endswith("\n\n")

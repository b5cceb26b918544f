"""The fake Hetzner server over raw HTTP: auth, pages, unique names, selectors and fault knobs."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from bcfleet.clock import FakeClock
from bcfleet.providers.fake_labels import LabelError, matches_selector, validate_labels
from bcfleet.providers.fake_server import FakeHetzner
from tests.support.waiting import wait_until

START = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
TOKEN = "fake-test-token"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(START)


@pytest.fixture
def fake(clock: FakeClock) -> Iterator[FakeHetzner]:
    with FakeHetzner(token=TOKEN, clock=clock) as server:
        yield server


@pytest.fixture
def http(fake: FakeHetzner) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=fake.url + "/", headers=headers, timeout=5.0) as client:
        yield client


def _create(http: httpx.Client, name: str, **fields: Any) -> httpx.Response:
    body = {"name": name, "server_type": "cx23", "image": "ubuntu-24.04", "location": "fsn1"}
    body.update(fields)
    return http.post("servers", json=body)


def _error_code(response: httpx.Response) -> str:
    code: str = response.json()["error"]["code"]
    return code


# ----- serving -----------------------------------------------------------------------------


def test_it_listens_on_loopback_only(fake: FakeHetzner) -> None:
    assert fake.url.startswith("http://127.0.0.1:")
    assert fake.port > 0


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param(None, id="no-header"),
        pytest.param("Bearer wrong", id="wrong-token"),
        pytest.param(f"Basic {TOKEN}", id="not-bearer"),
    ],
)
def test_requests_without_the_bearer_token_are_unauthorized(
    fake: FakeHetzner, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    response = httpx.get(fake.url + "/servers", headers=headers, timeout=5.0)
    assert response.status_code == 401
    assert _error_code(response) == "unauthorized"


def test_without_a_configured_token_any_bearer_is_accepted() -> None:
    with FakeHetzner(token=None) as server:
        response = httpx.get(
            server.url + "/servers", headers={"Authorization": "Bearer x"}, timeout=5.0
        )
    assert response.status_code == 200


def test_every_answer_carries_rate_limit_headers(http: httpx.Client) -> None:
    response = http.get("servers")
    assert response.headers["RateLimit-Limit"] == "3600"
    assert response.headers["RateLimit-Remaining"] == "3599"
    assert int(response.headers["RateLimit-Reset"]) >= START.timestamp()


# ----- pages -------------------------------------------------------------------------------


def test_pages_follow_hetzner_meta(http: httpx.Client) -> None:
    body = http.get("server_types", params={"page": 2, "per_page": 4}).json()
    assert len(body["server_types"]) == 4
    assert body["meta"]["pagination"] == {
        "page": 2,
        "per_page": 4,
        "previous_page": 1,
        "next_page": 3,
        "last_page": 3,
        "total_entries": 9,
    }


def test_per_page_is_capped_at_fifty(http: httpx.Client) -> None:
    body = http.get("server_types", params={"per_page": 500}).json()
    assert body["meta"]["pagination"]["per_page"] == 50
    assert body["meta"]["pagination"]["next_page"] is None


@pytest.mark.parametrize("page", ["0", "-1", "two"])
def test_a_bad_page_is_invalid_input(http: httpx.Client, page: str) -> None:
    response = http.get("server_types", params={"page": page})
    assert response.status_code == 400
    assert _error_code(response) == "invalid_input"


def test_server_types_carry_prices_per_location_and_deprecation(http: httpx.Client) -> None:
    types = {
        t["name"]: t
        for t in http.get("server_types", params={"per_page": 50}).json()["server_types"]
    }
    assert {"cx22", "cx23", "cx33", "cpx22", "ccx13"} <= set(types)
    assert types["cx22"]["deprecation"]["unavailable_after"].startswith("2027-01-01")
    assert types["cx23"]["deprecation"] is None
    fsn1 = next(p for p in types["cx22"]["prices"] if p["location"] == "fsn1")
    assert fsn1["price_hourly"] == {"net": "0.0060000000", "gross": "0.0071000000"}
    assert [loc["name"] for loc in types["ccx13"]["locations"]] == [
        "fsn1",
        "nbg1",
        "hel1",
        "ash",
        "hil",
        "sin",
    ]


# ----- servers -----------------------------------------------------------------------------


def test_a_server_is_created_read_and_deleted_with_an_action(
    http: httpx.Client, clock: FakeClock
) -> None:
    created = _create(http, "web-1", labels={"env": "test"})
    assert created.status_code == 201
    body = created.json()
    server = body["server"]
    assert (server["status"], server["labels"]) == ("initializing", {"env": "test"})
    assert server["location"]["name"] == "fsn1"
    assert "datacenter" not in server, "Hetzner removed a server's datacenter"
    assert body["action"]["command"] == "create_server"

    clock.advance(6)
    assert http.get(f"servers/{server['id']}").json()["server"]["status"] == "running"

    deleted = http.delete(f"servers/{server['id']}")
    assert deleted.json()["action"]["command"] == "delete_server"
    missing = http.get(f"servers/{server['id']}")
    assert (missing.status_code, _error_code(missing)) == (404, "not_found")


def test_server_names_are_unique(http: httpx.Client) -> None:
    assert _create(http, "web-1").status_code == 201
    again = _create(http, "web-1", server_type="cx33")
    assert again.status_code == 409
    assert _error_code(again) == "uniqueness_error"
    assert again.json()["error"]["details"] == {"fields": [{"name": "name"}]}


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        pytest.param({"name": "bad name!"}, "name", id="bad-hostname"),
        pytest.param({"image": "windows-95"}, "image", id="unknown-image"),
        pytest.param({"location": "mars1"}, "location", id="unknown-location"),
        pytest.param({"labels": {"bad key": "x"}}, "labels", id="bad-label-key"),
        pytest.param({"labels": {"k": "-starts-with-dash"}}, "labels", id="bad-label-value"),
    ],
)
def test_create_validates_its_fields(
    http: httpx.Client, fields: dict[str, Any], field: str
) -> None:
    body = {"name": "ok", **fields}
    response = _create(http, body.pop("name"), **body)
    assert response.status_code == 400
    assert _error_code(response) == "invalid_input"
    assert response.json()["error"]["details"]["fields"][0]["name"] == field


def test_a_type_not_sold_in_a_location_is_invalid_input(http: httpx.Client) -> None:
    response = _create(http, "us-1", location="ash")
    assert (response.status_code, _error_code(response)) == (400, "invalid_input")


def test_a_body_that_is_not_json_is_a_json_error(http: httpx.Client) -> None:
    response = http.post("servers", content=b"{not json", headers={"Content-Type": "x"})
    assert (response.status_code, _error_code(response)) == (400, "json_error")


def test_a_type_past_its_end_of_sale_cannot_be_created(
    http: httpx.Client, clock: FakeClock
) -> None:
    clock.set(datetime(2027, 1, 2, tzinfo=UTC))
    response = _create(http, "old-1", server_type="cx22")
    assert (response.status_code, _error_code(response)) == (412, "resource_unavailable")


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        pytest.param("env=prod", ["a"], id="equals"),
        pytest.param("env==prod,tier=web", ["a"], id="double-equals-and"),
        pytest.param("env!=prod", ["b", "c"], id="not-equals"),
        pytest.param("tier", ["a", "b"], id="exists"),
        pytest.param("!tier", ["c"], id="absent"),
        pytest.param("env in (prod,test)", ["a", "b"], id="in-set"),
        pytest.param("env notin (prod)", ["b", "c"], id="not-in-set"),
    ],
)
def test_servers_are_listed_by_label_selector(
    fake: FakeHetzner, http: httpx.Client, selector: str, expected: list[str]
) -> None:
    fake.add_server("a", "cx23", "fsn1", {"env": "prod", "tier": "web"})
    fake.add_server("b", "cx23", "fsn1", {"env": "test", "tier": "db"})
    fake.add_server("c", "cx23", "fsn1", {})
    body = http.get("servers", params={"label_selector": selector}).json()
    assert [s["name"] for s in body["servers"]] == expected


def test_a_malformed_selector_is_invalid_input(fake: FakeHetzner, http: httpx.Client) -> None:
    fake.add_server("a", "cx23", "fsn1", {"env": "prod"})
    response = http.get("servers", params={"label_selector": "env in (prod"})
    assert (response.status_code, _error_code(response)) == (400, "invalid_input")


def test_servers_are_found_by_exact_name(fake: FakeHetzner, http: httpx.Client) -> None:
    fake.add_server("web-1", "cx23", "fsn1")
    fake.add_server("web-10", "cx23", "fsn1")
    body = http.get("servers", params={"name": "web-1"}).json()
    assert [s["name"] for s in body["servers"]] == ["web-1"]


def test_label_rules() -> None:
    validate_labels({"bcfleet.dev/instance": "ins_01jz", "empty": ""})
    with pytest.raises(LabelError):
        validate_labels({"k": 1})
    assert matches_selector({"a": "1"}, "a=1")
    with pytest.raises(LabelError):
        matches_selector({}, "a=1,,b=2")


# ----- fault knobs -------------------------------------------------------------------------


def test_forced_429s_carry_a_reset_then_stop(fake: FakeHetzner, http: httpx.Client) -> None:
    fake.rate_limit_next(2, reset_in=30)
    for _ in range(2):
        response = http.get("servers")
        assert (response.status_code, _error_code(response)) == (429, "rate_limit_exceeded")
        assert response.headers["RateLimit-Remaining"] == "0"
        assert int(response.headers["RateLimit-Reset"]) == int(START.timestamp()) + 30
    assert http.get("servers").status_code == 200


def test_the_bucket_empties_and_refills_with_time(
    fake: FakeHetzner, http: httpx.Client, clock: FakeClock
) -> None:
    fake.state.set_rate_limit(3600, remaining=2)
    assert [http.get("servers").status_code for _ in range(3)] == [200, 200, 429]
    clock.advance(1)
    assert http.get("servers").status_code == 200


def test_unavailable_creates_and_sold_out_types(fake: FakeHetzner, http: httpx.Client) -> None:
    fake.unavailable_next_creates(1)
    first = _create(http, "web-1")
    assert (first.status_code, _error_code(first)) == (412, "resource_unavailable")
    assert _create(http, "web-1").status_code == 201

    fake.sell_out("cx33", "nbg1")
    sold_out = _create(http, "web-2", server_type="cx33", location="nbg1")
    assert _error_code(sold_out) == "resource_unavailable"
    types = http.get("server_types", params={"per_page": 50}).json()["server_types"]
    cx33 = next(t for t in types if t["name"] == "cx33")
    places = {entry["name"]: entry["available"] for entry in cx33["locations"]}
    assert places == {"fsn1": True, "nbg1": False, "hel1": True}


def test_slow_answers_are_slow(fake: FakeHetzner, http: httpx.Client) -> None:
    fake.slow_down(0.3)
    began = time.monotonic()
    assert http.get("servers").status_code == 200
    assert time.monotonic() - began >= 0.3


def test_a_create_can_succeed_while_its_answer_times_out(
    fake: FakeHetzner, http: httpx.Client
) -> None:
    fake.hang_after_create(times=1, seconds=10)
    with pytest.raises(httpx.ReadTimeout):
        _create_with_timeout(http, "web-lost", 0.3)
    assert fake.server_names() == ["web-lost"]
    assert http.get("servers", params={"name": "web-lost"}).json()["servers"]


def _create_with_timeout(http: httpx.Client, name: str, seconds: float) -> httpx.Response:
    body = {"name": name, "server_type": "cx23", "image": "ubuntu-24.04"}
    return http.post("servers", json=body, timeout=seconds)


def test_forced_failures_match_method_and_path(fake: FakeHetzner, http: httpx.Client) -> None:
    fake.fail_next("locked", 423, times=1, method="DELETE", path="/servers")
    assert http.get("servers").status_code == 200
    server_id = _create(http, "web-1").json()["server"]["id"]
    locked = http.delete(f"servers/{server_id}")
    assert (locked.status_code, _error_code(locked)) == (423, "locked")
    assert http.delete(f"servers/{server_id}").status_code == 200


@pytest.mark.parametrize("keep_state", [True, False], ids=["state-kept", "state-dropped"])
def test_a_restart_keeps_the_port_and_keeps_or_drops_the_project(
    fake: FakeHetzner, keep_state: bool
) -> None:
    fake.add_server("web-1", "cx23", "fsn1")
    port = fake.port
    fake.restart(keep_state=keep_state)
    assert fake.port == port
    headers = {"Authorization": f"Bearer {TOKEN}"}
    body = httpx.get(fake.url + "/servers", headers=headers, timeout=5.0).json()
    assert [s["name"] for s in body["servers"]] == (["web-1"] if keep_state else [])


def test_stopping_cuts_a_hanging_answer_short(fake: FakeHetzner) -> None:
    fake.hang_after_create(times=1, seconds=60)
    outcome: list[Any] = []

    def send() -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        body = {"name": "web-1", "server_type": "cx23", "image": "ubuntu-24.04"}
        try:
            outcome.append(
                httpx.post(fake.url + "/servers", json=body, headers=headers, timeout=20)
            )
        except httpx.HTTPError as exc:
            outcome.append(exc)

    sender = threading.Thread(target=send)
    sender.start()
    wait_until(fake.server_names, timeout=5, what="the server to be made")
    began = time.monotonic()
    fake.stop()
    sender.join(timeout=10)
    assert time.monotonic() - began < 5
    assert not sender.is_alive() and len(outcome) == 1


def test_the_admin_api_turns_knobs_and_shows_state(fake: FakeHetzner, http: httpx.Client) -> None:
    admin = fake.admin_url
    knobs = {"rateLimited": {"times": 1, "resetIn": 3}, "soldOut": [["cx23", "hel1"]]}
    assert httpx.post(admin + "/faults", json=knobs, timeout=5.0).status_code == 200
    assert http.get("servers").status_code == 429
    assert _create(http, "web-1").status_code == 201

    state = httpx.get(admin + "/state", timeout=5.0).json()
    assert [s["name"] for s in state["servers"]] == ["web-1"]
    assert state["faults"]["sold_out"] == [["cx23", "hel1"]]

    httpx.post(admin + "/reset", json={"keepServers": False}, timeout=5.0)
    assert fake.server_names() == []
    assert fake.requests == []

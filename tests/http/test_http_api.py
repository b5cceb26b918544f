"""The HTTP API: the documents' walkthroughs over /v1, errors as PRODUCT.md §3, limits, health."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bcfleet.errors import NoCapacityError
from bcfleet.fleet import Fleet
from bcfleet.http.serving import error_response
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.jobs.webhooks import run_webhooks
from tests.support.builders import inventory
from tests.support.fleet import python_cli
from tests.support.http import PLACEMENT, ApiClient, error_code, served
from tests.support.waiting import holds_within, wait_for


@pytest.fixture
def api(fleet: Fleet) -> Iterator[ApiClient]:
    with served(fleet, max_body_bytes=64 * 1024) as (_server, client):
        yield client


def test_root_sets_up_a_pool_and_its_flavors_over_http(api: ApiClient) -> None:
    assert api.post("/v1/tenants", json={"id": "acme", "name": "ACME"}).status_code == 201
    pool = api.post(
        "/v1/pools",
        json={"name": "vps-fra", "kind": "vps-host", "gpuModel": "L40S",
              "policy": {"overcommit": {"vcpu": 2, "memoryGiB": 1.5}}},
    )  # fmt: skip
    assert pool.status_code == 201, pool.text
    assert pool.json()["policy"]["overcommit"] == {"vcpu": 2.0, "memoryGiB": 1.5}
    assert api.post("/v1/pools/vps-fra/offers", json={"tenant": "acme"}).json()["offeredTo"] == [
        "acme"
    ]
    created = api.post(
        "/v1/pools/vps-fra/flavors",
        json={"name": "gpu1.l40s", "vcpu": 8, "memoryGiB": 32, "diskGiB": 200, "gpus": 1,
              "placement": {"numaAffine": True, "pinned": True}},
    )  # fmt: skip
    assert created.status_code == 201, created.text
    assert created.json()["placement"]["numaAffine"] is True
    updated = api.put(
        "/v1/pools/vps-fra/flavors/gpu1.l40s",
        json={"vcpu": 8, "memoryGiB": 64, "diskGiB": 200, "gpus": 1},
    )
    assert (updated.json()["memoryGiB"], updated.json()["version"]) == (64, 2)
    assert api.get("/v1/pools/vps-fra/flavors/gpu1.l40s").json()["memoryGiB"] == 64
    listed = api.get(f"/v1/pools/{pool.json()['id']}/flavors").json()["items"]
    assert [f["name"] for f in listed] == ["gpu1.l40s"]
    gone = api.delete("/v1/pools/vps-fra/flavors/gpu1.l40s").json()
    assert gone == {"deleted": True, "archived": False}
    assert error_code(api.get("/v1/pools/vps-fra/flavors/gpu1.l40s")) == "NOT_FOUND"
    assert api.patch("/v1/pools/vps-fra", json={"gpuModel": "H100"}).json()["gpuModel"] == "H100"
    revoked = api.delete("/v1/pools/vps-fra/offers/acme")
    assert revoked.json()["offeredTo"] == []


def test_a_flavor_is_replaced_with_the_body_create_takes(api: ApiClient) -> None:
    """PUT takes create's body as it is (name included) when the name is the path's; another
    name is INVALID_INPUT naming both, and nothing changes."""
    assert api.post("/v1/pools", json={"name": "vps-fra", "kind": "vps-host"}).status_code == 201
    body = {"name": "g1.small", "vcpu": 2, "memoryGiB": 4, "diskGiB": 40}
    assert api.post("/v1/pools/vps-fra/flavors", json=body).status_code == 201
    replaced = api.put("/v1/pools/vps-fra/flavors/g1.small", json={**body, "memoryGiB": 8})
    assert replaced.status_code == 200, replaced.text
    assert (replaced.json()["memoryGiB"], replaced.json()["version"]) == (8, 2)
    renamed = api.put("/v1/pools/vps-fra/flavors/g1.small", json={**body, "name": "g1.big"})
    assert renamed.status_code == 400 and error_code(renamed) == "INVALID_INPUT"
    error = renamed.json()["error"]
    assert "'g1.big'" in error["message"] and "'g1.small'" in error["message"]
    assert set(error["details"]["fields"]) == {"name"}
    kept = api.get("/v1/pools/vps-fra/flavors/g1.small").json()
    assert (kept["memoryGiB"], kept["version"]) == (8, 2)
    assert error_code(api.get("/v1/pools/vps-fra/flavors/g1.big")) == "NOT_FOUND"


def test_a_host_is_adopted_reports_its_inventory_and_drains(api: ApiClient) -> None:
    api.post("/v1/pools", json={"name": "vps-fra", "kind": "vps-host"})
    adopted = api.post(
        "/v1/hosts", json={"pool": "vps-fra", "name": "fra-01", "labels": {"rack": "r1"}}
    )
    assert adopted.status_code == 201
    assert adopted.json()["status"] == "ready, no inventory"
    reported = api.post("/v1/hosts/fra-01/inventory", json=inventory(cpus=8))
    assert reported.status_code == 200, reported.text
    assert api.get("/v1/hosts/fra-01").json()["inventory"]["memoryGiB"] == 64
    assert api.post("/v1/hosts/fra-01/drain").json()["state"] == "draining"
    assert api.post("/v1/hosts/fra-01/ready").json()["state"] == "ready"
    assert [
        h["name"] for h in api.get("/v1/hosts", params={"pool": "vps-fra"}).json()["items"]
    ] == ["fra-01"]
    bad = api.post("/v1/hosts/fra-01/inventory", json={**inventory(), "cpus": []})
    assert error_code(bad) == "INVALID_INPUT"
    types = [e["type"] for e in api.get("/v1/events").json()["items"]]
    assert types == ["pool.created", "host.adopted", "host.draining", "host.ready"]


def test_events_page_by_cursor_and_type(api: ApiClient) -> None:
    for name in ("a-pool", "b-pool", "c-pool"):
        api.post("/v1/pools", json={"name": name, "kind": "vps-host"})
    first = api.get("/v1/events", params={"limit": 2}).json()
    assert [e["data"]["name"] for e in first["items"]] == ["a-pool", "b-pool"]
    rest = api.get("/v1/events", params={"after": first["cursor"]}).json()
    assert [e["data"]["name"] for e in rest["items"]] == ["c-pool"]
    assert api.get("/v1/events", params={"type": "host.adopted"}).json()["items"] == []
    assert error_code(api.get("/v1/events", params={"limit": 0})) == "INVALID_INPUT"
    assert error_code(api.get("/v1/events", params={"after": "x"})) == "INVALID_INPUT"


@pytest.mark.parametrize(
    "header",
    [
        pytest.param(None, id="no-header"),
        pytest.param("Basic abc", id="not-bearer"),
        pytest.param("Bearer", id="empty-token"),
        pytest.param("Bearer bcf_unknown", id="unknown-token"),
    ],
)
def test_requests_without_a_valid_bearer_token_are_401(api: ApiClient, header: str | None) -> None:
    headers = {"Authorization": header} if header is not None else {}
    response = api.as_(None).get("/v1/pools", headers=headers)
    assert response.status_code == 401
    assert error_code(response) == "UNAUTHENTICATED"
    assert response.headers["www-authenticate"].startswith("Bearer")


def test_errors_carry_their_codes_and_statuses(api: ApiClient) -> None:
    api.post("/v1/pools", json={"name": "vps-fra", "kind": "vps-host"})
    duplicate = api.post("/v1/pools", json={"name": "vps-fra", "kind": "vps-host"})
    assert (duplicate.status_code, error_code(duplicate)) == (409, "CONFLICT")
    missing = api.get("/v1/pools/nope")
    assert (missing.status_code, error_code(missing)) == (404, "NOT_FOUND")
    typo = api.post("/v1/pools", json={"name": "x", "kind": "vps-host", "gpuModle": "L4"})
    assert (typo.status_code, error_code(typo)) == (400, "INVALID_INPUT")
    assert "gpuModle" in typo.json()["error"]["message"]
    no_route = api.get("/v1/nowhere")
    assert (no_route.status_code, error_code(no_route)) == (404, "NOT_FOUND")
    wrong_method = api.http.put("/v1/tenants")
    assert wrong_method.status_code == 405
    assert "GET" in wrong_method.headers["allow"]


@pytest.mark.parametrize(
    "body",
    [
        pytest.param(b"{", id="truncated"),
        pytest.param(b"", id="empty"),
        pytest.param(b'{"id": NaN}', id="nan"),
        pytest.param(b'{"id": "a\\u0000b"}', id="nul-character"),
        pytest.param(b'{"id": "\\ud800"}', id="lone-surrogate"),
        pytest.param(b"[" * 5000 + b"]" * 5000, id="deeply-nested"),
        pytest.param(b"[]", id="not-an-object"),
    ],
)
def test_malformed_bodies_are_400(api: ApiClient, body: bytes) -> None:
    response = api.post("/v1/tenants", content=body, headers={"Content-Type": "application/json"})
    assert (response.status_code, error_code(response)) == (400, "INVALID_INPUT")


def test_bodies_over_the_limit_are_413(api: ApiClient) -> None:
    big = json.dumps({"id": "acme", "name": "x" * 70_000}).encode()
    declared = api.post("/v1/tenants", content=big)
    assert declared.status_code == 413
    assert declared.json()["error"]["details"]["limitBytes"] == 64 * 1024

    def chunks() -> Iterator[bytes]:
        for _ in range(100):
            yield b" " * 1024

    streamed = api.post("/v1/tenants", content=chunks())  # chunked: no Content-Length
    assert streamed.status_code == 413


def test_a_no_free_instance_error_is_503_with_retry_after() -> None:
    error = NoCapacityError("No free instance", instance_size="large", retry_after_seconds=27)
    response = error_response(error)
    assert response.status_code == 503
    assert response.headers["retry-after"] == "27"
    details = json.loads(bytes(response.body))["error"]["details"]
    assert details["reason"] == "fleet_no_capacity"
    assert details["instance_size"] == "large"


def test_health_metrics_and_the_document_need_no_token(api: ApiClient) -> None:
    anonymous = api.as_(None)
    assert anonymous.get("/healthz").json()["status"] == "ok"
    anonymous.get("/v1/pools")
    text = anonymous.get("/metrics").text
    assert 'bcfleet_http_requests_total{method="GET",route="/v1/pools",status="4xx"} 1' in text
    assert "bcfleet_http_request_duration_seconds_bucket" in text
    assert "bcfleet_placements_total" in text
    assert anonymous.get("/v1/openapi.json").json()["openapi"] == "3.1.0"


def test_the_metrics_tally_the_event_log(fleet: Fleet) -> None:
    with served(fleet, tally_seconds=0.05) as (_server, api):
        api.post("/v1/pools", json={"name": "vps-fra", "kind": "vps-host"})
        wanted = 'bcfleet_events_total{type="pool.created"} 1'
        holds_within(lambda: wanted in api.as_(None).get("/metrics").text, timeout=5)
        assert wanted in api.as_(None).get("/metrics").text  # tallied every 50 ms on its own


def test_instances_and_quotas_over_http(fleet: Fleet, api: ApiClient) -> None:
    api.post("/v1/tenants", json={"id": "acme"})
    api.post("/v1/pools", json={"name": "vps-fra", "kind": "vps-host"})
    api.post("/v1/pools/vps-fra/offers", json={"tenant": "acme"})
    api.post("/v1/hosts", json={"pool": "vps-fra", "name": "fra-01", "labels": PLACEMENT})
    api.post("/v1/hosts/fra-01/inventory", json=inventory(cpus=16))
    run_vps_hosts(fleet, fleet.now())
    for name, vcpu in (("g1.small", 2), ("g1.medium", 4)):
        api.post(
            "/v1/pools/vps-fra/flavors",
            json={"name": name, "vcpu": vcpu, "memoryGiB": 4, "diskGiB": 40},
        )
    quota = api.put("/v1/quotas/acme/vps-fra", json={"vcpu": 8, "memoryGiB": None})
    assert quota.json()["limits"] == {"vcpu": 8, "memoryGiB": None}
    created = api.post(
        "/v1/instances", json={"pool": "vps-fra", "flavor": "g1.small"}, params={"tenant": "acme"}
    )
    assert created.status_code == 201, created.text
    instance = created.json()
    assert (instance["state"], instance["tenantId"]) == ("running", "acme")
    ins = f"/v1/instances/{instance['id']}"
    assert api.get(ins + "/spec").json()["shape"]["vcpu"] == 2
    specs = api.get("/v1/hosts/fra-01/specs").json()
    assert [s["id"] for s in specs["items"]] == [instance["id"]]
    assert api.post(ins + "/stop").json()["state"] == "stopped"
    assert api.post(ins + "/resize", json={"flavor": "g1.medium"}).json()["shape"]["vcpu"] == 4
    assert api.post(ins + "/start").json()["state"] == "running"
    used = api.get("/v1/quotas", params={"tenant": "acme"}).json()["items"][0]["used"]
    assert used["vcpu"] == 4
    assert (
        api.get("/v1/instances", params={"tenant": "acme"}).json()["items"][0]["id"]
        == (instance["id"])
    )
    assert api.delete(ins).json()["state"] == "deleted"
    assert error_code(api.delete(ins)) == "NOT_FOUND"


def test_webhooks_over_http(fleet: Fleet, api: ApiClient) -> None:
    made = api.post(
        "/v1/webhooks", json={"url": "https://hooks.example/in", "eventTypes": ["pool.*"]}
    )
    assert made.status_code == 201, made.text
    hook = made.json()
    assert hook["secret"].startswith("whsec_")
    one = f"/v1/webhooks/{hook['id']}"
    assert "secret" not in api.get(one).json()
    assert [h["id"] for h in api.get("/v1/webhooks").json()["items"]] == [hook["id"]]
    api.post("/v1/pools", json={"name": "vps-fra", "kind": "vps-host"})
    run_webhooks(fleet, fleet.now(), transport=httpx.MockTransport(lambda _r: httpx.Response(410)))
    (delivery,) = api.get(one + "/deliveries").json()["items"]
    assert (delivery["state"], delivery["lastStatus"]) == ("pending", 410)
    requeued = api.post(f"{one}/deliveries/{delivery['id']}/redeliver")
    assert requeued.json()["attempts"] == 0
    assert error_code(api.post(f"{one}/deliveries/x/redeliver")) == "INVALID_INPUT"
    assert error_code(api.get(one + "/deliveries", params={"state": "lost"})) == "INVALID_INPUT"
    assert api.delete(one).json() == {"id": hook["id"], "deleted": True}
    assert error_code(api.get(one)) == "NOT_FOUND"


@pytest.mark.slow
def test_fleet_serve_serves_until_interrupted(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    root = Path(__file__).resolve().parents[2]
    argv = python_cli("serve", "--port", str(port), "--log-level", "warning",
                      db=f"sqlite:///{tmp_path / 'fleet.db'}")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(root)}
    server = subprocess.Popen(argv, env=env, cwd=tmp_path, stderr=subprocess.PIPE)
    try:

        def health() -> httpx.Response | None:
            try:
                return httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1)
            except httpx.HTTPError:
                return None

        assert wait_for(health, what="the server").json()["status"] == "ok"
        assert httpx.get(f"http://127.0.0.1:{port}/v1/pools", timeout=5).status_code == 401
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(15)
    assert server.returncode == 0

"""Document 004 over HTTP: compute settings, services (503 fleet_no_capacity with Retry-After),
the streaming deploy, indexes and environments."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from tests.support.builders import token
from tests.support.compute import make_spares_ready, serverless_tenant
from tests.support.http import ApiClient, error_code, served


@pytest.fixture
def acme(fleet: Fleet) -> Iterator[ApiClient]:
    serverless_tenant(fleet, spares={"large": 1})
    with served(fleet) as (_server, root):
        yield root.as_(token(fleet, "acme", "acme-admin"))


def test_compute_settings_show_draft_and_save(acme: ApiClient) -> None:
    shown = acme.get("/v1/settings/compute").json()
    assert shown["sizes"]["large"]["spares"] == 1
    draft = acme.post("/v1/settings/compute/draft", json={"spares": {"large": 3}}).json()
    assert draft["sizes"]["large"]["spares"] == 3
    assert acme.get("/v1/settings/compute").json()["sizes"]["large"]["spares"] == 1
    saved = acme.patch(
        "/v1/settings/compute", json={"spares": {"large": 2}, "defaultSize": "large"}
    )
    assert saved.status_code == 200, saved.text
    assert (saved.json()["sizes"]["large"]["spares"], saved.json()["defaultSize"]) == (2, "large")
    bad = acme.patch("/v1/settings/compute", json={"enable": ["huge"]})
    assert error_code(bad) == "INVALID_INPUT"


def test_a_deploy_with_no_free_instance_is_503_fleet_no_capacity_with_retry_after(
    fleet: Fleet, clock: FakeClock, acme: ApiClient
) -> None:
    make_spares_ready(fleet, clock)
    ids = []
    for name in ("web", "api"):
        made = acme.post("/v1/services", json={"workspace": "prod", "name": name, "size": "large"})
        assert made.status_code == 201, made.text
        ids.append(made.json()["id"])
    first = acme.post(f"/v1/services/{ids[0]}/deploy")
    assert first.json()["status"] == "deployed"
    refused = acme.post(f"/v1/services/{ids[1]}/deploy")
    assert refused.status_code == 503
    error = refused.json()["error"]
    assert error["code"] == "NO_CAPACITY"
    assert error["details"]["reason"] == "fleet_no_capacity"
    assert error["details"]["instance_size"] == "large"
    assert int(refused.headers["retry-after"]) == error["details"]["retry_after"] > 0
    make_spares_ready(fleet, clock)
    assert acme.post(f"/v1/services/{ids[1]}/deploy").json()["status"] == "deployed"
    assert acme.post(f"/v1/services/{ids[1]}/undeploy").json()["deployed"] is False
    assert acme.delete(f"/v1/services/{ids[1]}").json()["deleted"] is True
    assert [s["name"] for s in acme.get("/v1/services").json()["items"]] == ["web"]


def test_the_streaming_deploy_is_ndjson_progress(
    fleet: Fleet, clock: FakeClock, acme: ApiClient
) -> None:
    make_spares_ready(fleet, clock)
    made = acme.post("/v1/services", json={"workspace": "prod", "name": "web", "size": "large"})
    response = acme.post(f"/v1/services/{made.json()['id']}/deploy/stream")
    assert response.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in response.text.splitlines()]
    assert [line["phase"] for line in lines] == ["deployed"]
    missing = acme.post("/v1/services/svc_nope/deploy/stream")
    assert error_code(missing) == "NOT_FOUND"


def test_indexes_and_environments(acme: ApiClient) -> None:
    index = acme.post("/v1/indexes", json={"workspace": "prod", "name": "docs"})
    assert index.status_code == 201, index.text
    one = f"/v1/indexes/{index.json()['id']}"
    assert acme.patch(one, json={"podSize": "large"}).json()["podSize"] == "large"
    assert (
        acme.get("/v1/indexes", params={"workspace": "prod"}).json()["items"][0]["name"] == "docs"
    )
    env = acme.post("/v1/environments", json={"name": "staging", "size": "medium"})
    assert env.status_code == 201, env.text
    moved = acme.patch(f"/v1/environments/{env.json()['id']}", json={"size": "large"})
    assert moved.json()["size"] == "large"
    assert acme.get(f"/v1/environments/{env.json()['id']}").json()["name"] == "staging"
    assert acme.delete(one).json()["deleted"] is True

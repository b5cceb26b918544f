"""Document 003 over HTTP: reservations, batches, idempotency, cancel, a host's bookings, preview."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bcfleet.fleet import Fleet
from tests.support.builders import token
from tests.support.http import ApiClient, error_code, served
from tests.support.reservations import gpu_pool


@pytest.fixture
def acme(fleet: Fleet) -> Iterator[tuple[ApiClient, dict[str, Any]]]:
    pool = gpu_pool(fleet, hosts=2, gpus=4)
    with served(fleet) as (_server, root):
        yield root.as_(token(fleet, "acme", "acme-admin")), pool


def test_a_reservation_over_http(acme: tuple[ApiClient, dict[str, Any]]) -> None:
    api, pool = acme
    ask = {"pool": pool["name"], "gpus": 4, "duration": "12h", "idempotencyKey": "sweep-1"}
    made = api.post("/v1/reservations", json=ask)
    assert made.status_code == 201, made.text
    body = made.json()
    assert (body["state"], body["devices"]) == ("placed", [{"class": "gpu", "count": 4}])
    assert api.post("/v1/reservations", json=ask).json()["id"] == body["id"]  # replayed
    reused = api.post("/v1/reservations", json={**ask, "gpus": 2})
    assert (reused.status_code, error_code(reused)) == (409, "CONFLICT")
    one = f"/v1/reservations/{body['id']}"
    assert api.get(one).json()["idempotencyKey"] == "sweep-1"
    assert [r["id"] for r in api.get("/v1/reservations").json()["items"]] == [body["id"]]
    host = body["nodeIds"][0]
    booked = api.as_(None).get(f"/v1/hosts/{host}/reservations")
    assert booked.status_code == 401
    cancelled = api.post(one + "/cancel").json()
    assert (cancelled["state"], cancelled["releaseReason"]) == ("released", "cancelled")
    assert api.get("/v1/reservations").json()["items"] == []
    released = api.get("/v1/reservations", params={"includeReleased": "true"}).json()
    assert len(released["items"]) == 1


def test_a_batch_is_all_or_nothing(acme: tuple[ApiClient, dict[str, Any]]) -> None:
    api, pool = acme
    ok = api.post(
        "/v1/reservations/batch",
        json={"pool": pool["id"], "requests": [{"gpus": 2, "duration": "1h"}] * 2},
    )
    assert ok.status_code == 201, ok.text
    assert [r["state"] for r in ok.json()["items"]] == ["placed", "placed"]
    bad = api.post(
        "/v1/reservations/batch",
        json={"pool": pool["id"], "requests": [{"gpus": 1, "duration": "1h"},
                                               {"gpus": 1, "duration": "soon"}]},
    )  # fmt: skip
    assert error_code(bad) == "INVALID_INPUT"
    assert len(api.get("/v1/reservations").json()["items"]) == 2


def test_capacity_preview_and_the_hosts_bookings(
    fleet: Fleet, acme: tuple[ApiClient, dict[str, Any]]
) -> None:
    api, pool = acme
    preview = api.post(
        "/v1/capacity/preview", json={"pool": pool["id"], "gpus": 4, "duration": "2h"}
    )
    assert preview.status_code == 200, preview.text
    assert preview.json()["fits"] is True
    made = api.post("/v1/reservations", json={"pool": pool["id"], "gpus": 4, "duration": "2h"})
    root = api.as_(token(fleet, "root", "agent"))
    host = root.get(f"/v1/reservations/{made.json()['id']}").json()["nodeIds"][0]  # root's view
    booked = root.get(f"/v1/hosts/{host}/reservations").json()
    assert [i["reservationId"] for i in booked["items"]] == [made.json()["id"]]
    assert len(booked["items"][0]["gpus"]) == 4
    refused = api.get(f"/v1/hosts/{host}/reservations")
    assert refused.status_code in (403, 404)
    bad = api.post("/v1/capacity/preview", json={"pool": pool["id"], "gpus": 1, "duration": "x"})
    assert error_code(bad) == "INVALID_INPUT"

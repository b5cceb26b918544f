"""The typed HTTP client: the API's JSON back, FleetErrors by code, a bounded event stream."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from bcfleet.client.fleet_client import FleetClient, error_from_response
from bcfleet.errors import ConflictError, ForbiddenError, NoCapacityError, NotFoundError
from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app
from bcfleet.http.server import BackgroundServer
from bcfleet.jobs.vps_hosts import run_vps_hosts
from tests.support.builders import inventory, token

PLACEMENT = {"bc.dev/cap.instance.placement": "true"}


@pytest.fixture
def client(fleet: Fleet) -> Iterator[FleetClient]:
    app = create_app(fleet, tally_seconds=0, poll_seconds=0.02)
    with BackgroundServer(app) as server, FleetClient(server.url, token(fleet, "root", "c")) as c:
        yield c


def test_the_client_walks_the_api(fleet: Fleet, client: FleetClient) -> None:
    assert client.healthz()["status"] == "ok"
    assert client.now() == fleet.now()
    client.create_tenant("acme")
    client.create_pool("vps-fra", "vps-host", overcommit={"vcpu": 2})
    client.offer_pool("vps-fra", "acme")
    client.create_flavor("vps-fra", "g1.small", vcpu=2, memoryGiB=4, diskGiB=40)
    assert client.update_flavor("vps-fra", "g1.small", vcpu=4, memoryGiB=4, diskGiB=40)["vcpu"] == 4
    assert [f["name"] for f in client.flavors("vps-fra")] == ["g1.small"]
    client.adopt_host("vps-fra", "fra-01", labels=PLACEMENT)
    client.report_inventory("fra-01", inventory(cpus=16))
    run_vps_hosts(fleet, fleet.now())
    made = client.create_instance("vps-fra", "g1.small")
    assert client.instance(made["id"])["state"] == "running"
    assert [s["id"] for s in client.host_specs("fra-01")] == [made["id"]]
    assert client.host_reservations("fra-01") == []  # no GPU booked on it
    assert [h["name"] for h in client.hosts()] == ["fra-01"]
    assert [p["name"] for p in client.pools()] == ["vps-fra"]
    assert "acme" in [t["id"] for t in client.tenants()]
    with pytest.raises(NotFoundError):
        client.host_reservations("no/such host")  # the name is quoted into the path, not split
    assert client.instance_action(made["id"], "stop")["state"] == "stopped"
    assert client.set_draining("fra-01", True)["state"] == "draining"
    assert client.set_quota("acme", "vps-fra", vcpu=4)["limits"] == {"vcpu": 4}
    assert client.events(limit=1)["items"][0]["type"] == "pool.created"
    streamed = list(client.stream_events(after=0, count=2, seconds=5))
    assert [e["seq"] for e in streamed] == [1, 2]
    assert "bcfleet_http_requests_total" in client.metrics()
    assert client.openapi()["openapi"] == "3.1.0"


def test_errors_arrive_as_their_fleet_errors(fleet: Fleet, client: FleetClient) -> None:
    client.create_tenant("acme")
    with pytest.raises(ConflictError):
        client.create_tenant("acme")
    with pytest.raises(NotFoundError):
        client.pool("nope")
    acme = FleetClient(client.base_url, token(fleet, "acme", "a"), tenant="root")
    with pytest.raises(ForbiddenError):
        acme.pools()
    acme.close()


def test_a_no_capacity_answer_keeps_its_size_and_retry_after() -> None:
    body = {
        "error": {
            "code": "NO_CAPACITY",
            "message": "No free instance of size Large.",
            "details": {"reason": "fleet_no_capacity", "instance_size": "large"},
        }
    }
    error = error_from_response(httpx.Response(503, json=body, headers={"Retry-After": "12"}))
    assert isinstance(error, NoCapacityError)
    assert (error.instance_size, error.retry_after_seconds) == ("large", 12)
    assert error_from_response(httpx.Response(502, text="bad gateway")).code == "INTERNAL"

"""Webhooks: signed deliveries to a receiver on 127.0.0.1, retries with capped backoff, dead
letters after the last try, and never another tenant's events.

The receiver listens on loopback, which the egress guard refuses unless the operator
allows it: every fleet here allows 127.0.0.0/8, as BCFLEET_EGRESS_ALLOW would."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from bcfleet.clock import FakeClock
from bcfleet.domain.egress import parse_ranges
from bcfleet.errors import InvalidInputError, NotFoundError
from bcfleet.fleet import Fleet
from bcfleet.jobs.webhooks import (
    BACKOFF_CAP_SECONDS,
    MAX_ATTEMPTS,
    backoff_seconds,
    run_webhooks,
    sign,
    verify_signature,
)
from tests.support.builders import OP, token

SECRET = "s3cret-s3cret-s3cret"
LOOPBACK = "127.0.0.0/8"


@pytest.fixture(autouse=True)
def _loopback_allowed(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BCFLEET_EGRESS_ALLOW", LOOPBACK)  # the CLI's settings
    for name in ("fleet", "any_fleet"):
        if name in request.fixturenames:
            handle: Fleet = request.getfixturevalue(name)
            handle.settings = replace(handle.settings, egress_allow=parse_ranges(LOOPBACK))


@dataclass
class Receiver:
    """A webhook receiver on 127.0.0.1 answering with the queued statuses (then 200)."""

    statuses: list[int] = field(default_factory=list)
    received: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    url: str = ""

    def answer(self, headers: dict[str, str], body: bytes) -> int:
        with self.lock:
            self.received.append({"headers": headers, "body": body})
            return self.statuses.pop(0) if self.statuses else 200

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(r["body"])["event"] for r in self.received]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            status = state.answer({k.lower(): v for k, v in self.headers.items()}, body)
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    yield state
    server.shutdown()
    server.server_close()
    thread.join(5)


def make_pool(fleet: Fleet, tenant: str, name: str) -> None:
    fleet.api.pools.create(OP, tenant_id=tenant, name=name, kind="vps-host")


def test_a_delivery_is_a_signed_post_of_the_event(fleet: Fleet, receiver: Receiver) -> None:
    fleet.api.tenants.create(OP, "acme")
    hook = fleet.api.webhooks.create(OP, tenant_id="acme", url=receiver.url, secret=SECRET)
    make_pool(fleet, "acme", "acme-pool")
    result = run_webhooks(fleet, fleet.now())
    assert result == {"queued": 1, "delivered": 1, "retried": 0, "dead": 0, "failed": 0}
    (request,) = receiver.received
    headers, body = request["headers"], request["body"]
    now = fleet.now().timestamp()
    assert verify_signature(SECRET, body, headers["bcfleet-signature"], now)
    assert not verify_signature("another-secret-entirely", body, headers["bcfleet-signature"], now)
    assert not verify_signature(SECRET, body + b" ", headers["bcfleet-signature"], now)
    assert not verify_signature(SECRET, body, headers["bcfleet-signature"], now + 3600)
    assert headers["bcfleet-event"] == "pool.created"
    sent = json.loads(body)
    assert sent["webhookId"] == hook["id"]
    assert sent["event"]["data"] == {"name": "acme-pool"}
    assert run_webhooks(fleet, fleet.now())["queued"] == 0  # each event is sent once


def test_the_signature_is_hmac_sha256_of_timestamp_and_body() -> None:
    import hashlib
    import hmac

    expected = hmac.new(b"key", b"1700000000.{}", hashlib.sha256).hexdigest()
    assert sign("key", b"{}", 1_700_000_000) == f"t=1700000000,v1={expected}"


def test_failures_are_retried_with_doubling_capped_backoff(
    any_fleet: Fleet, clock: FakeClock, receiver: Receiver
) -> None:
    any_fleet.api.tenants.create(OP, "acme")
    hook = any_fleet.api.webhooks.create(OP, tenant_id="acme", url=receiver.url)
    receiver.statuses = [500, 503]
    make_pool(any_fleet, "acme", "acme-pool")
    assert run_webhooks(any_fleet, clock.now())["retried"] == 1
    assert run_webhooks(any_fleet, clock.now())["retried"] == 0  # not due yet
    clock.advance(backoff_seconds(1))
    assert run_webhooks(any_fleet, clock.now())["retried"] == 1
    clock.advance(backoff_seconds(2))
    assert run_webhooks(any_fleet, clock.now())["delivered"] == 1
    (delivery,) = any_fleet.api.webhooks.deliveries(OP, hook["id"])["items"]
    assert (delivery["state"], delivery["attempts"], delivery["lastStatus"]) == (
        "delivered",
        3,
        200,
    )
    assert [backoff_seconds(n) for n in (1, 2, 3)] == [10.0, 20.0, 40.0]
    assert backoff_seconds(30) == BACKOFF_CAP_SECONDS


def test_after_the_last_try_a_delivery_is_a_dead_letter_that_can_be_requeued(
    any_fleet: Fleet, clock: FakeClock, receiver: Receiver
) -> None:
    any_fleet.api.tenants.create(OP, "acme")
    hook = any_fleet.api.webhooks.create(OP, tenant_id="acme", url=receiver.url)
    receiver.statuses = [500] * MAX_ATTEMPTS
    make_pool(any_fleet, "acme", "acme-pool")
    outcomes = []
    for _ in range(MAX_ATTEMPTS + 2):  # bounded: the last two rounds find nothing due
        outcomes.append(run_webhooks(any_fleet, clock.now()))
        clock.advance(BACKOFF_CAP_SECONDS)
    assert sum(o["dead"] for o in outcomes) == 1
    assert len(receiver.received) == MAX_ATTEMPTS
    (dead,) = any_fleet.api.webhooks.deliveries(OP, hook["id"], state="dead")["items"]
    assert dead["attempts"] == MAX_ATTEMPTS
    assert dead["lastError"] == "HTTP 500"
    requeued = any_fleet.api.webhooks.redeliver(OP, hook["id"], dead["id"])
    assert (requeued["state"], requeued["attempts"]) == ("pending", 0)
    assert run_webhooks(any_fleet, clock.now())["delivered"] == 1


def test_an_unreachable_receiver_is_retried_too(fleet: Fleet, clock: FakeClock) -> None:
    fleet.api.tenants.create(OP, "acme")
    hook = fleet.api.webhooks.create(OP, tenant_id="acme", url="http://127.0.0.1:9/nothing")
    make_pool(fleet, "acme", "acme-pool")
    assert run_webhooks(fleet, clock.now())["retried"] == 1
    (delivery,) = fleet.api.webhooks.deliveries(OP, hook["id"])["items"]
    assert delivery["lastStatus"] is None and delivery["lastError"].startswith("no answer")


def test_a_webhook_never_gets_another_tenants_events(any_fleet: Fleet, receiver: Receiver) -> None:
    for tenant in ("acme", "globex"):
        any_fleet.api.tenants.create(OP, tenant)
    acme = token(any_fleet, "acme", "alice")
    any_fleet.api.webhooks.create(acme, url=receiver.url)
    make_pool(any_fleet, "globex", "globex-pool")
    make_pool(any_fleet, "root", "root-pool")
    make_pool(any_fleet, "acme", "acme-pool")
    run_webhooks(any_fleet, any_fleet.now())
    assert [e["data"]["name"] for e in receiver.events()] == ["acme-pool"]


def test_event_types_filter_with_wildcards(fleet: Fleet, receiver: Receiver) -> None:
    fleet.api.tenants.create(OP, "acme")
    fleet.api.webhooks.create(OP, tenant_id="acme", url=receiver.url, event_types=["flavor.*"])
    make_pool(fleet, "acme", "acme-pool")
    fleet.api.flavors.create(
        OP, tenant_id="acme", pool_id="acme-pool", name="g1", vcpu=1, memory_gib=1, disk_gib=1
    )
    run_webhooks(fleet, fleet.now())
    assert [e["type"] for e in receiver.events()] == ["flavor.created"]


def test_only_events_after_registration_are_sent(fleet: Fleet, receiver: Receiver) -> None:
    fleet.api.tenants.create(OP, "acme")
    make_pool(fleet, "acme", "old-pool")
    fleet.api.webhooks.create(OP, tenant_id="acme", url=receiver.url)
    make_pool(fleet, "acme", "new-pool")
    run_webhooks(fleet, fleet.now())
    assert [e["data"]["name"] for e in receiver.events()] == ["new-pool"]


def test_a_tenant_cannot_see_or_touch_another_tenants_webhooks(fleet: Fleet) -> None:
    for tenant in ("acme", "globex"):
        fleet.api.tenants.create(OP, tenant)
    acme, globex = token(fleet, "acme", "alice"), token(fleet, "globex", "eve")
    hook = fleet.api.webhooks.create(acme, url="https://example.test/hook")
    assert "secret" in hook and "secret" not in fleet.api.webhooks.show(acme, hook["id"])
    assert fleet.api.webhooks.list(globex)["items"] == []
    for call in (
        lambda: fleet.api.webhooks.show(globex, hook["id"]),
        lambda: fleet.api.webhooks.delete(globex, hook["id"]),
        lambda: fleet.api.webhooks.deliveries(globex, hook["id"]),
        lambda: fleet.api.webhooks.redeliver(globex, hook["id"], 1),
    ):
        with pytest.raises(NotFoundError):
            call()
    assert fleet.api.webhooks.delete(acme, hook["id"])["deleted"] is True


@pytest.mark.parametrize(
    ("url", "types", "secret"),
    [
        pytest.param("ftp://x/y", [], None, id="not-http"),
        pytest.param("http:///nohost", [], None, id="no-host"),
        pytest.param("https://x/" + "a" * 3000, [], None, id="too-long"),
        pytest.param("https://x/", "pool.created", None, id="types-not-a-list"),
        pytest.param("https://x/", [], "short", id="short-secret"),
    ],
)
def test_bad_webhooks_are_refused(fleet: Fleet, url: str, types: Any, secret: str | None) -> None:
    with pytest.raises(InvalidInputError):
        fleet.api.webhooks.create(OP, url=url, event_types=types, secret=secret)


def test_webhooks_over_http_and_the_cli(fleet: Fleet, cli: Any, receiver: Receiver) -> None:
    made = cli("webhooks", "create", "--url", receiver.url, "--event", "pool.*", "--json")
    assert made.exit_code == 0, made.stderr
    hook = made.json()
    listed = cli("webhooks", "list", "--json").json()
    assert [h["id"] for h in listed["items"]] == [hook["id"]]
    cli("pools", "create", "--tenant", "root", "--name", "p1", "--kind", "vps-host")
    delivered = cli("webhooks", "deliver", "--json")
    assert delivered.json() == {"queued": 1, "delivered": 1, "retried": 0, "dead": 0, "failed": 0}
    assert [e["type"] for e in receiver.events()] == ["pool.created"]
    assert cli("webhooks", "deliveries", hook["id"], "--state", "dead").exit_code == 0
    assert cli("webhooks", "delete", hook["id"]).exit_code == 0

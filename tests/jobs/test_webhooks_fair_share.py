"""Webhook deliveries take a fair share: a tenant whose receiver never answers delays no other
tenant's delivery beyond the round it is due in, however many of its own keep coming.

The dead receiver is a socket on 127.0.0.1 that accepts and never replies; the job runs with
short request timeouts and time budgets, and the fleet's clock moves between rounds so the
first tenant's retries fall due again."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from bcfleet.clock import FakeClock
from bcfleet.domain.delivery_share import Share
from bcfleet.fleet import Fleet
from bcfleet.jobs.webhooks import run_webhooks
from tests.support.builders import OP
from tests.support.security import Capture, allow_egress, capturing_server

QUICK = {"request_timeout": 0.1, "time_budget": 0.5}
"""A try at the dead receiver costs 0.1 s; no send starts 0.5 s into a round's sending."""


@pytest.fixture
def silent_receiver() -> Iterator[str]:
    """A URL on 127.0.0.1 whose server accepts every connection and never answers."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=64)
    listener.settimeout(0.05)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except TimeoutError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
    stop.set()
    thread.join(5)
    for connection in held:
        connection.close()
    listener.close()


@pytest.fixture
def receiver(any_fleet: Fleet) -> Iterator[Capture]:
    allow_egress(any_fleet)
    with capturing_server() as capture:
        yield capture


def delivered_names(receiver: Capture) -> list[str]:
    import json

    with receiver.lock:
        return [json.loads(r["body"])["event"]["data"]["name"] for r in receiver.requests]


def pool(fleet: Fleet, tenant: str, name: str) -> None:
    fleet.api.pools.create(OP, tenant_id=tenant, name=name, kind="vps-host")


def test_twenty_dead_webhooks_of_acme_do_not_delay_globex_beyond_its_round(
    any_fleet: Fleet, clock: FakeClock, receiver: Capture, silent_receiver: str
) -> None:
    for tenant in ("acme", "globex"):
        any_fleet.api.tenants.create(OP, tenant)
    for _ in range(20):
        any_fleet.api.webhooks.create(OP, tenant_id="acme", url=silent_receiver)
    any_fleet.api.webhooks.create(OP, tenant_id="globex", url=receiver.url + "/hook")
    pool(any_fleet, "acme", "acme-0")  # queued first: twenty deliveries ahead of globex's
    pool(any_fleet, "globex", "globex-0")

    first = run_webhooks(any_fleet, clock.now(), **QUICK)

    assert delivered_names(receiver) == ["globex-0"]
    assert first["queued"] == 21 and first["delivered"] == 1
    assert 1 <= first["retried"] < 20  # acme's dead receiver: tries until the budget is spent

    # A steady stream of acme's events, its retries falling due again every round.
    for round_ in range(1, 5):
        clock.advance(3600)
        pool(any_fleet, "acme", f"acme-{round_}a")
        pool(any_fleet, "acme", f"acme-{round_}b")
        pool(any_fleet, "globex", f"globex-{round_}")
        result = run_webhooks(any_fleet, clock.now(), **QUICK)
        assert delivered_names(receiver)[-1] == f"globex-{round_}"
        assert result["delivered"] == 1
    assert delivered_names(receiver) == [f"globex-{n}" for n in range(5)]


@pytest.fixture
def counting_receiver(any_fleet: Fleet) -> Iterator[dict[str, Any]]:
    """A receiver on 127.0.0.1 that answers 200 after a short while, counting requests in flight."""
    allow_egress(any_fleet)
    state: dict[str, Any] = {"now": 0, "most": 0, "seen": 0, "lock": threading.Lock()}

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
            self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with state["lock"]:
                state["now"] += 1
                state["seen"] += 1
                state["most"] = max(state["most"], state["now"])
            time.sleep(0.02)
            with state["lock"]:
                state["now"] -= 1
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state["url"] = f"http://127.0.0.1:{server.server_address[1]}/hook"
    yield state
    server.shutdown()
    server.server_close()
    thread.join(5)


def test_one_delivery_in_flight_per_destination_and_a_budget_per_tenant(
    any_fleet: Fleet, clock: FakeClock, counting_receiver: dict[str, Any]
) -> None:
    any_fleet.api.tenants.create(OP, "acme")
    for _ in range(3):
        any_fleet.api.webhooks.create(OP, tenant_id="acme", url=counting_receiver["url"])
    for n in range(2):
        pool(any_fleet, "acme", f"acme-{n}")  # six deliveries to one destination

    share = Share(per_tenant=4, total=200)
    first = run_webhooks(any_fleet, clock.now(), share=share, lanes=8)
    second = run_webhooks(any_fleet, clock.now(), share=share, lanes=8)

    assert (first["queued"], first["delivered"], second["delivered"]) == (6, 4, 2)
    assert counting_receiver["seen"] == 6
    assert counting_receiver["most"] == 1

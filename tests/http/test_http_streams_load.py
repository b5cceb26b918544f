"""Long-lived requests never starve the others: a bound per tenant and one in all, answered 429 at
once; a slot freed as soon as its client goes; no tenant's stream waits for a thread; and
ordinary calls keep their latency while 100 streaming deploys are open."""

from __future__ import annotations

import json
import statistics
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest

from bcfleet.clock import SystemClock
from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app
from bcfleet.http.server import BackgroundServer
from bcfleet.ids import IdFactory
from bcfleet.settings import FleetSettings
from tests.support.compute import waiting_services
from tests.support.waiting import holds_within, wait_until

TENANTS = ("t1", "t2", "t3", "t4", "t5")
PER_TENANT = 20


@pytest.fixture
def live_fleet(tmp_path: Path) -> Iterator[Fleet]:
    """A fleet on the real clock: a streaming deploy's waits take real time here."""
    url = f"sqlite:///{tmp_path / 'fleet.db'}"
    fleet = Fleet.open(
        url, clock=SystemClock(), settings=FleetSettings(db_url=url), ids=IdFactory()
    )
    yield fleet
    fleet.close()


def open_stream(
    http: httpx.Client, bearer: str, service: str, opened: list[int], stop: threading.Event
) -> None:
    path = f"/v1/services/{service}/deploy/stream?pollSeconds=1&timeoutSeconds=60"
    with http.stream("POST", path, headers={"Authorization": f"Bearer {bearer}"}) as response:
        opened.append(response.status_code)
        lines = response.iter_lines()
        for _ in lines:
            if stop.is_set():
                return


def ordinary_latencies(http: httpx.Client, bearer: str, count: int = 20) -> list[float]:
    took = []
    for _ in range(count):
        started = time.perf_counter()
        assert (
            http.get("/v1/services", headers={"Authorization": f"Bearer {bearer}"}).status_code
            == 200
        )
        took.append(time.perf_counter() - started)
    return took


@pytest.mark.slow
def test_ordinary_calls_keep_their_latency_while_100_streams_are_open(live_fleet: Fleet) -> None:
    accounts = {tenant: waiting_services(live_fleet, tenant, PER_TENANT) for tenant in TENANTS}
    app = create_app(live_fleet, tally_seconds=0, streams_per_tenant=PER_TENANT)
    stop = threading.Event()
    opened: list[int] = []
    limits = httpx.Limits(max_connections=200)
    with (
        BackgroundServer(app) as server,
        httpx.Client(base_url=server.url, timeout=30) as http,
        httpx.Client(base_url=server.url, timeout=60, limits=limits) as streams,
    ):
        bearer = accounts["t1"][0]
        before = ordinary_latencies(http, bearer)
        threads = [
            threading.Thread(target=open_stream, args=(streams, admin, service, opened, stop))
            for admin, services in accounts.values()
            for service in services
        ]
        for thread in threads:
            thread.start()
        holds_within(lambda: len(opened) >= len(threads), timeout=30)
        assert opened.count(200) == 100
        during = ordinary_latencies(http, bearer)
        stop.set()
        for thread in threads:
            thread.join(timeout=30)
    # Before the streams had threads of their own, 45 of them made such calls wait 52-55 s.
    assert max(during) < 5.0, (statistics.median(before), max(during))


def test_one_stream_past_the_tenants_bound_is_429_with_retry_after(live_fleet: Fleet) -> None:
    admin, services = waiting_services(live_fleet, "t1", 3)
    other_admin, other_services = waiting_services(live_fleet, "t2", 1)
    app = create_app(live_fleet, tally_seconds=0, streams_per_tenant=2)
    stop = threading.Event()
    opened: list[int] = []
    with BackgroundServer(app) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        threads = [
            threading.Thread(target=open_stream, args=(http, admin, s, opened, stop))
            for s in services[:2]
        ]
        for thread in threads:
            thread.start()
        wait_until(lambda: len(opened) >= 2, what="two streams open")
        refused = http.post(
            f"/v1/services/{services[2]}/deploy/stream",
            headers={"Authorization": f"Bearer {admin}"},
        )
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "TOO_MANY_REQUESTS"
        assert int(refused.headers["retry-after"]) > 0
        # another tenant is not held back by the first one's streams
        other = threading.Thread(
            target=open_stream, args=(http, other_admin, other_services[0], opened, stop)
        )
        other.start()
        wait_until(lambda: len(opened) >= 3, what="the other tenant's stream")
        assert opened == [200, 200, 200]
        stop.set()
        for thread in [*threads, other]:
            thread.join(timeout=30)
        # the slots come back as soon as the server sees the clients gone
        slots = app.state.served.streams
        holds_within(lambda: not slots.open_count("t1"), timeout=20)
        assert slots.open_count("t1") == 0


# ----- a bound in all, slots freed when clients go, no tenant waits for a thread -------------


def deploy_path(service: str, poll: int = 60) -> str:
    """A streaming deploy that sleeps `poll` seconds between its checks."""
    return f"/v1/services/{service}/deploy/stream?pollSeconds={poll}&timeoutSeconds=900"


def first_lines(
    http: httpx.Client, stack: ExitStack, bearer: str, services: list[str]
) -> list[int]:
    """Open a streaming deploy of each service, kept open on the stack; each one's status, and its
    first line read when it is 200."""
    statuses = []
    for service in services:
        response = stack.enter_context(
            http.stream("POST", deploy_path(service), headers={"Authorization": f"Bearer {bearer}"})
        )
        statuses.append(response.status_code)
        if response.status_code == 200:
            lines = response.iter_lines()  # dropped, it would close the connection
            stack.callback(lines.close)
            assert json.loads(next(lines))["phase"] == "no-capacity"
    return statuses


MANY = httpx.Limits(max_connections=400, max_keepalive_connections=0)


def test_one_stream_past_the_servers_bound_is_429_at_once(live_fleet: Fleet) -> None:
    admin, services = waiting_services(live_fleet, "t1", 2)
    other_admin, other_services = waiting_services(live_fleet, "t2", 2)
    app = create_app(live_fleet, tally_seconds=0, streams_per_tenant=2, streams_total=3)
    with (
        BackgroundServer(app) as server,
        httpx.Client(base_url=server.url, timeout=10, limits=MANY) as http,
        ExitStack() as stack,
    ):
        assert first_lines(http, stack, admin, services) == [200, 200]
        assert first_lines(http, stack, other_admin, other_services[:1]) == [200]
        refused = http.post(
            deploy_path(other_services[1]), headers={"Authorization": f"Bearer {other_admin}"}
        )  # within t2's own bound, past the server's
        assert refused.status_code == 429
        assert refused.json()["error"]["code"] == "TOO_MANY_REQUESTS"
        assert refused.json()["error"]["details"]["scope"] == "server"
        assert int(refused.headers["retry-after"]) > 0
        assert app.state.served.streams.open_count() == 3


def test_dropped_streams_free_their_slots_at_once(live_fleet: Fleet) -> None:
    admin, services = waiting_services(live_fleet, "t1", 2 * PER_TENANT)
    dropped, reopened = services[:PER_TENANT], services[PER_TENANT:]
    app = create_app(live_fleet, tally_seconds=0, streams_per_tenant=PER_TENANT)
    slots = app.state.served.streams
    with (
        BackgroundServer(app) as server,
        httpx.Client(base_url=server.url, timeout=10, limits=MANY) as http,
    ):
        with ExitStack() as stack:  # twenty streams, each asleep for a minute between checks
            assert first_lines(http, stack, admin, dropped) == [200] * PER_TENANT
            wait_until(lambda: slots.open_count("t1") == PER_TENANT, what="twenty open")
        # the clients went: the slots are free within two seconds, not when the sleeps end
        wait_until(lambda: slots.open_count() == 0, timeout=2, what="the slots freed")
        with ExitStack() as stack:
            assert first_lines(http, stack, admin, reopened) == [200] * PER_TENANT


@pytest.mark.slow
def test_a_tenant_gets_its_first_line_at_once_while_others_hold_280_streams(
    live_fleet: Fleet,
) -> None:
    tenants = [f"t{i}" for i in range(1, 16)]
    accounts = {tenant: waiting_services(live_fleet, tenant, PER_TENANT) for tenant in tenants}
    app = create_app(live_fleet, tally_seconds=0, streams_per_tenant=PER_TENANT, streams_total=300)
    with (
        BackgroundServer(app) as server,
        httpx.Client(base_url=server.url, timeout=10, limits=MANY) as http,
        ExitStack() as stack,
    ):
        for tenant in tenants[:-1]:  # 14 x 20 = 280, more than the 256 threads streams once had
            admin, services = accounts[tenant]
            assert first_lines(http, stack, admin, services) == [200] * PER_TENANT
        admin, services = accounts[tenants[-1]]
        started = time.perf_counter()
        assert first_lines(http, stack, admin, services[:1]) == [200]
        took = time.perf_counter() - started
    # Before streams had as many threads as their bound, such a stream waited 42 s.
    assert took < 2.0, took

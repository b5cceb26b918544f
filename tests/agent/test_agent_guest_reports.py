"""The agent sends what its Hypervisor holds beyond states: each guest's conditions and
balloon and the host's health, to a served fleet over HTTP, only when they change."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from bcfleet.agent.remote import AgentConnection
from bcfleet.agent.runner import Agent, AgentOptions, simulated_inventory
from bcfleet.agent.seam import Hypervisor
from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app
from bcfleet.http.server import BackgroundServer
from bcfleet.jobs.vps_hosts import run_vps_hosts
from tests.agent.test_agent_hypervisor import NODE, needs_libvirt
from tests.support.builders import OP, hosted_pool
from tests.support.http import PLACEMENT

REPORTS = "/v1/hosts/fra-01/guests/report"
REFUSED = "refused: XML error: invalid value for attribute 'mode'"


@dataclass
class FakeHypervisor:
    """Every guest runs; problems and balloons are what the test sets."""

    held: dict[str, str] = field(default_factory=dict)
    memory: dict[str, int] = field(default_factory=dict)
    ids: list[str] = field(default_factory=list)

    def converge(self, specs: Sequence[Mapping[str, Any]], now: float) -> list[tuple[str, str]]:
        self.ids = [str(spec["id"]) for spec in specs]
        return []

    def problems(self) -> dict[str, str]:
        return dict(self.held)

    def balloons(self) -> dict[str, int]:
        return dict(self.memory)

    def pause(self, seconds: float, sleep: Callable[[float], None]) -> None:
        sleep(seconds)

    def close(self) -> None:
        pass


@dataclass
class Counting(httpx.BaseTransport):
    """The real transport, counting the requests sent to each path."""

    inner: httpx.BaseTransport = field(default_factory=httpx.HTTPTransport)
    sent: list[str] = field(default_factory=list)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request.url.path)
        return self.inner.handle_request(request)


@pytest.fixture
def server(fleet: Fleet) -> Iterator[BackgroundServer]:
    with BackgroundServer(create_app(fleet, tally_seconds=0)) as running:
        yield running


def agent_on_fra_01(
    fleet: Fleet, server: BackgroundServer, hypervisor: Hypervisor | None, **options: Any
) -> tuple[Agent, Counting, dict[str, Any]]:
    """fra-01 with one acme guest, and its agent with a token bound to it."""
    pool = hosted_pool(fleet)
    fleet.api.hosts.adopt(OP, tenant_id="root", pool=pool["id"], name="fra-01", labels=PLACEMENT)
    fleet.api.flavors.create(OP, tenant_id="root", pool_id=pool["id"], name="g1.small", vcpu=2,
                             memory_gib=4, disk_gib=40)  # fmt: skip
    bound = fleet.api.iam.create_token(
        OP, tenant_id="root", name="fra-01-agent", role="agent", host="fra-01"
    )["token"]
    counting = Counting()
    connection = AgentConnection(server.url, bound, transport=counting)
    opts = AgentOptions("fra-01", inventory=simulated_inventory("fra-01"), **options)
    agent = Agent(connection, opts, hypervisor=hypervisor)
    agent.round()  # the inventory, so the guest can be placed
    run_vps_hosts(fleet, fleet.now())
    made = fleet.api.instances.create(OP, tenant_id="acme", pool_id=pool["id"], flavor="g1.small")
    return agent, counting, made


def test_the_agent_sends_its_hypervisors_conditions_and_balloons_when_they_change(
    fleet: Fleet, server: BackgroundServer
) -> None:
    fake = FakeHypervisor()
    agent, counting, made = agent_on_fra_01(fleet, server, fake)
    try:
        agent.round()
        (guest,) = fake.ids
        assert fleet.api.instances.show(OP, made["id"]).get("agentConditions") is None

        fake.held = {guest: REFUSED, "host": "libvirt unreachable, retrying in 2 s: gone"}
        fake.memory = {guest: 3 << 30}
        counting.sent.clear()
        agent.round()
        agent.round()  # nothing changed: nothing sent
        assert counting.sent.count(REPORTS) == 1
        shown = fleet.api.instances.show(OP, made["id"])
        (condition,) = shown["agentConditions"]
        assert (condition["type"], condition["reason"]) == ("HypervisorRefused", "LibvirtError")
        assert condition["message"] == REFUSED.removeprefix("refused: ")
        assert shown["balloonBytes"] == 3 << 30
        host = fleet.api.hosts.show(OP, host="fra-01")
        assert (host["status"], host["health"]["message"]) == ("ready, degraded", fake.held["host"])

        fake.held, fake.memory = {}, {}
        agent.round()
        shown = fleet.api.instances.show(OP, made["id"])
        assert "agentConditions" not in shown and "balloonBytes" not in shown
        assert fleet.api.hosts.show(OP, host="fra-01")["status"] == "ready"
    finally:
        agent.connection.close()


def test_the_libvirt_driver_reports_each_running_guests_balloon(
    fleet: Fleet, server: BackgroundServer, tmp_path: Path
) -> None:
    needs_libvirt()
    node = tmp_path / "node.xml"
    node.write_text(NODE)
    agent, _counting, made = agent_on_fra_01(
        fleet, server, None, hypervisor_uri=f"test://{node}", interval=0.01
    )
    try:
        agent.round()
        shown = fleet.api.instances.show(OP, made["id"])
        assert shown["balloonBytes"] == 4 << 30  # the flavor's 4 GiB, no balloon inflated
        assert "agentConditions" not in shown
        fleet.api.instances.stop(OP, made["id"])
        for _ in range(3):  # ACPI shutdown; the test driver stops at once
            agent.round()
        assert "balloonBytes" not in fleet.api.instances.show(OP, made["id"])
    finally:
        assert agent.hypervisor is not None
        agent.hypervisor.close()
        agent.connection.close()

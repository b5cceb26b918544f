"""The host agent: this machine's inventory on the CLI, the agent loop over HTTP, simulated agents."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bcfleet.agent.hypervisor import SimulatedHypervisor
from bcfleet.agent.local import simulate_round
from bcfleet.agent.remote import AgentConnection
from bcfleet.agent.runner import Agent, AgentOptions, simulated_inventory, write_domains
from bcfleet.agent.simulate import boot_instances
from bcfleet.clock import FakeClock
from bcfleet.errors import ForbiddenError, NotFoundError, UnauthenticatedError
from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app
from bcfleet.http.server import BackgroundServer
from bcfleet.jobs.spares import run_spares
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.schemas import load_schema
from bcfleet.schemas.inventory import inventory_problems
from tests.support.builders import OP, flavor, hosted_pool, token
from tests.support.compute import capacity_host, serverless_tenant
from tests.support.fleet import run_cli

PLACEMENT = {"bc.dev/cap.instance.placement": "true"}


def test_fleet_agent_inventory_is_this_machine_and_valid(cli: Any) -> None:
    result = cli("agent", "inventory")
    assert result.exit_code == 0, result.stderr
    document = result.json()
    assert inventory_problems(document, load_schema("inventory")) == []
    nproc = subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout
    online = subprocess.run(
        ["getconf", "_NPROCESSORS_ONLN"], capture_output=True, text=True, check=True
    ).stdout
    if int(nproc) != int(online):
        pytest.skip("this process may use fewer CPUs than are online (CPU affinity)")
    assert len(document["cpus"]) == int(nproc)
    meminfo = Path("/proc/meminfo").read_text()
    kib = int(re.search(r"MemTotal:\s+(\d+) kB", meminfo).group(1))  # type: ignore[union-attr]
    assert document["memoryGiB"] == round(kib * 1024 / 1024**3, 3)


@pytest.fixture
def server(fleet: Fleet) -> Iterator[BackgroundServer]:
    with BackgroundServer(create_app(fleet, tally_seconds=0)) as running:
        yield running


def placed_instance(fleet: Fleet, host_name: str = "fra-01") -> dict[str, Any]:
    pool = hosted_pool(fleet)
    fleet.api.hosts.adopt(OP, tenant_id="root", pool=pool["id"], name=host_name, labels=PLACEMENT)
    return pool


def test_an_agent_reports_its_inventory_and_pulls_its_specs(
    fleet: Fleet, server: BackgroundServer
) -> None:
    pool = placed_instance(fleet)
    agent_token = token(fleet, "root", "fra-01-agent")
    connection = AgentConnection(server.url, agent_token)
    agent = Agent(connection, AgentOptions("fra-01", simulate=True, boot_seconds=0, rounds=1))
    agent.run()
    host = fleet.api.hosts.show(OP, host="fra-01")
    assert host["inventory"]["cpus"] == simulated_inventory("fra-01")["cpus"]
    run_vps_hosts(fleet, fleet.now())
    flavor(fleet, pool["id"])
    made = fleet.api.instances.create(OP, tenant_id="acme", pool_id=pool["id"], flavor="g1.small")
    agent.round()
    assert agent.report.specs == 1
    assert agent.hypervisor is not None
    assert agent.hypervisor.guests[made["id"]].state in ("booting", "running")
    connection.close()


def test_an_agent_with_a_bad_token_or_host_stops_with_the_servers_error(
    fleet: Fleet, server: BackgroundServer
) -> None:
    placed_instance(fleet)
    with pytest.raises(UnauthenticatedError):
        Agent(AgentConnection(server.url, "bcf_nope"), AgentOptions("fra-01", rounds=1)).run()
    good = token(fleet, "root", "agent")
    with pytest.raises(NotFoundError):
        Agent(AgentConnection(server.url, good), AgentOptions("nowhere", simulate=True)).round()


def test_a_simulated_agent_boots_its_instances_and_reports_them_ready(
    fleet: Fleet, server: BackgroundServer
) -> None:
    from bcfleet.jobs.vps_hosts import run_vps_hosts

    pool = placed_instance(fleet)
    connection = AgentConnection(server.url, token(fleet, "root", "fra-01-agent"))
    Agent(connection, AgentOptions("fra-01", simulate=True, boot_seconds=0, rounds=1)).run()
    run_vps_hosts(fleet, fleet.now())
    fleet.api.flavors.create(OP, tenant_id="root", pool_id=pool["id"], name="g1.small", vcpu=2,
                             memory_gib=4, disk_gib=40)  # fmt: skip
    made = fleet.api.instances.create(OP, tenant_id="acme", pool_id=pool["id"], flavor="g1.small")
    assert made["state"] == "running" and "readyAt" not in made
    Agent(connection, AgentOptions("fra-01", simulate=True, boot_seconds=0, rounds=2)).run()
    assert connection.states_supported is True
    assert fleet.api.instances.show(OP, made["id"])["readyAt"] is not None


@pytest.mark.parametrize(
    ("steps", "expected"),
    [
        pytest.param(
            [("running", 0), ("running", 5), ("running", 10)],
            [[], [], [("i", "running"), ("i", "ready")]],
            id="boots-after-the-delay",
        ),
        pytest.param(
            [("running", 0), ("running", 10), ("stopped", 11), ("running", 12), ("running", 22)],
            [[], [("i", "running"), ("i", "ready")], [("i", "stopped")], [],
             [("i", "running"), ("i", "ready")]],
            id="stops-and-boots-again",
        ),
        pytest.param(
            [("stopped", 0), ("stopped", 1)], [[("i", "stopped")], []], id="stopped-once"
        ),
    ],
)  # fmt: skip
def test_the_simulated_hypervisor_acts_out_boots_and_stops(
    steps: list[tuple[str, float]], expected: list[list[tuple[str, str]]]
) -> None:
    hypervisor = SimulatedHypervisor(boot_seconds=10)
    changes = [hypervisor.apply([{"id": "i", "state": s}], now) for s, now in steps]
    assert changes == expected
    hypervisor.apply([], 100)
    assert hypervisor.guests == {}


def test_fleet_agent_run_once_over_http(fleet: Fleet, server: BackgroundServer) -> None:
    placed_instance(fleet)
    agent_token = token(fleet, "root", "agent")
    url = fleet.settings.db_url
    result = run_cli(
        "agent", "run", "--server", server.url, "--token", agent_token, "--host", "fra-01",
        "--simulate", "--once", "--json", db=url,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.json()["inventoriesReported"] == 1  # type: ignore[index]
    assert fleet.api.hosts.show(OP, host="fra-01")["inventoryReportedAt"] is not None
    refused = run_cli("agent", "run", "--server", server.url, "--once", db=url)
    assert refused.exit_code == 1


def test_fleet_agent_simulate_reports_every_host_without_an_inventory(cli: Any) -> None:
    assert (
        cli("pools", "create", "--tenant", "root", "--name", "p", "--kind", "vps-host").exit_code
        == 0
    )
    for name in ("h1", "h2"):
        assert cli("hosts", "adopt", "--pool", "p", "--name", name).exit_code == 0
    result = cli("agent", "simulate", "--once", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json()["inventoriesReported"] == 2
    assert cli("agent", "simulate", "--once", "--json").json()["inventoriesReported"] == 0


def test_without_a_hypervisor_the_agent_writes_libvirt_domains(tmp_path: Path) -> None:
    spec = {
        "id": "ins_01jz3k4m5n6p7q8r9s0t1v2w3x",
        "name": "vm",
        "state": "running",
        "shape": {"vcpu": 2, "memoryGiB": 4, "diskGiB": 40, "gpus": 0},
        "placement": {"cpus": None, "cpuset": [2, 3], "mems": None, "hugepageSizeBytes": None},
        "balloon": {"enabled": True, "floorPercent": 50},
        "gpus": [],
    }
    (tmp_path / "ins_gone.xml").write_text("<domain/>")
    written = write_domains(tmp_path, [spec])
    assert [p.name for p in written] == ["ins_01jz3k4m5n6p7q8r9s0t1v2w3x.xml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ins_01jz3k4m5n6p7q8r9s0t1v2w3x.xml"]
    assert "<vcpu" in written[0].read_text()


def test_the_simulated_agents_boot_placed_instances_after_the_delay(
    fleet: Fleet, clock: FakeClock
) -> None:
    serverless_tenant(fleet, spares={"large": 1})
    run_spares(fleet, clock.now())
    assert simulate_round(fleet, clock.now(), OP, boot_seconds=20)["booted"] == 0
    clock.advance(20)
    assert simulate_round(fleet, clock.now(), OP, boot_seconds=20)["booted"] == 1
    (spare,) = fleet.api.instances.list(OP, tenant_id="acme")["items"]
    assert "readyAt" in spare


def test_the_simulated_agents_ready_is_the_apis_authorized_and_announced(
    fleet: Fleet, clock: FakeClock
) -> None:
    """The agent token of the spare's host reports it ready through instances.report_state:
    the instance.ready event is emitted, and a token of another host is refused."""
    serverless_tenant(fleet, spares={"large": 1})
    capacity_host(fleet, "vps-fra", "fra-02")
    run_spares(fleet, clock.now())
    (spare,) = fleet.api.instances.list(OP)["items"]  # root's view: the real host id
    names = {h["id"]: h["name"] for h in fleet.api.hosts.list(OP)["items"]}
    (other,) = set(names.values()) - {names[spare["nodeId"]]}
    elsewhere = agent_token(fleet, other)
    clock.advance(20)
    with pytest.raises(ForbiddenError):
        boot_instances(fleet, elsewhere, clock.now(), boot_seconds=20, host_ids={spare["nodeId"]})
    assert "readyAt" not in fleet.api.instances.show(OP, spare["id"])
    assert fleet.api.events.list(OP, types=["instance.ready"])["items"] == []
    own = agent_token(fleet, names[spare["nodeId"]])
    assert boot_instances(fleet, own, clock.now(), boot_seconds=20, host_ids={spare["nodeId"]}) == 1
    (ready,) = fleet.api.events.list(OP, types=["instance.ready"])["items"]
    assert ready["subjectId"] == spare["id"]
    assert ready["data"]["nodeId"] == spare["nodeId"]
    assert fleet.api.instances.show(OP, spare["id"])["readyAt"] == ready["at"]


def agent_token(fleet: Fleet, host: str) -> str:
    """The agent-role token bound to one host, as `fleet iam tokens create --role agent --host`."""
    made = fleet.api.iam.create_token(
        OP, tenant_id="root", name=f"{host}-agent", role="agent", host=host
    )
    return str(made["token"])


def test_the_readmes_agent_token_runs_its_host_and_nothing_else(
    fleet: Fleet, server: BackgroundServer
) -> None:
    """`fleet iam tokens create --tenant root --name fra-01-agent --role agent --host fra-01`,
    then `fleet agent run … --host fra-01 --simulate --once` with that token."""
    pool = placed_instance(fleet)
    fleet.api.hosts.adopt(OP, tenant_id="root", pool=pool["id"], name="fra-02", labels=PLACEMENT)
    url = fleet.settings.db_url
    made = run_cli("iam", "tokens", "create", "--tenant", "root", "--name", "fra-01-agent",
                   "--role", "agent", "--host", "fra-01", "--json", db=url)  # fmt: skip
    assert made.exit_code == 0, made.stderr
    agent_token = str(made.json()["token"])  # type: ignore[index]
    run = ("agent", "run", "--server", server.url, "--token", agent_token, "--simulate")
    result = run_cli(*run, "--host", "fra-01", "--once", "--json", db=url)
    assert result.exit_code == 0, result.stderr
    assert result.json()["inventoriesReported"] == 1  # type: ignore[index]
    run_vps_hosts(fleet, fleet.now())
    flavor(fleet, pool["id"])
    made_instance = fleet.api.instances.create(OP, tenant_id="acme", pool_id=pool["id"],
                                               flavor="g1.small")  # fmt: skip
    booted = run_cli(*run, "--host", "fra-01", "--rounds", "2", "--interval", "0.01",
                     "--boot-seconds", "0", db=url)  # fmt: skip
    assert booted.exit_code == 0, booted.stderr
    assert fleet.api.instances.show(OP, made_instance["id"])["readyAt"] is not None
    other = run_cli(*run, "--host", "fra-02", "--once", db=url)
    assert other.exit_code != 0 and "FORBIDDEN" in other.stderr
    assert fleet.api.hosts.show(OP, host="fra-02")["inventoryReportedAt"] is None

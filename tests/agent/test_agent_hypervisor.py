"""`fleet agent run --hypervisor URI`: the agent loop over HTTP driving libvirt's test driver."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bcfleet.agent.remote import AgentConnection
from bcfleet.agent.runner import Agent, AgentOptions, simulated_inventory
from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app
from bcfleet.http.server import BackgroundServer
from bcfleet.jobs.vps_hosts import run_vps_hosts
from tests.support.builders import OP, hosted_pool, token
from tests.support.fleet import python_cli, run_cli
from tests.support.libvirt_test_driver import NODE, libvirt_or_skip

PLACEMENT = {"bc.dev/cap.instance.placement": "true"}
ROOT = Path(__file__).resolve().parents[2]


def needs_libvirt() -> None:
    libvirt_or_skip()


@pytest.fixture
def server(fleet: Fleet) -> Iterator[BackgroundServer]:
    with BackgroundServer(create_app(fleet, tally_seconds=0)) as running:
        yield running


@pytest.fixture
def node(tmp_path: Path) -> str:
    path = tmp_path / "node.xml"
    path.write_text(NODE)
    return f"test://{path}"


def placed(fleet: Fleet, agent: Agent) -> dict[str, Any]:
    """One running instance on fra-01, placed after the agent's first inventory report."""
    pool = hosted_pool(fleet)
    fleet.api.hosts.adopt(OP, tenant_id="root", pool=pool["id"], name="fra-01", labels=PLACEMENT)
    agent.round()
    run_vps_hosts(fleet, fleet.now())
    fleet.api.flavors.create(OP, tenant_id="root", pool_id=pool["id"], name="g1.small", vcpu=2,
                             memory_gib=4, disk_gib=40)  # fmt: skip
    made = fleet.api.instances.create(OP, tenant_id="acme", pool_id=pool["id"], flavor="g1.small")
    assert made["state"] == "running" and "readyAt" not in made
    return made


def test_the_agent_runs_its_instances_on_libvirt_and_reports_them_ready(
    fleet: Fleet, server: BackgroundServer, node: str
) -> None:
    needs_libvirt()
    connection = AgentConnection(server.url, token(fleet, "root", "fra-01-agent"))
    options = AgentOptions(
        "fra-01", hypervisor_uri=node, inventory=simulated_inventory("fra-01"), interval=0.01
    )
    agent = Agent(connection, options)
    try:
        made = placed(fleet, agent)
        agent.round()
        assert fleet.api.instances.show(OP, made["id"])["readyAt"] is not None
        assert (made["id"], "ready") in agent.report.states
        conn = agent.hypervisor.link.conn  # type: ignore[union-attr]
        assert conn.lookupByName(made["id"]).isActive()
        fleet.api.instances.delete(OP, made["id"])
        agent.round()
        agent.round()
        assert [d.name() for d in conn.listAllDomains()] == []
    finally:
        assert agent.hypervisor is not None
        agent.hypervisor.close()
        connection.close()


def test_fleet_agent_run_hypervisor_once(fleet: Fleet, server: BackgroundServer, node: str) -> None:
    needs_libvirt()
    fleet.api.hosts.adopt(OP, tenant_id="root", pool=hosted_pool(fleet)["id"], name="fra-01")
    base = ("agent", "run", "--server", server.url, "--token", token(fleet, "root", "agent"),
            "--host", "fra-01", "--once", "--json")  # fmt: skip
    result = run_cli(*base, "--hypervisor", node, db=fleet.settings.db_url)
    assert result.exit_code == 0, result.stderr
    assert result.json()["conditions"] == []  # type: ignore[index]
    both = run_cli(*base, "--hypervisor", node, "--simulate", db=fleet.settings.db_url)
    assert both.exit_code == 1
    assert json.loads(both.stdout)["error"]["code"] == "INVALID_INPUT"
    blind = run_cli(*base, "--hypervisor", node, "--ready-line", "up", db=fleet.settings.db_url)
    assert json.loads(blind.stdout)["error"]["code"] == "INVALID_INPUT"


def test_without_libvirt_python_the_agent_says_what_to_install(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow"
    shadow.mkdir()
    (shadow / "libvirt.py").write_text("raise ImportError('No module named libvirtmod')\n")
    env = {**os.environ, "PYTHONPATH": f"{shadow}{os.pathsep}{ROOT}", "BCFLEET_TOKEN": "bcf_x"}
    argv = python_cli("agent", "run", "--server", "http://127.0.0.1:9", "--hypervisor",
                      "qemu:///system", "--once", "--json", db=f"sqlite:///{tmp_path}/f.db")  # fmt: skip
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 1, done.stderr
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "UNSUPPORTED"
    assert error["details"]["install"] == "pip install 'bcfleet[libvirt]'"
    assert "Traceback" not in done.stderr


def test_the_agent_api_takes_a_crashed_guest(fleet: Fleet, server: BackgroundServer) -> None:
    agent_token = token(fleet, "root", "fra-01-agent")
    agent = Agent(AgentConnection(server.url, agent_token), AgentOptions("fra-01", simulate=True))
    made = placed(fleet, agent)
    assert agent.connection.report_state("fra-01", made["id"], "crashed") is True

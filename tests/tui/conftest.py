"""Dashboard tests: anyio on asyncio and the test fleet built once per test."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from bcfleet.api.demo import build_demo
from bcfleet.cli.demo_workloads import populate
from bcfleet.client.fleet_client import FleetClient
from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app
from bcfleet.http.server import BackgroundServer
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.tui.remote_source import RemoteSource
from tests.support.builders import OP, token
from tests.support.tui import build_fleet


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def fleet_db(tmp_path: Path) -> Path:
    """The dashboard's test fleet (tests/support/tui.py) in a fresh SQLite file."""
    return build_fleet(tmp_path)


@pytest.fixture
def served(fleet: Fleet) -> Iterator[tuple[BackgroundServer, RemoteSource]]:
    """The demo fleet served over HTTP and a RemoteSource reading it as root's admin; a test
    may stop the server to see the dashboard without it."""
    build_demo(fleet, hosts=10)
    run_vps_hosts(fleet, fleet.now())
    pools = {p["name"]: p["id"] for p in fleet.api.pools.list(OP)["items"]}
    populate(fleet, pools["vps-fra"], pools["vps-ams"])
    with (
        BackgroundServer(create_app(fleet, tally_seconds=0)) as server,
        FleetClient(server.url, token(fleet, "root", "ops")) as client,
    ):
        yield server, RemoteSource(client, label=server.url)


@pytest.fixture
def remote(served: tuple[BackgroundServer, RemoteSource]) -> RemoteSource:
    """The demo fleet served over HTTP, read by a RemoteSource as root's admin."""
    return served[1]

"""The dashboard over HTTP: RemoteSource reads the same things LocalSource does, through `fleet serve`."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from bcfleet.api.demo import build_demo
from bcfleet.cli.demo_workloads import populate
from bcfleet.domain.compute_settings import ComputeChange, SizeChange
from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app
from bcfleet.http.client import FleetClient
from bcfleet.http.server import BackgroundServer
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.tui.remote_source import RemoteSource
from bcfleet.tui.source import LocalSource, NotAvailable, PreviewRequest
from tests.builders import OP, token


@pytest.fixture
def remote(fleet: Fleet) -> Iterator[RemoteSource]:
    build_demo(fleet, hosts=10)
    run_vps_hosts(fleet, fleet.now())
    pools = {p["name"]: p["id"] for p in fleet.api.pools.list(OP)["items"]}
    populate(fleet, pools["vps-fra"], pools["vps-ams"])
    with (
        BackgroundServer(create_app(fleet, tally_seconds=0)) as server,
        FleetClient(server.url, token(fleet, "root", "ops")) as client,
    ):
        yield RemoteSource(client, label=server.url)


def test_remote_reads_match_local_reads(fleet: Fleet, remote: RemoteSource) -> None:
    local = LocalSource(fleet)
    assert [h["name"] for h in remote.hosts()] == [h["name"] for h in local.hosts()]
    assert [r["id"] for r in remote.reservations()] == [r["id"] for r in local.reservations()]
    assert [i["id"] for i in remote.degraded()] == [i["id"] for i in local.degraded()]
    request = PreviewRequest(
        tenant="acme", pool="gpu-burst", gpus=4, duration="12h", nodes=1, spot=False
    )
    assert remote.preview(request) == local.preview(request)
    with pytest.raises(NotAvailable):
        remote.jobs()


def test_remote_compute_settings_save(remote: RemoteSource) -> None:
    current = remote.compute_settings("acme")
    change = ComputeChange(sizes={"small": SizeChange(spares=2)})
    saved = remote.save_compute_settings("acme", current.settings, change)
    assert saved.message == "Your compute settings are saved."
    assert remote.compute_settings("acme").settings.setting("small").spares == 2

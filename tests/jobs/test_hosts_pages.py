"""A vps.hosts tick reads its hosts a page at a time and lets each page go: the session never
holds more than a page of hosts, and every host's rows and atoms come out as in one pass."""

from __future__ import annotations

from typing import Any

import pytest

from bcfleet.fleet import Fleet
from bcfleet.jobs import vps_hosts
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.store.models import Host
from tests.support.builders import OP, host, hosted_pool, inventory
from tests.support.capacity import rows

PAGE = 3
HOSTS = 3 * PAGE  # three pages' worth


def _fleet_of_hosts(fleet: Fleet) -> dict[str, Any]:
    """HOSTS hosts of 18 to 26 CPUs (reserve 2 vCPU: allocatable 16 to 24), the last with 2 GPUs."""
    pool = hosted_pool(fleet)
    for i in range(HOSTS):
        gpus = 2 if i == HOSTS - 1 else 0
        host(fleet, pool["id"], f"h{i}", inventory(cpus=18 + i, gpus=gpus))
    return pool


def test_a_tick_holds_at_most_one_page_of_hosts_and_writes_every_hosts_rows(
    any_fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = _fleet_of_hosts(any_fleet)
    held: list[int] = []
    sync = vps_hosts.sync_host

    def counting(session: Any, *args: Any) -> tuple[int, int]:
        held.append(sum(isinstance(e, Host) for e in session.identity_map.values()))
        return sync(session, *args)

    monkeypatch.setattr(vps_hosts, "sync_host", counting)
    counts = run_vps_hosts(any_fleet, any_fleet.now(), page_size=PAGE)
    assert len(held) == HOSTS and max(held) == PAGE
    assert counts["hosts"] == HOSTS and counts["hostErrors"] == 0
    assert counts["atomsChanged"] == 2
    for i in range(HOSTS):
        assert rows(any_fleet, f"h{i}")["vcpu"]["allocatable"] == 16 + i
    # One pass over every host finds nothing left to write: the pages wrote what it would.
    monkeypatch.setattr(vps_hosts, "sync_host", sync)
    again = run_vps_hosts(any_fleet, any_fleet.now(), page_size=10 * HOSTS)
    assert (again["rowsWritten"], again["atomsChanged"]) == (0, 0)
    # A change of policy reaches the hosts of every page, each row once.
    any_fleet.api.pools.update(OP, tenant_id="root", pool=pool["id"], overcommit={"vcpu": 3})
    changed = run_vps_hosts(any_fleet, any_fleet.now(), page_size=PAGE)
    assert changed["rowsWritten"] == HOSTS
    assert [rows(any_fleet, f"h{i}")["vcpu"]["capacity"] for i in range(HOSTS)] == [
        3 * (16 + i) for i in range(HOSTS)
    ]

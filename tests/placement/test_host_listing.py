"""hosts.list's aggregates (GPUs booked now, degraded guests), its fields and its scope.

The listing is read set-based; these tests hold it to what hosts.show says about
the same hosts, on SQLite and PostgreSQL.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from bcfleet.clock import format_time
from bcfleet.errors import ForbiddenError, NotFoundError
from bcfleet.fleet import Fleet
from tests.support.builders import OP, token
from tests.support.capacity import create, gpu_fleet, has_degraded
from tests.support.fleet import T0
from tests.support.http import served
from tests.support.reservations import reserve


def by_name(fleet: Fleet, **kw: Any) -> dict[str, dict[str, Any]]:
    return {h["name"]: h for h in fleet.api.hosts.list(OP, **kw)["items"]}


def test_gpus_count_what_instances_and_reservations_hold_now(any_fleet: Fleet) -> None:
    fleet = any_fleet
    pool = gpu_fleet(fleet)
    create(fleet, pool, "gpu2")
    now = reserve(fleet, pool, gpus=1, duration="2h")
    later = reserve(fleet, pool, gpus=4, duration="1h", start=format_time(T0 + timedelta(days=1)))
    gone = reserve(fleet, pool, gpus=1, duration="2h")
    fleet.api.reservations.cancel(OP, gone["id"])
    assert (now["state"], later["state"]) == ("placed", "placed")
    hosts = by_name(fleet)
    assert [h["gpus"]["total"] for h in hosts.values()] == [4, 4]
    assert sum(h["gpus"]["used"] for h in hosts.values()) == 3  # not tomorrow's, not cancelled
    fleet.clock.advance(seconds=3 * 3600)  # type: ignore[attr-defined]
    assert sum(h["gpus"]["used"] for h in by_name(fleet).values()) == 2  # the 2h one has ended


def test_degraded_guests_are_counted_on_their_hosts(any_fleet: Fleet) -> None:
    fleet = any_fleet
    pool = gpu_fleet(fleet)
    pinned = [create(fleet, pool, "pin") for _ in range(3)]
    create(fleet, pool, "plain")
    assert all(has_degraded(i) for i in pinned)
    counts = {name: h["degradedGuests"] for name, h in by_name(fleet).items()}
    assert sum(counts.values()) == 3
    for instance in pinned:
        node = fleet.api.instances.show(OP, instance["id"])["nodeId"]  # root's view
        host = fleet.api.hosts.show(OP, host=node)["name"]
        assert counts[host] >= 1
    fleet.api.instances.delete(OP, pinned[0]["id"])
    assert sum(h["degradedGuests"] for h in by_name(fleet).values()) == 2


def test_a_listed_host_reads_as_hosts_show_has_it(any_fleet: Fleet) -> None:
    fleet = any_fleet
    pool = gpu_fleet(fleet)
    fleet.api.hosts.adopt(OP, tenant_id="root", pool=pool["id"], name="h3", labels={"rack": "r2"})
    fleet.api.hosts.set_state(OP, host="h2", draining=True)
    create(fleet, pool, "plain")
    for name, listed in by_name(fleet).items():
        shown = fleet.api.hosts.show(OP, host=name)
        del shown["inventory"], shown["reservedCpus"]  # the detail's own
        assert listed == shown
    assert by_name(fleet)["h3"]["status"] == "ready, no inventory"
    assert by_name(fleet)["h3"]["gpus"] == {"total": 0, "used": 0}


def test_the_listing_keeps_to_the_callers_hosts(any_fleet: Fleet) -> None:
    fleet = any_fleet
    pool = gpu_fleet(fleet)  # root's, offered to acme
    create(fleet, pool, "pin")
    admin = token(fleet, "acme", "acme-admin", role="admin")
    own = fleet.api.pools.create(admin, tenant_id="acme", name="acme-pool", kind="vps-host")
    fleet.api.hosts.adopt(admin, tenant_id="acme", pool=own["id"], name="acme-01")
    assert [h["name"] for h in fleet.api.hosts.list(admin)["items"]] == ["acme-01"]
    assert [h["name"] for h in fleet.api.hosts.list(admin, pool="acme-pool")["items"]] == [
        "acme-01"
    ]
    assert sorted(by_name(fleet, pool=pool["id"])) == ["h1", "h2"]
    assert sorted(by_name(fleet)) == ["acme-01", "h1", "h2"]
    with pytest.raises((ForbiddenError, NotFoundError)):
        fleet.api.hosts.list(admin, pool=pool["id"])  # offered to acme: flavors, not hosts
    fleet.api.tenants.create(OP, "globex")
    globex = token(fleet, "globex", "globex-admin", role="admin")
    with pytest.raises(NotFoundError):
        fleet.api.hosts.list(globex, pool="acme-pool")
    assert fleet.api.hosts.list(globex)["items"] == []


def test_the_http_api_serves_the_aggregates(fleet: Fleet) -> None:
    pool = gpu_fleet(fleet)
    create(fleet, pool, "pin")
    create(fleet, pool, "gpu2")
    with served(fleet) as (_server, api):
        hosts = api.get("/v1/hosts").json()["items"]  # checked against the OpenAPI document
        assert sum(h["gpus"]["used"] for h in hosts) == 2
        assert sum(h["degradedGuests"] for h in hosts) == 1
        assert [h["name"] for h in hosts] == sorted(h["name"] for h in hosts)

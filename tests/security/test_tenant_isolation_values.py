"""One tenant's bad values, written straight into the tables, never break another tenant's reads.

acme (tenant A) gets hostile values the API would refuse today, as if stored before the
bounds existed: a NaN overcommit on a pool it owns and offers to globex (tenant B), a
host inventory with 1e308 GiB and a GPU PCI address listed twice, a NaN capacity ratio,
an instance name with a newline and a bidi override. globex's reads (pools, flavors,
hosts, instances; Python API and HTTP) and the jobs keep working; acme's host carries
the fault, visible in `hosts list` and `fleet doctor`.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from sqlalchemy import text

from bcfleet.fleet import Fleet
from bcfleet.jobs.runner import run_job
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.store.models import Host, Pool
from tests.support.builders import OP, inventory, token
from tests.support.http import served

PLACEMENT = {"bc.dev/cap.instance.placement": "true"}


def strict_json(raw: str) -> Any:
    def refuse(token: str) -> Any:
        raise ValueError(f"not JSON: {token}")

    return json.loads(raw, parse_constant=refuse)


def _tenant(fleet: Fleet, tenant: str, *, offer_to: str | None = None) -> dict[str, Any]:
    fleet.api.tenants.create(OP, tenant)
    admin = token(fleet, tenant, f"{tenant}-admin")
    pool = fleet.api.pools.create(admin, tenant_id=tenant, name=f"{tenant}-pool", kind="vps-host")
    if offer_to is not None:
        fleet.api.pools.offer(OP, tenant_id=tenant, pool=pool["id"], to=offer_to)
    fleet.api.flavors.create(admin, tenant_id=tenant, pool_id=pool["id"], name="g1.small",
                             vcpu=2, memory_gib=4, disk_gib=40)  # fmt: skip
    fleet.api.hosts.adopt(admin, tenant_id=tenant, pool=pool["id"], name=f"{tenant}-01",
                          labels=PLACEMENT)  # fmt: skip
    fleet.api.hosts.report(admin, host=f"{tenant}-01", inventory=inventory(cpus=16, gpus=2))
    run_vps_hosts(fleet, fleet.now())
    instance = fleet.api.instances.create(admin, tenant_id=tenant, pool_id=pool["id"],
                                          flavor="g1.small", name=f"{tenant}-vm")  # fmt: skip
    return {"token": admin, "pool": pool, "instance": instance}


def _poison(fleet: Fleet, acme: dict[str, Any]) -> None:
    """acme's hostile values, bypassing the API (PostgreSQL's JSON has no NaN: a string there)."""
    sqlite = fleet.engine.dialect.name == "sqlite"
    with fleet.write() as session:
        pool = session.get(Pool, acme["pool"]["id"])
        assert pool is not None
        pool.overcommit = {"vcpu": math.nan if sqlite else "NaN", "memoryGiB": 1e308}
        session.add(pool)
        host = session.get(Host, acme["instance"]["nodeId"])
        assert host is not None
        hostile = inventory(cpus=16, gpus=2, disk_gib=1)
        hostile["diskGiB"] = 1e308
        hostile["memoryGiB"] = 1e308
        hostile["gpus"][1]["pciAddress"] = hostile["gpus"][0]["pciAddress"]
        host.inventory = hostile
        session.add(host)
        session.execute(
            text("UPDATE node_resources SET ratio = :r WHERE node_id = :n AND resource = 'vcpu'"),
            {"r": math.inf if sqlite else math.nan, "n": host.id},  # SQLite stores NaN as NULL
        )
        session.execute(
            text("UPDATE instances SET name = :name WHERE id = :id"),
            {"name": "vm\nins_x  globex  running\u202e", "id": acme["instance"]["id"]},
        )


@pytest.fixture
def poisoned(any_fleet: Fleet) -> dict[str, Any]:
    acme = _tenant(any_fleet, "acme", offer_to=None)
    globex = _tenant(any_fleet, "globex")
    any_fleet.api.pools.offer(OP, tenant_id="acme", pool=acme["pool"]["id"], to="globex")
    _poison(any_fleet, acme)
    return {"acme": acme, "globex": globex}


def test_the_other_tenants_python_reads_keep_working(any_fleet: Fleet, poisoned: Any) -> None:
    globex = poisoned["globex"]["token"]
    api = any_fleet.api
    pools = api.pools.list(globex, tenant_id="globex")["items"]
    shared = next(p for p in pools if p["name"] == "acme-pool")  # offered to globex
    assert shared["policy"]["overcommit"]["vcpu"] is None
    strict_json(json.dumps(pools))
    flavors = api.flavors.list(globex, tenant_id="globex", pool_id=shared["id"])["items"]
    assert [f["name"] for f in flavors] == ["g1.small"]
    hosts = api.hosts.list(globex, tenant_id="globex")["items"]
    assert [h["name"] for h in hosts] == ["globex-01"]
    instances = api.instances.list(globex, tenant_id="globex")["items"]
    assert [i["name"] for i in instances] == ["globex-vm"]


def test_the_other_tenants_http_reads_answer_200_in_strict_json(
    any_fleet: Fleet, poisoned: Any
) -> None:
    with served(any_fleet) as (_, root):
        globex = root.as_(poisoned["globex"]["token"])
        shared = poisoned["acme"]["pool"]["id"]
        for path in ("/v1/pools", f"/v1/pools/{shared}", f"/v1/pools/{shared}/flavors",
                     "/v1/hosts", "/v1/instances"):  # fmt: skip
            for client in (globex, root):
                answer = client.get(path)
                assert answer.status_code == 200, (path, answer.text)
                strict_json(answer.text)
        listed = strict_json(root.get("/v1/hosts").text)["items"]
        ratios = {h["name"]: h["resources"][0]["ratio"] for h in listed if h["resources"]}
        assert ratios["globex-01"] is not None


def test_the_jobs_go_on_and_the_fault_stays_on_its_host(any_fleet: Fleet, poisoned: Any) -> None:
    hosts = run_job(any_fleet, "vps.hosts", locked_is_error=True)
    assert hosts.outcome == "ok", hosts.error
    assert hosts.counts["hostErrors"] == 1
    usage = run_job(any_fleet, "vps.usage", locked_is_error=True)
    assert usage.outcome == "ok", usage.error

    by_name = {h["name"]: h for h in any_fleet.api.hosts.list(OP)["items"]}
    assert by_name["globex-01"]["inventoryError"] is None
    error = by_name["acme-01"]["inventoryError"]
    assert error is not None and "memoryGiB must be from 0 to 1,000,000" in error
    warnings = any_fleet.api.doctor.check(OP)["warnings"]
    assert [w["host"] for w in warnings if w["code"] == "vps.hosts.inventory"] == ["acme-01"]

    globex = poisoned["globex"]
    placed = any_fleet.api.instances.create(globex["token"], tenant_id="globex",
                                            pool_id=globex["pool"]["id"], flavor="g1.small",
                                            name="globex-vm-2")  # fmt: skip
    assert placed["state"] != "pending"  # globex's host still takes guests


def test_a_host_whose_inventory_is_repaired_loses_its_error(
    any_fleet: Fleet, poisoned: Any
) -> None:
    run_vps_hosts(any_fleet, any_fleet.now())
    acme = poisoned["acme"]
    any_fleet.api.hosts.report(acme["token"], host="acme-01", inventory=inventory(cpus=16, gpus=2))
    run_vps_hosts(any_fleet, any_fleet.now())
    shown = any_fleet.api.hosts.show(acme["token"], tenant_id="acme", host="acme-01")
    assert shown["inventoryError"] is None

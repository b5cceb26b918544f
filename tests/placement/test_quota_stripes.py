"""Quota under concurrent admissions: limits never exceeded, striped use counts every charge (SQLite and PostgreSQL)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sqlalchemy import text

from bcfleet.errors import QuotaExceededError
from bcfleet.fleet import Fleet
from tests.support.builders import OP, flavor
from tests.support.capacity import create, invariants_ok, pool_with_hosts, rows


def _used(fleet: Fleet, pool: dict[str, Any]) -> dict[str, int]:
    items = fleet.api.quotas.show(OP, tenant_id="acme", pool=pool["id"])["items"]
    return dict(items[0]["used"])


def _place_many(fleet: Fleet, pool: dict[str, Any], count: int) -> int:
    """Admit `count` c2 instances one after another; how many were admitted (not over quota)."""
    admitted = 0
    for _ in range(count):
        try:
            create(fleet, pool, "c2")
            admitted += 1
        except QuotaExceededError:
            pass
    return admitted


def _c2_pool(fleet: Fleet) -> dict[str, Any]:
    pool = pool_with_hosts(fleet, hosts=2)  # 16 vCPU each after the host reserve
    flavor(fleet, pool["id"], "c2", vcpu=2, memory_gib=1, disk_gib=1)
    return pool


def test_four_writers_of_one_tenant_never_exceed_its_limit(any_fleet: Fleet) -> None:
    pool = _c2_pool(any_fleet)
    any_fleet.api.quotas.set(OP, tenant_id="acme", pool=pool["id"], limits={"vcpu": 10})
    with ThreadPoolExecutor(max_workers=4) as executor:
        admitted = sum(executor.map(lambda _: _place_many(any_fleet, pool, 5), range(4)))
    assert admitted == 5  # 10 vCPU of quota, 2 each; the hosts had room for 16
    assert _used(any_fleet, pool)["vcpu"] == 10
    assert sum(rows(any_fleet, h)["vcpu"]["allocated"] for h in ("h1", "h2")) == 10
    invariants_ok(any_fleet)


def test_four_writers_without_a_limit_count_every_charge(any_fleet: Fleet) -> None:
    pool = _c2_pool(any_fleet)

    def churn(_: int) -> int:
        made = [create(any_fleet, pool, "c2")["id"] for _ in range(4)]
        any_fleet.api.instances.delete(OP, made[0])
        return len(made) - 1

    with ThreadPoolExecutor(max_workers=4) as executor:
        live = sum(executor.map(churn, range(4)))
    assert live == 12
    assert _used(any_fleet, pool) == {"vcpu": 24, "memoryGiB": 12, "diskGiB": 12, "gpu": 0}
    with any_fleet.read() as session:
        striped = session.execute(text("SELECT coalesce(sum(used), 0) FROM quota_stripes")).scalar()
    # PostgreSQL counts unlimited use on stripes (SQLite, whose writers are serialized, does not)
    assert (int(striped or 0) > 0) == (any_fleet.engine.dialect.name == "postgresql")
    invariants_ok(any_fleet)


def test_a_limit_counts_what_was_charged_before_it(any_fleet: Fleet) -> None:
    pool = _c2_pool(any_fleet)
    assert _place_many(any_fleet, pool, 3) == 3
    shown = any_fleet.api.quotas.set(OP, tenant_id="acme", pool=pool["id"], limits={"vcpu": 8})
    assert shown["used"]["vcpu"] == 6
    assert _place_many(any_fleet, pool, 3) == 1  # 6 + 2 = 8, then refused
    with any_fleet.read() as session:
        left = session.execute(
            text("SELECT count(*) FROM quota_stripes WHERE resource = 'vcpu'")
        ).scalar_one()
    assert left == 0  # folded into the row a limit guards
    assert any_fleet.api.quotas.clear(OP, tenant_id="acme", pool=pool["id"])["used"]["vcpu"] == 8
    assert _used(any_fleet, pool)["memoryGiB"] == 4
    invariants_ok(any_fleet)


def test_a_limit_set_while_writers_charge_holds_from_then_on(any_fleet: Fleet) -> None:
    pool = _c2_pool(any_fleet)
    first = threading.Event()

    def writer(_: int) -> int:
        admitted = 0
        for _ in range(4):
            try:
                create(any_fleet, pool, "c2")
                admitted += 1
                first.set()
            except QuotaExceededError:
                pass
        return admitted

    with ThreadPoolExecutor(max_workers=4) as executor:
        results = [executor.submit(writer, i) for i in range(4)]
        assert first.wait(timeout=60)
        shown = any_fleet.api.quotas.set(OP, tenant_id="acme", pool=pool["id"], limits={"vcpu": 6})
        admitted = sum(r.result() for r in results)
    at_set = shown["used"]["vcpu"]
    final = _used(any_fleet, pool)["vcpu"]
    assert final == 2 * admitted
    assert final <= max(6, at_set)  # nothing charged past the limit once it was set
    invariants_ok(any_fleet)

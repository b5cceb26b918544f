"""PostgreSQL: a create that repeats the last one's pool and flavor takes three round trips.

The search's first page goes behind the pool and flavor lookup, and the quota charge is
finished behind the claim. Each shortcut is checked before it is used: a page that is not the
one the search reads is dropped, and a charge its stripes did not finish runs the call again,
finishing the charge before the claim as the lock order wants.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from sqlalchemy import text

from bcfleet.errors import QuotaExceededError
from bcfleet.fleet import Fleet
from bcfleet.store import pq_pipeline
from bench.common import seed_pool
from tests.support.builders import OP
from tests.support.capacity import invariants_ok
from tests.support.statements import CLAIM, SEARCH, Statements

COUNTED = {"claim": CLAIM, "page": SEARCH}


def _counted(fleet: Fleet, pool: dict[str, Any]) -> Counter[str]:
    seen = Statements(fleet, COUNTED)
    try:
        assert _create(fleet, pool)["state"] == "running"
    finally:
        seen.remove()
    return seen.kinds


def _create(fleet: Fleet, pool: dict[str, Any]) -> dict[str, Any]:
    return fleet.api.instances.create(OP, tenant_id="bench", pool_id=pool["id"], flavor="b1.small")


def _pool(fleet: Fleet) -> dict[str, Any]:
    """40 hosts, so a search's first page holds every candidate it weighs (16)."""
    return seed_pool(fleet, 40, vcpu=8)  # 16 vCPU each (ratio 2); flavor b1.small: 2 vCPU


def _resize(fleet: Fleet, pool: dict[str, Any], vcpu: int) -> None:
    fleet.api.flavors.update(
        OP,
        tenant_id="root",
        pool_id=pool["id"],
        name="b1.small",
        vcpu=vcpu,
        memory_gib=4,
        disk_gib=40,
    )


def _allocated_vcpu(fleet: Fleet) -> int:
    with fleet.read() as session:
        total = session.execute(
            text("SELECT sum(allocated) FROM node_resources WHERE resource = 'vcpu'")
        ).scalar()
    return int(total or 0)


@pytest.mark.postgres
def test_a_create_like_the_last_takes_two_round_trips(
    pg_fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = _pool(pg_fleet)
    syncs: list[int] = []
    end = pq_pipeline.PqPipeline.end

    def counted_end(self: pq_pipeline.PqPipeline) -> None:
        syncs[-1] += 1
        end(self)

    monkeypatch.setattr(pq_pipeline.PqPipeline, "end", counted_end)
    for _ in range(4):
        syncs.append(0)
        assert _create(pg_fleet, pool)["state"] == "running"
    # The first create learns the page, makes the tenant's quota rows and reads the inventories
    # of the hosts it saw; the second learns that the stripes finish its charge (its claim,
    # of a host whose inventory is kept, goes unread with COMMIT); from the third on, two
    # round trips: the lookup and the page, then the charge, the claim, the rows and COMMIT.
    assert syncs[0] > syncs[1] == 3
    assert syncs[2:] == [2, 2]
    invariants_ok(pg_fleet)


@pytest.mark.postgres
def test_the_page_sent_ahead_is_used_only_while_the_flavor_asks_the_same(pg_fleet: Fleet) -> None:
    pool = _pool(pg_fleet)
    _create(pg_fleet, pool)
    assert _counted(pg_fleet, pool) == {"page": 1, "claim": 1}
    _resize(pg_fleet, pool, 12)
    # The page sent ahead searched for 2 vCPU: dropped, the search reads its own for 12.
    assert _counted(pg_fleet, pool) == {"page": 2, "claim": 1}
    assert _counted(pg_fleet, pool) == {"page": 1, "claim": 1}
    assert _allocated_vcpu(pg_fleet) == 2 + 2 + 12 + 12
    invariants_ok(pg_fleet)


@pytest.mark.postgres
def test_a_limit_set_after_striped_charges_is_met_by_running_the_create_again(
    pg_fleet: Fleet,
) -> None:
    pool = _pool(pg_fleet)
    for _ in range(2):  # unlimited: charged on stripes, so the next is finished behind its claim
        _create(pg_fleet, pool)
    pg_fleet.api.quotas.set(OP, tenant_id="bench", pool=pool["id"], limits={"vcpu": 6})
    # Its stripes no longer finish the charge: the call runs again, charging before claiming.
    assert _counted(pg_fleet, pool) == {"page": 2, "claim": 2}
    # From then on the charge is finished before the claim, and the limit holds.
    with pytest.raises(QuotaExceededError):
        _create(pg_fleet, pool)
    used = pg_fleet.api.quotas.show(OP, tenant_id="bench", pool=pool["id"])["items"][0]["used"]
    assert used["vcpu"] == 6
    assert _allocated_vcpu(pg_fleet) == 6
    invariants_ok(pg_fleet)


def test_nothing_is_sent_ahead_on_sqlite(fleet: Fleet) -> None:
    pool = _pool(fleet)
    _create(fleet, pool)
    _resize(fleet, pool, 12)
    assert _counted(fleet, pool) == {"page": 1}  # SQLite claims in one UPDATE of its own
    assert _allocated_vcpu(fleet) == 2 + 12

"""reservations.create/get/list/cancel: input rules, idempotency, quota, policy, lifecycle, gangs."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import pytest

from bcfleet.clock import format_time
from bcfleet.errors import (
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
    QuotaExceededError,
)
from bcfleet.fleet import Fleet
from bcfleet.jobs.reservations import run_lifecycle
from tests.support.builders import OP, token
from tests.support.capacity import invariants_ok
from tests.support.fleet import T0
from tests.support.reservations import events, get, gpu_pool, quota_used, reserve


def test_a_placed_reservation_reads_like_the_document(fleet: Fleet) -> None:
    pool = gpu_pool(fleet)
    made = reserve(fleet, pool, spot=True, idempotency_key="sweep-042")
    assert made["id"].startswith("rsv_")
    assert made["devices"] == [{"class": "gpu", "count": 4}]
    assert (made["tenantId"], made["poolId"], made["spot"], made["binding"]) == (
        "acme",
        pool["id"],
        True,
        "pool",
    )
    assert made["state"] == "placed" and made["nodes"] == 1 and made["duration"] == "12h"
    assert made["during"] == {
        "start": format_time(T0),
        "end": format_time(T0 + timedelta(hours=12)),
    }
    assert made["idempotencyKey"] == "sweep-042" and made["conditions"] == []
    assert [e["type"] for e in events(fleet, "acme")] == ["reservation.placed"]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        pytest.param({"binding": "node", "spot": True}, "spot", id="spot-node-lease"),
        pytest.param({"gpus": 0}, "gpus", id="no-gpus"),
        pytest.param({"nodes": 0}, "nodes", id="no-nodes"),
        pytest.param({"duration": "12 hours"}, "duration", id="bad-duration"),
        pytest.param({"binding": "rack"}, "binding", id="bad-binding"),
        pytest.param({"start": "2026-11-30T09:00:00Z"}, "start", id="start-in-the-past"),
    ],
)
def test_invalid_input(fleet: Fleet, fields: dict[str, Any], field: str) -> None:
    pool = gpu_pool(fleet)
    with pytest.raises(InvalidInputError) as refused:
        reserve(fleet, pool, **fields)
    assert refused.value.details["field"] == field
    assert fleet.api.reservations.list(OP)["items"] == []


def test_same_key_same_input_is_the_same_reservation(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet)
    first = reserve(any_fleet, pool, spot=True, idempotency_key="sweep-042")
    any_fleet.clock.advance(seconds=5)  # type: ignore[attr-defined]
    again = reserve(any_fleet, pool, spot=True, idempotency_key="sweep-042")
    assert again["id"] == first["id"]
    assert quota_used(any_fleet, "acme", pool) == 4
    with pytest.raises(ConflictError) as refused:
        reserve(any_fleet, pool, gpus=2, spot=True, idempotency_key="sweep-042")
    assert refused.value.code == "CONFLICT"
    other_tenant = reserve(any_fleet, pool, "beta", gpus=2, spot=True, idempotency_key="sweep-042")
    assert other_tenant["id"] != first["id"]  # keys are per tenant


def test_concurrent_requests_with_one_key_make_one_reservation(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet, hosts=2)

    def create(_: int) -> str:
        return str(reserve(any_fleet, pool, gpus=1, idempotency_key="once")["id"])

    with ThreadPoolExecutor(max_workers=4) as executor:
        ids = set(executor.map(create, range(8)))
    assert len(ids) == 1 and quota_used(any_fleet, "acme", pool) == 1
    invariants_ok(any_fleet)


def test_quota_is_charged_alike_for_spot_and_regular(fleet: Fleet) -> None:
    pool = gpu_pool(fleet, hosts=2)
    fleet.api.quotas.set(OP, tenant_id="acme", pool=pool["id"], limits={"gpu": 6})
    reserve(fleet, pool, gpus=4, spot=True)
    with pytest.raises(QuotaExceededError):
        reserve(fleet, pool, gpus=4)
    with pytest.raises(QuotaExceededError):
        reserve(fleet, pool, gpus=2, nodes=2, spot=True)  # a gang counts gpus × nodes
    tomorrow = reserve(fleet, pool, gpus=2, start=format_time(T0 + timedelta(days=1)))
    assert quota_used(fleet, "acme", pool) == 6 and tomorrow["state"] == "placed"
    invariants_ok(fleet)


def test_a_policy_can_allow_spot_only(fleet: Fleet) -> None:
    pool = gpu_pool(fleet)
    agent = token(fleet, "acme", "sweeper", role="viewer")
    fleet.api.iam.create_policy(
        OP, tenant_id="acme", name="spot-only", attach_to=["sweeper"],
        statements=[{"effect": "allow", "actions": ["compute:reservations:create"],
                     "resources": ["tenant:*/pool:*"], "conditions": {"spot": True}}],
    )  # fmt: skip
    made = fleet.api.reservations.create(agent, tenant_id="acme", pool_id=pool["id"], gpus=1,
                                         duration="1h", spot=True)  # fmt: skip
    assert made["spot"] is True
    with pytest.raises(ForbiddenError):
        fleet.api.reservations.create(
            agent, tenant_id="acme", pool_id=pool["id"], gpus=1, duration="1h"
        )


def test_lifecycle_activates_at_start_and_releases_at_the_end(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet)
    made = reserve(any_fleet, pool, duration="1h", start=format_time(T0 + timedelta(minutes=10)))
    assert run_lifecycle(any_fleet, any_fleet.now()) == {
        "released": 0,
        "preemptedReleased": 0,
        "activated": 0,
        "failed": 0,
    }
    any_fleet.clock.advance(seconds=600)  # type: ignore[attr-defined]
    assert run_lifecycle(any_fleet, any_fleet.now())["activated"] == 1
    assert get(any_fleet, made)["activatedAt"] == format_time(T0 + timedelta(minutes=10))
    any_fleet.clock.advance(seconds=3600)  # type: ignore[attr-defined]
    assert run_lifecycle(any_fleet, any_fleet.now())["released"] == 1
    done = get(any_fleet, made)
    assert (done["state"], done["releaseReason"]) == ("released", "ended")
    assert quota_used(any_fleet, "acme", pool) == 0
    [released] = events(any_fleet, "acme", "reservation.released")
    assert released["data"]["reason"] == "ended"
    invariants_ok(any_fleet)


def test_cancel_frees_the_gpus_and_refunds(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet)
    made = reserve(any_fleet, pool)
    run_lifecycle(any_fleet, any_fleet.now())
    any_fleet.clock.advance(seconds=90)  # type: ignore[attr-defined]
    cancelled = any_fleet.api.reservations.cancel(OP, made["id"])
    assert cancelled["state"] == "released" and cancelled["releaseReason"] == "cancelled"
    assert cancelled["during"]["end"] == format_time(T0 + timedelta(seconds=90))
    assert quota_used(any_fleet, "acme", pool) == 0
    assert reserve(any_fleet, pool)["state"] == "placed"
    assert any_fleet.api.reservations.cancel(OP, made["id"])["state"] == "released"  # idempotent
    invariants_ok(any_fleet)


def test_list_and_get_are_per_tenant(fleet: Fleet) -> None:
    pool = gpu_pool(fleet, hosts=2)
    mine = reserve(fleet, pool, "acme", gpus=1)
    theirs = reserve(fleet, pool, "beta", gpus=1)
    assert [r["id"] for r in fleet.api.reservations.list(OP, tenant_id="acme")["items"]] == [
        mine["id"]
    ]
    assert len(fleet.api.reservations.list(OP)["items"]) == 2  # root's admin sees all
    with pytest.raises(NotFoundError):
        fleet.api.reservations.get(OP, theirs["id"], tenant_id="acme")
    with pytest.raises(NotFoundError):
        fleet.api.reservations.cancel(OP, theirs["id"], tenant_id="acme")
    fleet.api.reservations.cancel(OP, mine["id"])
    assert fleet.api.reservations.list(OP, tenant_id="acme")["items"] == []
    assert (
        len(fleet.api.reservations.list(OP, tenant_id="acme", include_released=True)["items"]) == 1
    )


def test_a_gang_takes_distinct_nodes_all_or_nothing(fleet: Fleet) -> None:
    pool = gpu_pool(fleet, hosts=3)
    gang = reserve(fleet, pool, gpus=3, nodes=2)
    assert gang["state"] == "placed" and len(set(gang["nodeIds"])) == 2
    too_big = reserve(fleet, pool, gpus=3, nodes=2)
    assert too_big["state"] == "pending"
    assert too_big["conditions"][0]["message"] == (
        "only 1 of 2 nodes fit (3 nodes): 2 × fits: 1 of 4 gpu free"
    )
    invariants_ok(fleet)


def test_a_node_lease_takes_whole_nodes(fleet: Fleet) -> None:
    pool = gpu_pool(fleet, hosts=2)
    reserve(fleet, pool, gpus=1)
    lease = reserve(fleet, pool, gpus=2, binding="node")
    assert lease["state"] == "placed" and lease["binding"] == "node"
    assert reserve(fleet, pool, gpus=1, binding="node")["state"] == "pending"
    invariants_ok(fleet)


def test_instances_and_reservations_share_the_gpus(fleet: Fleet) -> None:
    from tests.support.builders import flavor
    from tests.support.capacity import create

    pool = gpu_pool(fleet)
    flavor(fleet, pool["id"], "gpu2", vcpu=2, memory_gib=4, disk_gib=10, gpus=2)
    assert create(fleet, pool, "gpu2")["state"] == "running"
    assert reserve(fleet, pool, gpus=4, spot=True)["state"] == "pending"
    assert reserve(fleet, pool, gpus=2, spot=True)["state"] == "placed"
    assert create(fleet, pool, "gpu2")["state"] == "pending"
    invariants_ok(fleet)

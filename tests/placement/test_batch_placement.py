"""Placement in batches: N instances of one flavor in one transaction, as many as fit or all or nothing, on SQLite and PostgreSQL."""

from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from bcfleet.api.fake_provider import FAKE_TOKEN_ENV, start_fake_provider
from bcfleet.clock import FakeClock
from bcfleet.domain.batch_fit import assign
from bcfleet.domain.fit import HostSnapshot, ResourceRow, pack, spread
from bcfleet.domain.shapes import Shape
from bcfleet.errors import (
    CapacityUnavailableError,
    ConflictError,
    FleetError,
    InvalidInputError,
    QuotaExceededError,
)
from bcfleet.fleet import Fleet
from bcfleet.placement import batch_claims
from bcfleet.placement.batch_claims import claim_plan
from tests.support.builders import OP, flavor
from tests.support.capacity import invariants_ok, pool_with_hosts, rows


def _batch(fleet: Fleet, pool: dict[str, Any], count: int, **kwargs: Any) -> dict[str, Any]:
    return dict(
        fleet.api.instances.create_batch(
            OP, tenant_id="acme", pool_id=pool["id"], flavor=kwargs.pop("flavor", "c2"),
            count=count, **kwargs,
        )
    )  # fmt: skip


def _c2_pool(fleet: Fleet, hosts: int = 3) -> dict[str, Any]:
    pool = pool_with_hosts(fleet, hosts=hosts, cpus=10)  # 8 vCPU a host: four c2 each
    flavor(fleet, pool["id"], "c2", vcpu=2, memory_gib=1, disk_gib=1)
    return pool


def _state(fleet: Fleet) -> tuple[Any, ...]:
    """Everything a refused batch must leave as it was."""
    instances = fleet.api.instances.list(OP, include_deleted=True)["items"]
    quotas = fleet.api.quotas.show(OP, tenant_id="acme")["items"]
    node_rows = [rows(fleet, f"h{i}") for i in (1, 2, 3)]
    events = fleet.api.events.list(OP, limit=1000)["items"]
    return (instances, quotas, node_rows, len(events))


def test_a_batch_places_every_instance_in_one_go(any_fleet: Fleet) -> None:
    pool = _c2_pool(any_fleet)
    batch = _batch(any_fleet, pool, 5, name="web")
    assert (batch["count"], batch["placed"], batch["refused"], batch["reason"]) == (5, 5, 0, None)
    assert [i["name"] for i in batch["items"]] == [f"web-{n}" for n in range(1, 6)]
    assert {i["state"] for i in batch["items"]} == {"running"}
    used = any_fleet.api.quotas.show(OP, tenant_id="acme")["items"][0]["used"]
    assert used["vcpu"] == 10
    allocated = sum(rows(any_fleet, f"h{i}")["vcpu"]["allocated"] for i in (1, 2, 3))
    assert allocated == 10
    placed = [e for e in any_fleet.api.events.list(OP)["items"] if e["type"] == "instance.placed"]
    assert len(placed) == 5
    invariants_ok(any_fleet)


def test_as_many_as_fit_are_placed_and_the_rest_counted(any_fleet: Fleet) -> None:
    pool = _c2_pool(any_fleet)
    batch = _batch(any_fleet, pool, 15)
    assert (batch["placed"], batch["refused"]) == (12, 3)
    assert batch["reason"] == (
        "12 of 15 fit: 3 refused: no host fits (3 hosts): 3 × vcpu 8 of 8 allocated"
    )
    assert len(any_fleet.api.instances.list(OP)["items"]) == 12  # the refused are not made
    used = any_fleet.api.quotas.show(OP, tenant_id="acme")["items"][0]["used"]
    assert used["vcpu"] == 24  # the refused three's charge given back
    invariants_ok(any_fleet)


def test_all_or_nothing_refuses_and_changes_nothing(any_fleet: Fleet) -> None:
    pool = _c2_pool(any_fleet)
    _batch(any_fleet, pool, 10)
    before = _state(any_fleet)
    with pytest.raises(CapacityUnavailableError) as refused:
        _batch(any_fleet, pool, 3, all_or_nothing=True)
    assert refused.value.details["reason"] == (
        "2 of 3 fit: 1 refused: no host fits (3 hosts): 3 × vcpu 8 of 8 allocated"
    )
    assert (refused.value.details["fit"], refused.value.details["refused"]) == (2, 1)
    assert _state(any_fleet) == before
    assert _batch(any_fleet, pool, 2, all_or_nothing=True)["placed"] == 2
    invariants_ok(any_fleet)


def test_a_retried_batch_answers_the_same_instances(any_fleet: Fleet) -> None:
    pool = _c2_pool(any_fleet)
    first = _batch(any_fleet, pool, 14, idempotency_key="scale-7")
    assert [i["idempotencyKey"] for i in first["items"][:2]] == ["scale-7/1", "scale-7/2"]
    again = _batch(any_fleet, pool, 14, idempotency_key="scale-7")
    assert [i["id"] for i in again["items"]] == [i["id"] for i in first["items"]]
    assert (again["placed"], again["refused"]) == (12, 2)
    assert again["reason"] == "12 of 14 fit: 2 refused when the batch was first placed"
    assert len(any_fleet.api.instances.list(OP)["items"]) == 12  # nothing placed twice
    with pytest.raises(ConflictError):
        _batch(any_fleet, pool, 13, idempotency_key="scale-7")
    invariants_ok(any_fleet)


def test_a_batch_over_the_quota_is_refused_whole(any_fleet: Fleet) -> None:
    pool = _c2_pool(any_fleet)
    any_fleet.api.quotas.set(OP, tenant_id="acme", pool=pool["id"], limits={"vcpu": 9})
    before = _state(any_fleet)
    with pytest.raises(QuotaExceededError):
        _batch(any_fleet, pool, 5)  # 10 vCPU: the batch is charged at once, and refused
    assert _state(any_fleet) == before
    assert _batch(any_fleet, pool, 4)["placed"] == 4
    invariants_ok(any_fleet)


@pytest.mark.parametrize(
    "count", [0, 1001, 2.5, "3", True], ids=["zero", "over-1000", "fraction", "text", "bool"]
)
def test_a_count_out_of_bounds_is_invalid_input(fleet: Fleet, count: Any) -> None:
    pool = _c2_pool(fleet)
    with pytest.raises(InvalidInputError):
        _batch(fleet, pool, count)
    assert fleet.api.instances.list(OP)["items"] == []


def test_gpu_batches_are_placed_one_by_one_and_counted(any_fleet: Fleet) -> None:
    pool = pool_with_hosts(any_fleet, hosts=2, cpus=10, gpus=2)
    flavor(any_fleet, pool["id"], "g1", vcpu=1, memory_gib=1, disk_gib=1, gpus=1)
    batch = _batch(any_fleet, pool, 5, flavor="g1")
    assert (batch["placed"], batch["refused"]) == (4, 1)
    assert batch["reason"].startswith("4 of 5 fit: 1 refused: no host fits (2 hosts): 2 × ")
    invariants_ok(any_fleet)


def test_four_batch_writers_at_once_never_overbook(any_fleet: Fleet) -> None:
    pool = _c2_pool(any_fleet)

    def writer(seed: int) -> int:
        rng = random.Random(seed)
        placed = 0
        for _ in range(4):
            try:
                batch = _batch(
                    any_fleet, pool, rng.randint(1, 4), all_or_nothing=rng.random() < 0.5
                )
                placed += batch["placed"]
                if batch["items"] and rng.random() < 0.5:
                    any_fleet.api.instances.delete(OP, batch["items"][0]["id"])
                    placed -= 1
            except FleetError:
                pass  # refusals are fine; overbooking is not
        return placed

    with ThreadPoolExecutor(max_workers=4) as executor:
        placed = sum(executor.map(writer, range(4)))
    running = [i for i in any_fleet.api.instances.list(OP)["items"] if i["state"] == "running"]
    assert len(running) == placed <= 12
    invariants_ok(any_fleet)


def _host(node_id: str, allocated: int) -> HostSnapshot:
    return HostSnapshot(
        node_id,
        {
            "vcpu": ResourceRow("vcpu", 8, 1.0, 8, allocated),
            "memoryGiB": ResourceRow("memoryGiB", 64, 1.0, 64, 0),
            "diskGiB": ResourceRow("diskGiB", 500, 1.0, 500, 0),
        },
    )


@pytest.mark.parametrize(
    ("weigher", "count", "expected"),
    [
        pytest.param(spread, 3, [("a", 2), ("c", 1)], id="spread-emptiest-first"),
        pytest.param(pack, 3, [("b", 1), ("c", 2)], id="pack-fullest-first"),
        pytest.param(spread, 20, [("a", 4), ("b", 1), ("c", 3)], id="as-many-as-fit"),
    ],
)
def test_a_batch_is_given_out_as_single_placements_would_choose(
    weigher: Any, count: int, expected: list[tuple[str, int]]
) -> None:
    hosts = [_host("a", 0), _host("b", 6), _host("c", 2)]
    plan = assign(hosts, Shape(vcpu=2, memory_gib=1, disk_gib=1), count, weigher)
    assert [(host.node_id, n) for host, n in plan] == expected


def test_the_cli_places_a_batch_and_says_what_it_refused(fleet: Fleet, cli: Any) -> None:
    pool = _c2_pool(fleet)
    args = ("instances", "create", "--tenant", "acme", "--pool", pool["id"], "--flavor", "c2")
    made = cli(*args, "--count", "14", "--name", "web", "--json")
    assert made.exit_code == 0, made.stderr
    batch = made.json()
    assert (batch["placed"], batch["refused"]) == (12, 2)
    assert batch["items"][-1]["name"] == "web-12"
    text = cli(*args, "--count", "2", "--all-or-nothing")
    assert text.exit_code == 1
    assert "0 of 2 fit: 2 refused: no host fits (3 hosts): 3 × vcpu 8 of 8 allocated" in (
        text.stdout + text.stderr
    )
    assert cli(*args, "--count", "0").exit_code == 1
    single = cli(*args, "--json")  # no --count: the single create's answer, pending
    assert single.json()["state"] == "pending"


def test_http_count_answers_an_instance_batch(fleet: Fleet) -> None:
    from tests.support.http import served

    pool = _c2_pool(fleet)
    body = {"pool": pool["id"], "flavor": "c2"}
    with served(fleet) as (_server, api):
        made = api.post("/v1/instances?tenant=acme", json={**body, "count": 3, "name": "db"})
        assert made.status_code == 201, made.text
        assert [i["name"] for i in made.json()["items"]] == ["db-1", "db-2", "db-3"]
        refused = api.post(
            "/v1/instances?tenant=acme", json={**body, "count": 10, "allOrNothing": True}
        )
        assert refused.status_code == 409
        assert refused.json()["error"]["code"] == "CAPACITY_UNAVAILABLE"
        assert refused.json()["error"]["details"]["refused"] == 1
        too_many = api.post("/v1/instances?tenant=acme", json={**body, "count": 1001})
        assert too_many.status_code == 400
        single = api.post("/v1/instances?tenant=acme", json=body)
        assert single.status_code == 201 and single.json()["state"] == "running"
    assert len(fleet.api.instances.list(OP)["items"]) == 4


def test_the_spares_job_places_a_sizes_spares_as_one_batch(any_fleet: Fleet) -> None:
    from sqlmodel import select

    from bcfleet.jobs.spares import run_spares
    from bcfleet.store.models import NodeResource
    from tests.support.compute import serverless_tenant

    def generations() -> dict[str, int]:
        with any_fleet.read() as session:
            return {r.resource: r.generation for r in session.exec(select(NodeResource)).all()}

    serverless_tenant(any_fleet, spares={"small": 3})
    before = generations()
    counts = run_spares(any_fleet, any_fleet.now())
    assert (counts["placed"], counts["unschedulable"]) == (3, 0)
    # One claim for the three on the one host: each row's generation moved once, not thrice.
    assert generations() == {resource: n + 1 for resource, n in before.items()}
    invariants_ok(any_fleet)


def test_a_name_leaves_room_for_its_longest_suffix(fleet: Fleet) -> None:
    pool = _c2_pool(fleet)
    with pytest.raises(InvalidInputError) as refused:
        _batch(fleet, pool, 10, name="n" * 61)  # n…n-10 would be 64 characters
    assert refused.value.details["suffix"] == "-10"
    assert _batch(fleet, pool, 9, name="n" * 61)["items"][-1]["name"] == "n" * 61 + "-9"


def test_a_claim_some_host_refuses_on_sqlite_takes_the_others_and_names_it(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plan's claim is one statement told by its count of rows changed; when a host does
    not take all its rows, it is undone and run again, telling the host refused."""
    _c2_pool(fleet, hosts=2)  # 8 vCPU a host
    ids = {name: fleet.api.hosts.show(OP, host=name)["id"] for name in ("h1", "h2")}
    plan = [(HostSnapshot(node_id=ids["h1"]), 4), (HostSnapshot(node_id=ids["h2"]), 5)]
    with fleet.write() as session:
        refused = claim_plan(session, plan, {"vcpu": 2, "memoryGiB": 1, "diskGiB": 1})
    assert refused == {ids["h2"]}  # 5 × 2 vCPU is over its 8
    assert {r: row["allocated"] for r, row in rows(fleet, "h1").items()} == {
        "vcpu": 8, "memoryGiB": 4, "diskGiB": 4
    }  # fmt: skip
    assert {row["allocated"] for row in rows(fleet, "h2").values()} == {0}
    # every row taken: told by the count of rows changed, RETURNING's statement never run
    monkeypatch.setattr(batch_claims, "_CLAIM_PLAN", None)
    with fleet.write() as session:
        assert claim_plan(session, plan[1:], {"vcpu": 1, "memoryGiB": 1, "diskGiB": 1}) == set()
    assert {row["allocated"] for row in rows(fleet, "h2").values()} == {5}


def test_a_batch_on_a_provider_pool_makes_its_instances_provisioning(
    any_fleet: Fleet, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(FAKE_TOKEN_ENV, "demo-token")  # restored after the test
    with start_fake_provider(clock=clock) as fake:
        account = fake.create_account(any_fleet)
        any_fleet.api.pools.create(
            OP, tenant_id="root", name="demo-hz", kind="provider", provider_account=account["name"]
        )
        any_fleet.api.flavors.create(
            OP, tenant_id="root", pool_id="demo-hz", name="cx23", vcpu=2, memory_gib=4,
            disk_gib=40, offer_id="cx23",
        )  # fmt: skip
        batch = any_fleet.api.instances.create_batch(
            OP, tenant_id="root", pool_id="demo-hz", flavor="cx23", count=3, name="web"
        )
    assert (batch["placed"], batch["refused"], batch["reason"]) == (3, 0, None)
    assert [(i["name"], i["state"], i["nodeId"]) for i in batch["items"]] == [
        (f"web-{n}", "provisioning", None) for n in (1, 2, 3)
    ]
    listed = any_fleet.api.instances.list(OP)["items"]
    assert sorted(i["id"] for i in listed) == sorted(i["id"] for i in batch["items"])
    events = any_fleet.api.events.list(OP, limit=100)["items"]
    made = [e["subjectId"] for e in events if e["type"] == "instance.provisioning"]
    assert sorted(made) == sorted(i["id"] for i in batch["items"])

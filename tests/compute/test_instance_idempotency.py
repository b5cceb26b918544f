"""An instance create sent again with its idempotency key answers the first one's instance, once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from bcfleet.errors import ConflictError, InvalidInputError
from bcfleet.fleet import Fleet
from tests.support.builders import OP, flavor, token
from tests.support.capacity import invariants_ok, pool_with_hosts
from tests.support.http import error_code, served


def make(fleet: Fleet, pool: dict[str, Any], key: str | None, **fields: Any) -> dict[str, Any]:
    ask = {"tenant_id": "acme", "pool_id": pool["id"], "flavor": "c2", **fields}
    return fleet.api.instances.create(OP, idempotency_key=key, **ask)


def instance_ids(fleet: Fleet, tenant_id: str = "acme") -> list[str]:
    listed = fleet.api.instances.list(OP, tenant_id=tenant_id, include_deleted=True)
    return [i["id"] for i in listed["items"]]


def vcpu_used(fleet: Fleet, pool: dict[str, Any]) -> int:
    quota = fleet.api.quotas.show(OP, tenant_id="acme", pool=pool["id"])["items"][0]
    return int(quota["used"]["vcpu"])


@pytest.fixture
def pool(any_fleet: Fleet) -> dict[str, Any]:
    made = pool_with_hosts(any_fleet, hosts=2)
    flavor(any_fleet, made["id"], "c2", vcpu=2, memory_gib=4, disk_gib=10)
    flavor(any_fleet, made["id"], "c4", vcpu=4, memory_gib=8, disk_gib=20)
    return made


def test_the_same_key_and_input_answer_the_first_instance(
    any_fleet: Fleet, pool: dict[str, Any]
) -> None:
    first = make(any_fleet, pool, "web-1", name="web")
    again = make(any_fleet, pool, "web-1", name="web")
    assert again["id"] == first["id"] and again["state"] == "running"
    assert again["idempotencyKey"] == "web-1"
    assert instance_ids(any_fleet) == [first["id"]]
    assert vcpu_used(any_fleet, pool) == 2  # charged once
    invariants_ok(any_fleet)


def test_the_same_key_with_other_input_is_conflict(any_fleet: Fleet, pool: dict[str, Any]) -> None:
    first = make(any_fleet, pool, "web-1", name="web")
    for other in ({"flavor": "c4", "name": "web"}, {"name": "db"}, {}):
        with pytest.raises(ConflictError) as raised:
            make(any_fleet, pool, "web-1", **other)
        assert raised.value.code == "CONFLICT"
        assert raised.value.details == {"idempotencyKey": "web-1", "instance": first["id"]}
    assert instance_ids(any_fleet) == [first["id"]]


def test_a_replay_after_delete_answers_the_deleted_instance(
    any_fleet: Fleet, pool: dict[str, Any]
) -> None:
    first = make(any_fleet, pool, "web-1")
    any_fleet.api.instances.delete(OP, first["id"])
    again = make(any_fleet, pool, "web-1")
    assert (again["id"], again["state"]) == (first["id"], "deleted")
    assert instance_ids(any_fleet) == [first["id"]] and vcpu_used(any_fleet, pool) == 0


def test_keys_belong_to_a_tenant(any_fleet: Fleet, pool: dict[str, Any]) -> None:
    any_fleet.api.tenants.create(OP, "globex")
    any_fleet.api.pools.offer(OP, tenant_id="root", pool=pool["id"], to="globex")
    mine = make(any_fleet, pool, "web-1")
    theirs = make(any_fleet, pool, "web-1", tenant_id="globex")
    assert mine["id"] != theirs["id"]
    assert instance_ids(any_fleet, "globex") == [theirs["id"]]


def test_without_a_key_every_create_makes_one(any_fleet: Fleet, pool: dict[str, Any]) -> None:
    made = {make(any_fleet, pool, None, name="web")["id"] for _ in range(2)}
    assert len(made) == 2 and "idempotencyKey" not in any_fleet.api.instances.show(OP, made.pop())


@pytest.mark.parametrize("key", ["", "x" * 201, 7, "line\nbreak", True])
def test_bad_keys_are_invalid_input_and_make_nothing(
    any_fleet: Fleet, pool: dict[str, Any], key: Any
) -> None:
    with pytest.raises(InvalidInputError) as raised:
        make(any_fleet, pool, key)
    assert raised.value.details["field"] == "idempotencyKey"
    assert instance_ids(any_fleet) == []


def test_concurrent_creates_with_one_key_make_one_instance(
    any_fleet: Fleet, pool: dict[str, Any]
) -> None:
    with ThreadPoolExecutor(max_workers=4) as executor:
        answers = list(executor.map(lambda _: make(any_fleet, pool, "burst")["id"], range(8)))
    assert len(set(answers)) == 1
    assert instance_ids(any_fleet) == [answers[0]]
    assert vcpu_used(any_fleet, pool) == 2
    invariants_ok(any_fleet)


def test_over_http_a_retry_answers_the_same_instance(fleet: Fleet) -> None:
    made = pool_with_hosts(fleet, hosts=1)
    flavor(fleet, made["id"], "c2", vcpu=2, memory_gib=4, disk_gib=10)
    with served(fleet) as (_server, root):
        api = root.as_(token(fleet, "acme", "acme-admin"))
        ask = {"pool": made["name"], "flavor": "c2", "idempotencyKey": "web-1"}
        first = api.post("/v1/instances", json=ask)
        assert first.status_code == 201, first.text
        again = api.post("/v1/instances", json=ask)
        assert again.json()["id"] == first.json()["id"]
        assert again.json()["idempotencyKey"] == "web-1"
        other = api.post("/v1/instances", json={**ask, "name": "db"})
        assert (other.status_code, error_code(other)) == (409, "CONFLICT")
        too_long = api.post("/v1/instances", json={**ask, "idempotencyKey": "k" * 201})
        assert (too_long.status_code, error_code(too_long)) == (400, "INVALID_INPUT")
        assert len(api.get("/v1/instances").json()["items"]) == 1

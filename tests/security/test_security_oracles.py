"""No existence oracles: what another tenant holds answers exactly like what does not exist."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from bcfleet.errors import ConflictError, FleetError, ForbiddenError, NotFoundError
from bcfleet.fleet import Fleet
from bcfleet.http.app import all_operations
from tests.support.builders import OP, inventory
from tests.support.http import ApiClient, served, two_tenants

World = tuple[ApiClient, dict[str, Any]]

BODIES: dict[str, Any] = {
    "iam.tokens.create": {"name": "mallory"},
    "iam.tokens.rotate": {},
    "pools.update": {"gpuModel": "H100"},
    "pools.offer": {"tenant": "globex"},
    "flavors.create": {"name": "g1.huge", "vcpu": 64, "memoryGiB": 256, "diskGiB": 100},
    "flavors.update": {"vcpu": 1, "memoryGiB": 1, "diskGiB": 1},
    "hosts.report": inventory(cpus=2),
    "hosts.reportInstanceState": {"state": "running"},
    "instances.resize": {"flavor": "g1.small"},
    "quotas.set": {"vcpu": 1000},
    "services.setSize": {"size": "small"},
    "indexes.update": {"podSize": "small"},
    "environments.update": {"size": "small"},
}
OWNED_BY_PREFIX = {
    "/v1/webhooks": "webhook",
    "/v1/services": "service",
    "/v1/indexes": "index",
    "/v1/environments": "environment",
    "/v1/reservations": "reservation",
}
MADE_UP_ULID = "01HZZZZZZZZZZZZZZZZZZZZZZZ"


def _made_up(real: str) -> str:
    """An id of the same kind that nobody holds, or a name nobody uses."""
    prefix, sep, _rest = real.partition("_")
    return f"{prefix}_{MADE_UP_ULID}" if sep else f"nosuch-{real}"


def _values(acme: dict[str, Any], path: str) -> dict[str, str]:
    owner = next((k for p, k in OWNED_BY_PREFIX.items() if path.startswith(p)), "instance")
    return {
        "pool": acme["pool"]["id"],
        "name": acme["flavor"]["name"],
        "host": acme["host"]["id"],
        "tenant": "acme",
        "id": acme[owner]["id"],
        "delivery": "1",
        "account": "acme-hz",
        "token": acme["tokenId"],
    }


def _fill(path: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        path = path.replace("{" + key + "}", value)
    return path


def _answer(response: httpx.Response, values: dict[str, str]) -> tuple[int, str, str, str]:
    """Status, code, and message and details with the values asked about blanked out."""
    if response.status_code < 400:
        return response.status_code, "", "", ""
    error = response.json()["error"]
    message, details = error["message"], json.dumps(error["details"], sort_keys=True)
    for value in sorted(values.values(), key=len, reverse=True):
        message, details = message.replace(value, "X"), details.replace(value, "X")
    return response.status_code, error["code"], message, details


@pytest.fixture
def world(fleet: Fleet) -> Iterator[World]:
    made = two_tenants(fleet)
    made["acme"]["tokenId"] = fleet.api.iam.list_tokens(OP, tenant_id="acme")["items"][0]["id"]
    with served(fleet) as (_server, root):
        yield root.as_(made["globex"]["token"]), made


def test_every_id_of_another_tenant_answers_like_a_made_up_one(world: World) -> None:
    globex, made = world
    compared = 0
    for op in all_operations():
        if not op.path_params or op.operation_id == "events.stream":
            continue
        real = {k: v for k, v in _values(made["acme"], op.path).items() if k in op.path_params}
        fake = {k: (v if k == "delivery" else _made_up(v)) for k, v in real.items()}
        kwargs = {"json": BODIES.get(op.operation_id, {})} if op.request else {}
        answers = [
            _answer(globex.call(op.method, _fill(op.path, v), **kwargs), v) for v in (real, fake)
        ]
        assert answers[0] == answers[1], (op.operation_id, answers)
        assert answers[0][0] in (403, 404), (op.operation_id, answers)
        compared += 1
    assert compared >= 30


def test_a_taken_pool_name_answers_alike_whoever_holds_it(fleet: Fleet) -> None:
    made = two_tenants(fleet)
    globex = made["globex"]["token"]
    answers = []
    for name in ("acme-pool", "globex-pool"):  # acme's, then globex's own
        with pytest.raises(ConflictError) as caught:
            fleet.api.pools.create(globex, tenant_id="globex", name=name, kind="vps-host")
        error = caught.value
        assert "acme" not in error.message.replace(name, "") and made["acme"]["pool"]["id"] not in (
            error.message + json.dumps(error.details)
        )
        answers.append((error.code, error.message.replace(name, "X"), _blank(error, name)))
    assert answers[0] == answers[1]
    assert answers[0][1] == "pool name 'X' is not available; choose another"


def test_a_taken_host_name_answers_alike_whoever_holds_it(fleet: Fleet) -> None:
    made = two_tenants(fleet)
    globex = made["globex"]["token"]
    answers = []
    for name in ("acme-01", "globex-01"):
        with pytest.raises(ConflictError) as caught:
            fleet.api.hosts.adopt(globex, tenant_id="globex", pool="globex-pool", name=name)
        answers.append((caught.value.code, caught.value.message.replace(name, "X"),
                        _blank(caught.value, name)))  # fmt: skip
    assert answers[0] == answers[1]
    assert "acme" not in answers[0][1]


def _blank(error: FleetError, value: str) -> str:
    return json.dumps(error.details, sort_keys=True).replace(value, "X")


def test_hosts_of_a_pool_offered_to_a_tenant_are_not_found_to_it(fleet: Fleet) -> None:
    """The pool is visible (offered), its hosts are not: 404 like a made-up host, never 403."""
    made = two_tenants(fleet)
    fleet.api.pools.offer(OP, tenant_id="root", pool=made["acme"]["pool"]["id"], to="globex")
    globex = made["globex"]["token"]
    host = made["acme"]["host"]
    api = fleet.api
    verbs = {
        "show": lambda ref: api.hosts.show(globex, host=ref),
        "update": lambda ref: api.hosts.update(globex, host=ref, labels={}),
        "drain": lambda ref: api.hosts.set_state(globex, host=ref, draining=True),
        "remove": lambda ref: api.hosts.remove(globex, host=ref),
        "report": lambda ref: api.hosts.report(globex, host=ref, inventory=inventory(cpus=2)),
        "specs": lambda ref: api.instances.specs_for_host(globex, ref),
        "reservations": lambda ref: api.reservations.for_host(globex, ref),
    }
    for verb, call in verbs.items():
        for real in (host["id"], host["name"]):
            answers = []
            for ref in (real, _made_up(real)):
                with pytest.raises(FleetError) as caught:
                    call(ref)
                answers.append((caught.value.code, caught.value.message.replace(ref, "X")))
            assert answers[0] == answers[1], (verb, answers)
            assert answers[0][0] == "NOT_FOUND", (verb, answers)


def test_a_viewer_writing_its_own_tenants_host_is_forbidden(fleet: Fleet) -> None:
    """A 403 stays right where the caller can see the object but lacks the action."""
    made = two_tenants(fleet)
    viewer = fleet.api.iam.create_token(OP, tenant_id="acme", name="val", role="viewer")["token"]
    assert fleet.api.hosts.show(viewer, host="acme-01")["name"] == "acme-01"
    with pytest.raises(ForbiddenError):
        fleet.api.hosts.set_state(viewer, host="acme-01", draining=True)
    del made


def test_quotas_set_does_not_tell_which_tenants_exist(world: World) -> None:
    globex, made = world
    fleet_pool = made["globex"]["pool"]["name"]
    answers = []
    for tenant in ("acme", "nosuch"):  # acme exists but is not offered globex's pool
        response = globex.put(f"/v1/quotas/{tenant}/{fleet_pool}", json={"vcpu": 4})
        answers.append(_answer(response, {"tenant": tenant}))
    assert answers[0] == answers[1]
    assert answers[0][:2] == (404, "NOT_FOUND")
    own = globex.put(f"/v1/quotas/globex/{fleet_pool}", json={"vcpu": 4})
    assert own.status_code == 200


def test_quotas_for_an_offered_tenant_still_work(fleet: Fleet) -> None:
    made = two_tenants(fleet)
    pool = made["globex"]["pool"]["id"]
    fleet.api.pools.offer(OP, tenant_id="root", pool=pool, to="acme")
    quota = fleet.api.quotas.set(
        made["globex"]["token"], tenant_id="acme", pool=pool, limits={"vcpu": 8}
    )
    assert quota["limits"] == {"vcpu": 8}
    with pytest.raises(NotFoundError):
        fleet.api.quotas.set(OP, tenant_id="nosuch", pool=pool, limits={"vcpu": 8})


def test_only_the_operator_offers_pools_across_tenants(fleet: Fleet) -> None:
    made = two_tenants(fleet)
    acme = made["acme"]["token"]
    pool = made["acme"]["pool"]["id"]
    answers = []
    for to in ("globex", "nosuch"):
        with pytest.raises(ForbiddenError) as caught:
            fleet.api.pools.offer(acme, tenant_id="acme", pool=pool, to=to)
        answers.append((caught.value.message.replace(to, "X"), _blank(caught.value, to)))
    assert answers[0] == answers[1]
    globex_pools = fleet.api.pools.list(made["globex"]["token"])["items"]
    assert [p["id"] for p in globex_pools] == [made["globex"]["pool"]["id"]]
    offered = fleet.api.pools.offer(OP, tenant_id="root", pool=pool, to="globex")
    assert offered["offeredTo"] == ["globex"]
    taken_back = [
        fleet.api.pools.offer(acme, tenant_id="acme", pool=pool, to=to, revoke=True)
        for to in ("nosuch", "globex")
    ]
    assert taken_back[0]["offeredTo"] == ["globex"] and taken_back[1]["offeredTo"] == []

"""Routes × tenants: globex's token can neither read nor change acme's objects through any route."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from bcfleet.fleet import Fleet
from bcfleet.http.app import all_operations
from tests.support.builders import OP, inventory
from tests.support.http import ApiClient, served, two_tenants

# A valid body per operation, so that only the tenant check can refuse the request.
BODIES: dict[str, Any] = {
    "tenants.create": {"id": "initech"},
    "iam.tokens.create": {"name": "mallory", "role": "admin"},
    "iam.tokens.rotate": {"expiresIn": "1d"},
    "pools.create": {"name": "stolen", "kind": "vps-host"},
    "pools.update": {"gpuModel": "H100"},
    "pools.offer": {"tenant": "globex"},
    "flavors.create": {"name": "g1.huge", "vcpu": 64, "memoryGiB": 256, "diskGiB": 100},
    "flavors.update": {"vcpu": 1, "memoryGiB": 1, "diskGiB": 1},
    "hosts.adopt": {"pool": "acme-pool", "name": "sneaky-01"},
    "hosts.report": inventory(cpus=2),
    "hosts.reportInstanceState": {"state": "running"},
    "hosts.reportGuests": {"health": {"state": "degraded", "message": "x"}, "guests": []},
    "instances.create": {"pool": "acme-pool", "flavor": "g1.small"},
    "instances.resize": {"flavor": "g1.small"},
    "quotas.set": {"vcpu": 1000},
    "webhooks.create": {"url": "https://globex.example/stolen"},
    "settings.compute.save": {"spares": {"large": 5}},
    "settings.compute.draft": {"spares": {"large": 5}},
    "services.create": {"workspace": "prod", "name": "stolen"},
    "services.setSize": {"size": "small"},
    "indexes.create": {"workspace": "prod", "name": "stolen"},
    "indexes.update": {"podSize": "small"},
    "environments.create": {"name": "stolen", "size": "medium"},
    "environments.update": {"size": "small"},
    "reservations.create": {"pool": "acme-pool", "gpus": 1, "duration": "1h"},
    "reservations.createBatch": {
        "pool": "acme-pool",
        "requests": [{"gpus": 1, "duration": "1h"}],
    },
    "capacity.preview": {"pool": "acme-pool", "gpus": 1, "duration": "1h"},
    "providerAccounts.create": {
        "name": "stolen",
        "provider": "hetzner",
        "tokenEnv": "HCLOUD_TOKEN",
    },
}
OWNED_BY_PREFIX = {
    "/v1/webhooks": "webhook",
    "/v1/services": "service",
    "/v1/indexes": "index",
    "/v1/environments": "environment",
    "/v1/reservations": "reservation",
}

PUBLIC = {"meta.healthz", "meta.metrics", "meta.openapi"}
STREAMS = {"events.stream"}  # covered by the SSE tests, with the same tenant rules


def _path_values(acme: dict[str, Any], path: str) -> dict[str, list[str]]:
    """Every way to name acme's objects in a path: ids and names."""
    owner = next((k for p, k in OWNED_BY_PREFIX.items() if path.startswith(p)), "instance")
    return {
        "pool": [acme["pool"]["id"], acme["pool"]["name"]],
        "name": [acme["flavor"]["name"]],
        "host": [acme["host"]["id"], acme["host"]["name"]],
        "tenant": ["acme"],
        "id": [acme[owner]["id"]],
        "delivery": ["1"],
        "account": ["acme-hz"],
        "tokenId": [acme["tokenId"]],
        "job": ["vps.hosts"],  # root's, not acme's: refused all the same
    }


def _requests(op: Any, acme: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """The requests that aim one operation at acme: through the path, and as ?tenant=acme."""
    values = _path_values(acme, op.path)
    params = op.path_params
    body = BODIES.get(op.operation_id)
    kwargs: dict[str, Any] = {} if body is None and op.request is None else {"json": body}
    if params:
        for i in range(max(len(values[p]) for p in params)):
            path = op.path
            for p in params:
                path = path.replace("{" + p + "}", values[p][min(i, len(values[p]) - 1)])
            yield path, dict(kwargs)
    if not params:  # its own list or create, as globex
        yield op.path, dict(kwargs)
    if any(q.name == "tenant" for q in op.query):
        path = op.path
        for p in params:  # globex's own objects, asked for as acme
            path = path.replace("{" + p + "}", values[p][0])
        yield path, {**kwargs, "params": {"tenant": "acme"}}


def _acme_state(fleet: Fleet) -> str:
    """Everything acme owns, as root sees it: any change shows up here."""
    api = fleet.api
    state = {
        "pools": api.pools.list(OP, tenant_id="acme"),
        "flavors": api.flavors.list(OP, tenant_id="acme", pool_id="acme-pool"),
        "hosts": api.hosts.show(OP, host="acme-01"),
        "instances": api.instances.list(OP, tenant_id="acme", include_deleted=True),
        "quotas": api.quotas.show(OP, tenant_id="acme"),
        "webhooks": api.webhooks.list(OP, tenant_id="acme"),
        "services": api.services.list(OP, tenant_id="acme"),
        "indexes": api.indexes.list(OP, tenant_id="acme"),
        "environments": api.environments.list(OP, tenant_id="acme"),
        "settings": api.settings.compute_show(OP, tenant_id="acme"),
        "providerAccounts": api.provider_accounts.list(OP, tenant_id="acme"),
        "reservations": api.reservations.list(OP, tenant_id="acme", include_released=True),
        "usage": api.usage.list(OP, tenant_id="acme"),
        "events": api.events.list(OP, tenant_id="acme"),
        "tenants": api.tenants.list(OP),
    }
    return json.dumps(state, sort_keys=True)


@pytest.fixture
def world(any_fleet: Fleet) -> Iterator[tuple[ApiClient, dict[str, Any]]]:
    made = two_tenants(any_fleet)
    made["acme"]["tokenId"] = any_fleet.api.iam.list_tokens(OP, tenant_id="acme")["items"][0]["id"]
    with served(any_fleet) as (_server, root):
        yield root.as_(made["globex"]["token"]), made


def test_every_route_aimed_at_another_tenants_objects_is_refused(
    any_fleet: Fleet, world: tuple[ApiClient, dict[str, Any]]
) -> None:
    fleet = any_fleet
    globex, made = world
    acme = made["acme"]
    before = _acme_state(fleet)
    tried: set[str] = set()
    for op in all_operations():
        if op.operation_id in PUBLIC | STREAMS:
            continue
        for path, kwargs in _requests(op, acme):
            response = globex.call(op.method, path, **kwargs)
            tried.add(op.operation_id)
            if response.status_code < 400:
                json_answer = response.headers["content-type"].startswith("application/json")
                body = response.json() if json_answer else response.text
                _assert_nothing_of_acme(op.operation_id, body, acme)
            else:
                assert response.status_code in (403, 404), (op.operation_id, path, response.text)
    assert _acme_state(fleet) == before
    untried = {op.operation_id for op in all_operations()} - PUBLIC - STREAMS - tried
    assert not untried, f"operations the matrix does not cover: {sorted(untried)}"


def _assert_nothing_of_acme(operation: str, body: Any, acme: dict[str, Any]) -> None:
    """A 2xx answer to globex may only be about globex's own objects."""
    text = json.dumps(body)
    kinds = ("pool", "flavor", "host", "instance", "webhook", "service", "index", "environment",
             "reservation")  # fmt: skip
    secrets = [acme[k]["id"] for k in kinds]
    secrets.append("acme")
    for secret in secrets:
        assert secret not in text, f"{operation} told globex about {secret}: {text[:300]}"


def test_lists_show_a_tenant_only_its_own_objects(
    world: tuple[ApiClient, dict[str, Any]],
) -> None:
    globex, made = world
    for path in (
        "/v1/tenants",
        "/v1/pools",
        "/v1/hosts",
        "/v1/events",
        "/v1/instances",
        "/v1/webhooks",
    ):
        body = globex.get(path).json()
        assert body["items"], path
        _assert_nothing_of_acme(path, body, made["acme"])


def test_no_route_acts_as_the_local_operator_without_a_token(
    world: tuple[ApiClient, dict[str, Any]],
) -> None:
    globex, _made = world
    anonymous = globex.as_(None)
    for op in all_operations():
        if op.operation_id in PUBLIC:
            continue
        path = op.path.replace("{pool}", "acme-pool").replace("{host}", "acme-01")
        path = path.replace("{name}", "g1.small").replace("{tenant}", "acme")
        path = path.replace("{id}", "ins_x").replace("{delivery}", "1")
        response = anonymous.call(op.method, path, json=BODIES.get(op.operation_id))
        assert response.status_code == 401, (op.operation_id, response.text)

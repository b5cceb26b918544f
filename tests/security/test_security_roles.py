"""Every /v1 route × every role of every kind of tenant: one expected table, and roles that only add.

The world (tests/support/security_world.py): hostco owns the pool "shared" and its host, offered
to acme, which runs an instance and holds a reservation there and owns the other objects
the paths name. Each (kind, role) runs every operation, in a fleet of its own, and each
answer is one letter:

    O  2xx: done
    C  409/422/400/503: let in, then judged on the object's state or the input
    F  403: seen but not allowed
    H  404: not there, as far as the caller may know
    U  401 from the provider an account names (no HCLOUD_TOKEN here): let in

EXPECTED holds three letters per kind: admin, member, viewer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.http.app import all_operations
from bcfleet.http.operations import Operation
from tests.support.builders import inventory
from tests.support.fleet import T0, open_fleet
from tests.support.http import error_code, served
from tests.support.security_world import KINDS, ROLES, build_world

PUBLIC = {"meta.healthz", "meta.metrics", "meta.openapi"}
STREAMS = {"events.stream"}  # the SSE tests cover it, with the same tenant rules

BODIES: dict[str, Any] = {
    "tenants.create": {"id": "newco"},
    "iam.tokens.create": {"name": "mallory", "role": "admin"},
    "iam.tokens.rotate": {},
    "pools.create": {"name": "mine", "kind": "vps-host"},
    "pools.update": {"gpuModel": "H100"},
    "pools.offer": {"tenant": "globex"},
    "flavors.create": {"name": "g1.huge", "vcpu": 8, "memoryGiB": 8, "diskGiB": 40},
    "flavors.update": {"vcpu": 2, "memoryGiB": 4, "diskGiB": 40},
    "hosts.adopt": {"pool": "shared", "name": "sneaky-01"},
    "hosts.report": inventory(cpus=16, gpus=2),
    "hosts.reportInstanceState": {"state": "running"},
    "hosts.reportGuests": {"health": {"state": "degraded", "message": "libvirt unreachable"}},
    "instances.create": {"pool": "shared", "flavor": "g1.small"},
    "instances.resize": {"flavor": "g1.medium"},
    "quotas.set": {"vcpu": 0},
    "webhooks.create": {"url": "https://example.com/hook"},
    "settings.compute.save": {"spares": {"large": 1}},
    "settings.compute.draft": {"spares": {"large": 1}},
    "services.create": {"workspace": "prod", "name": "api"},
    "services.setSize": {"size": "small"},
    "indexes.create": {"workspace": "prod", "name": "wiki"},
    "indexes.update": {"podSize": "small"},
    "environments.create": {"name": "dev", "size": "medium"},
    "environments.update": {"size": "small"},
    "reservations.create": {"pool": "shared", "gpus": 1, "duration": "1h"},
    "reservations.createBatch": {"pool": "shared", "requests": [{"gpus": 1, "duration": "1h"}]},
    "capacity.preview": {"pool": "shared", "gpus": 1, "duration": "1h"},
    "providerAccounts.create": {"name": "hz", "provider": "hetzner", "tokenEnv": "HCLOUD_TOKEN"},
}
QUERIES: dict[str, dict[str, str]] = {
    "services.deployStream": {"pollSeconds": "1", "timeoutSeconds": "1"},
}
ID_OWNER = {
    "/v1/webhooks": "webhook",
    "/v1/services": "service",
    "/v1/indexes": "index",
    "/v1/environments": "environment",
    "/v1/reservations": "reservation",
    "/v1/instances": "instance",
}
ADMITTED = "OCU"
"""The letters of an answer past the authorization checks."""

# Columns: root, owner (hostco), offered (acme), unrelated (globex); in each, the letters
# of its admin, member and viewer.
EXPECTED: dict[str, tuple[str, str, str, str]] = {
    "tenants.list":             ("OOO", "OOO", "OOO", "OOO"),
    "tenants.create":           ("OFF", "FFF", "FFF", "FFF"),
    "iam.tokens.create":        ("OFF", "FFF", "OFF", "FFF"),
    "iam.tokens.list":          ("OFF", "FFF", "OOO", "FFF"),
    "iam.tokens.revoke":        ("OFF", "FFF", "OFF", "FFF"),
    "iam.tokens.rotate":        ("OFF", "FFF", "OFF", "FFF"),
    "pools.list":               ("OOO", "OOO", "OOO", "OOO"),
    "pools.create":             ("OFF", "OFF", "OFF", "OFF"),
    "pools.show":               ("OHH", "OOO", "OOO", "HHH"),
    "pools.update":             ("OHH", "OFF", "FFF", "HHH"),
    "pools.offer":              ("OHH", "FFF", "FFF", "HHH"),
    "providerAccounts.create":  ("OFF", "FFF", "FFF", "FFF"),
    "providerAccounts.list":    ("OOO", "OOO", "OOO", "OOO"),
    "providerAccounts.offers":  ("HHH", "HHH", "UUU", "HHH"),
    "flavors.create":           ("OHH", "OFF", "FFF", "HHH"),
    "flavors.list":             ("OHH", "OOO", "OOO", "HHH"),
    "flavors.get":              ("OHH", "OOO", "OOO", "HHH"),
    "flavors.update":           ("OHH", "OFF", "FFF", "HHH"),
    "hosts.list":               ("OOO", "OOO", "OOO", "OOO"),
    "hosts.adopt":              ("OHH", "OFF", "FFF", "HHH"),
    "hosts.show":               ("OHH", "OOO", "HHH", "HHH"),
    "hosts.report":             ("OHH", "OFF", "HHH", "HHH"),
    "hosts.drain":              ("OHH", "OFF", "HHH", "HHH"),
    "hosts.ready":              ("OHH", "OFF", "HHH", "HHH"),
    "instances.create":         ("OHH", "OOF", "OOF", "HHH"),
    "instances.list":           ("OOO", "OOO", "OOO", "OOO"),
    "instances.show":           ("OHH", "HHH", "OOO", "HHH"),
    "instances.stop":           ("OHH", "HHH", "OOF", "HHH"),
    "instances.resize":         ("OHH", "HHH", "OOF", "HHH"),
    "instances.spec":           ("OHH", "HHH", "OOO", "HHH"),
    "hosts.specs":              ("OHH", "OFF", "HHH", "HHH"),
    "hosts.reportInstanceState":("OHH", "HFF", "HHH", "HHH"),
    "hosts.reportGuests":       ("OHH", "OFF", "HHH", "HHH"),
    "quotas.set":               ("OHH", "OFF", "FFF", "HHH"),
    "quotas.show":              ("OOO", "OOO", "OOO", "OOO"),
    "reservations.create":      ("OHH", "OOF", "OOF", "HHH"),
    "reservations.createBatch": ("OHH", "OOF", "OOF", "HHH"),
    "reservations.list":        ("OOO", "OOO", "OOO", "OOO"),
    "reservations.get":         ("OHH", "HHH", "OOO", "HHH"),
    "hosts.reservations":       ("OHH", "OFF", "HHH", "HHH"),
    "capacity.preview":         ("OHH", "OOF", "OOF", "HHH"),
    "settings.compute.show":    ("OFF", "OFF", "OFF", "OFF"),
    "settings.compute.save":    ("OFF", "OFF", "OFF", "OFF"),
    "settings.compute.draft":   ("OFF", "OFF", "OFF", "OFF"),
    "services.create":          ("OOF", "OOF", "OOF", "OOF"),
    "services.list":            ("OOO", "OOO", "OOO", "OOO"),
    "services.show":            ("OHH", "HHH", "OOO", "HHH"),
    "services.deploy":          ("CHH", "HHH", "CCF", "HHH"),
    "services.deployStream":    ("OHH", "HHH", "OOF", "HHH"),
    "services.start":           ("CHH", "HHH", "CCF", "HHH"),
    "services.setSize":         ("OHH", "HHH", "OOF", "HHH"),
    "indexes.create":           ("OOF", "OOF", "OOF", "OOF"),
    "indexes.list":             ("OOO", "OOO", "OOO", "OOO"),
    "indexes.show":             ("OHH", "HHH", "OOO", "HHH"),
    "indexes.update":           ("OHH", "HHH", "OOF", "HHH"),
    "environments.create":      ("OOF", "OOF", "OOF", "OOF"),
    "environments.list":        ("OOO", "OOO", "OOO", "OOO"),
    "environments.show":        ("OHH", "HHH", "OOO", "HHH"),
    "environments.update":      ("OHH", "HHH", "OOF", "HHH"),
    "usage.list":               ("OOO", "OOO", "OOO", "OOO"),
    "usage.export":             ("OOO", "OOO", "OOO", "OOO"),
    "usage.deadLetters":        ("OOO", "OOO", "OOO", "OOO"),
    "usage.replay":             ("OFF", "FFF", "FFF", "FFF"),
    "events.list":              ("OOO", "OOO", "OOO", "OOO"),
    "webhooks.create":          ("OFF", "OFF", "OFF", "OFF"),
    "webhooks.list":            ("OOO", "OOO", "OOO", "OOO"),
    "webhooks.show":            ("OHH", "HHH", "OOO", "HHH"),
    "webhooks.deliveries":      ("OHH", "HHH", "OOO", "HHH"),
    "webhooks.redeliver":       ("OHH", "HHH", "OFF", "HHH"),
    "instances.start":          ("OHH", "HHH", "OOF", "HHH"),
    "reservations.cancel":      ("OHH", "HHH", "OOF", "HHH"),
    "services.undeploy":        ("OHH", "HHH", "OOF", "HHH"),
    "pools.revokeOffer":        ("OHH", "OFF", "FFF", "HHH"),
    "flavors.delete":           ("OHH", "OFF", "FFF", "HHH"),
    "instances.delete":         ("OHH", "HHH", "OOF", "HHH"),
    "webhooks.delete":          ("OHH", "HHH", "OFF", "HHH"),
    "services.delete":          ("OHH", "HHH", "OOF", "HHH"),
    "indexes.delete":           ("OHH", "HHH", "OOF", "HHH"),
    "jobs.list":                ("OOO", "FFF", "FFF", "FFF"),
    "jobs.runs":                ("OOO", "FFF", "FFF", "FFF"),
    "jobs.run":                 ("OFF", "FFF", "FFF", "FFF"),
    "iam.whoami":               ("OOO", "OOO", "OOO", "OOO"),
    "iam.policies.list":        ("OFF", "FFF", "OOO", "FFF"),
    "doctor.check":             ("OOO", "FFF", "FFF", "FFF"),
    # a delete's dependents: whoever may read the row is told (another tenant's rows unnamed)
    "dependents.instance":      ("OHH", "HHH", "OOO", "HHH"),
    "dependents.offer":         ("OHH", "OOO", "OOO", "HHH"),
    "dependents.flavor":        ("OHH", "OOO", "OOO", "HHH"),
    "dependents.service":       ("OHH", "HHH", "OOO", "HHH"),
    "dependents.environment":   ("OHH", "HHH", "OOO", "HHH"),
    "dependents.webhook":       ("OHH", "HHH", "OOO", "HHH"),
    "dependents.token":         ("OFF", "FFF", "OOO", "FFF"),
    "dependents.pool":          ("OHH", "OOO", "OOO", "HHH"),
    "dependents.providerAccount": ("HHH", "HHH", "OOO", "HHH"),
    "dependents.host":          ("OHH", "OOO", "HHH", "HHH"),
    "dependents.tenant":        ("OFF", "FFF", "FFF", "FFF"),
    "environments.delete":      ("OHH", "HHH", "OOF", "HHH"),
    "hosts.remove":             ("CHH", "CFF", "HHH", "HHH"),
    "providerAccounts.delete":  ("HFF", "HFF", "OFF", "HFF"),
    "pools.delete":             ("CHH", "CFF", "FFF", "HHH"),
    "tenants.delete":           ("CFF", "FFF", "FFF", "FFF"),
}  # fmt: skip

RUN_LAST = (
    "iam.tokens.rotate",
    "iam.tokens.revoke",
    "instances.start",
    "reservations.cancel",
    "services.undeploy",
    "pools.revokeOffer",
    "flavors.delete",
    "instances.delete",
    "webhooks.delete",
    "services.delete",
    "indexes.delete",
    "environments.delete",
    "hosts.remove",
    "providerAccounts.delete",
    "pools.delete",
    "tenants.delete",
)
"""Operations that change what later ones find, in the order they run after all the others."""


def _path(op: Operation, world: dict[str, Any]) -> str:
    """The operation's path aimed at the world's objects."""
    acme = world["acme"]
    owner = next((k for p, k in ID_OWNER.items() if op.path.startswith(p)), "instance")
    values = {
        "pool": "shared",
        "name": "g1.small",
        "host": "shared-h1",
        "tenant": "initech" if op.operation_id == "pools.revokeOffer" else "acme",
        "id": acme[owner]["id"],
        "delivery": str(acme["delivery"]["id"]),
        "account": "acme-hz",
        "tokenId": acme["token"]["id"],
        "job": "vps.hosts",
    }
    path = op.path
    for param in op.path_params:
        path = path.replace("{" + param + "}", values[param])
    return path


def _letter(status: int) -> str:
    if status < 300:
        return "O"
    return {401: "U", 403: "F", 404: "H"}.get(
        status, "C" if status in (400, 409, 422, 503) else "?"
    )


def _ordered() -> list[Operation]:
    ops = [op for op in all_operations() if op.operation_id not in PUBLIC | STREAMS]
    first = [op for op in ops if op.operation_id not in RUN_LAST]
    last = sorted(
        (op for op in ops if op.operation_id in RUN_LAST),
        key=lambda op: RUN_LAST.index(op.operation_id),
    )
    return first + last


def _run(tmp_path: Path, kind: str, role: str) -> dict[str, str]:
    """Every operation as (kind, role), in a fresh fleet: operation id → letter."""
    fleet = open_fleet(f"sqlite:///{tmp_path / f'{kind}-{role}.db'}", FakeClock(T0))
    try:
        world = build_world(fleet)
        with served(fleet) as (_server, root):
            # Status codes only: the HTTP tests check the answers against the OpenAPI document.
            bearer = {"Authorization": f"Bearer {world['tokens'][(kind, role)]}"}
            letters = {}
            for op in _ordered():
                kwargs: dict[str, Any] = {}
                body = BODIES.get(op.operation_id)
                if body is not None or op.request is not None:
                    kwargs["json"] = body
                if op.operation_id in QUERIES:
                    kwargs["params"] = QUERIES[op.operation_id]
                response = root.http.request(op.method, _path(op, world), headers=bearer, **kwargs)
                letters[op.operation_id] = _letter(response.status_code)
        return letters
    finally:
        fleet.close()


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict[str, str]]]:
    """operation id → kind → three letters (admin, member, viewer)."""
    tmp = tmp_path_factory.mktemp("roles")
    with pytest.MonkeyPatch.context() as env:
        env.delenv("HCLOUD_TOKEN", raising=False)  # offers stop at the provider's door
        runs = {(k, r): _run(tmp, k, r) for k in KINDS for r in ROLES}
    table: dict[str, dict[str, str]] = {}
    for op in _ordered():
        table[op.operation_id] = {
            kind: "".join(runs[(kind, role)][op.operation_id] for role in ROLES) for kind in KINDS
        }
    yield table


def test_every_route_answers_every_caller_as_the_table_says(
    observed: dict[str, dict[str, str]],
) -> None:
    """The answers observed are the table's, and in them too roles only add (one test, so the
    twelve fleets behind `observed` are built once, not once on each worker)."""
    wrong = [
        f"{op} as {kind}: expected {want}, got {observed[op][kind]}"
        for op, row in EXPECTED.items()
        if op in observed
        for kind, want in zip(KINDS, row, strict=True)
        if observed[op][kind] != want
    ]
    assert not wrong, "\n".join(wrong)
    broken = _roles_taken_away(observed)
    assert not broken, "\n".join(broken)


def test_the_table_covers_every_route() -> None:
    ops = {op.operation_id for op in all_operations()} - PUBLIC - STREAMS
    assert set(EXPECTED) == ops


def _admitted(letter: str) -> bool:
    return letter in ADMITTED


def _roles_taken_away(table: dict[str, dict[str, str]]) -> list[str]:
    """Where a viewer may do what a member may not, or a member what an admin may not."""
    return [
        f"{op} as {kind}: {letters} (admin, member, viewer)"
        for op, row in table.items()
        for kind, letters in row.items()
        if (_admitted(letters[2]) and not _admitted(letters[1]))
        or (_admitted(letters[1]) and not _admitted(letters[0]))
    ]


def test_roles_only_add() -> None:
    """Whatever a viewer may do a member may, and whatever a member may do an admin may: in the
    table (the answers observed are checked against it and for this in the test above)."""
    expected = {op: dict(zip(KINDS, row, strict=True)) for op, row in EXPECTED.items()}
    broken = _roles_taken_away(expected)
    assert not broken, "\n".join(broken)


def test_no_role_of_a_tenant_the_pool_is_offered_to_sees_its_hosts(fleet: Fleet) -> None:
    """A viewer of acme read hostco's host with its inventory while acme's admin got 403."""
    world = build_world(fleet)
    host = world["host"]
    with served(fleet) as (_server, root):
        for role in ROLES:
            acme = root.as_(world["tokens"][("offered", role)])
            for ref in (host["name"], host["id"]):
                shown = acme.get(f"/v1/hosts/{ref}")
                assert (shown.status_code, error_code(shown)) == (404, "NOT_FOUND"), role
                assert "inventory" not in shown.text
            listed = acme.get("/v1/hosts").json()["items"]
            assert host["id"] not in json.dumps(listed), role
            assert acme.get("/v1/hosts", params={"pool": "shared"}).status_code == 404
            assert acme.get("/v1/pools/shared").status_code == 200  # the pool itself: yes
        for role in ROLES:
            owner = root.as_(world["tokens"][("owner", role)])
            assert owner.get(f"/v1/hosts/{host['name']}").json()["inventory"]["gpus"], role
            assert [h["id"] for h in owner.get("/v1/hosts").json()["items"]] == [host["id"]]


def test_a_flavors_dependents_name_no_other_tenants_instance(fleet: Fleet) -> None:
    """hostco's admin asking what uses its flavor was told acme's instance by name and id."""
    world = build_world(fleet)
    vm = world["acme"]["instance"]
    with served(fleet) as (_server, root):
        path = "/v1/pools/shared/flavors/g1.small/dependents"
        for role in ROLES:
            owner = root.as_(world["tokens"][("owner", role)]).get(
                path, params={"tenant": "hostco"}
            )
            assert owner.status_code == 200, (role, owner.text)
            assert owner.json()["outcome"] == "archived"  # used, as its delete would decide
            assert vm["id"] not in owner.text and vm["name"] not in owner.text, role
            mine = root.as_(world["tokens"][("offered", role)]).get(path, params={"tenant": "acme"})
            assert [d["id"] for d in mine.json()["items"]] == [vm["id"]], role
        everyone = root.get(path).json()["items"]  # root acting as root, not as hostco
        assert vm["id"] in [d["id"] for d in everyone]

"""A host agent's token: bound to one host, it does that host's agent work and nothing else.

`hosts.report` needed the pool owner's admin, so a host's agent held a token that could mint
tokens and delete the fleet. An agent principal (`--role agent --host H`) now gets one
statement: `compute:hosts:report` on its tenant's pools for the node H only
(domain.policy.agent_statements). It reports H's inventory and its guests' states and reads
H's specs and GPU bookings; every other operation, over the Python API and over HTTP, is
FORBIDDEN or NOT_FOUND, and a revoked or expired agent token is UNAUTHENTICATED.

The world: tests/support/security_world.py (hostco owns the pool "shared" and its host
shared-h1, offered to acme, which runs an instance there), plus a second host of hostco
(shared-h2) and a host of globex's own pool (globex-h1).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from bcfleet.clock import FakeClock
from bcfleet.domain.guest_view import opaque_guest_id
from bcfleet.errors import (
    ConflictError,
    FleetError,
    InvalidInputError,
    NotFoundError,
    UnauthenticatedError,
)
from bcfleet.fleet import Fleet
from bcfleet.http.app import all_operations
from tests.security.test_security_roles import (
    BODIES,
    PUBLIC,
    QUERIES,
    STREAMS,
    _letter,
    _ordered,
    _path,
)
from tests.support.builders import OP, inventory
from tests.support.fleet import run_cli
from tests.support.http import ApiClient, error_code, served
from tests.support.security_world import PLACEMENT, build_world

AGENT_WORK = {
    "hosts.report",
    "hosts.specs",
    "hosts.reservations",
    "hosts.reportInstanceState",
    "hosts.reportGuests",
}
"""The operations of a host's agent; every other one is refused to its token, but for SELF."""
SELF = {"iam.whoami"}
"""What any token may ask: who it is (its own tenant, role and principal, nothing else)."""
HOST_OPERATIONS = {op.operation_id for op in all_operations() if "{host}" in op.path}
REFUSED = {"FORBIDDEN", "NOT_FOUND"}


@pytest.fixture
def world(fleet: Fleet) -> dict[str, Any]:
    """build_world, another host of hostco's, a host of globex's, and shared-h1's agent token."""
    api = fleet.api
    world = build_world(fleet)
    api.hosts.adopt(OP, tenant_id="hostco", pool=world["pool"]["id"], name="shared-h2",
                    labels=PLACEMENT)  # fmt: skip
    api.hosts.report(OP, host="shared-h2", inventory=inventory(cpus=16))
    theirs = api.pools.create(OP, tenant_id="globex", name="globex-pool", kind="vps-host")
    api.hosts.adopt(OP, tenant_id="globex", pool=theirs["id"], name="globex-h1")
    made = api.iam.create_token(OP, tenant_id="hostco", name="shared-h1-agent", role="agent",
                                host="shared-h1")  # fmt: skip
    world["agent"] = made
    world["guest"] = opaque_guest_id(world["host"]["id"], world["acme"]["instance"]["id"])
    return world


def test_the_agent_token_does_its_hosts_work_over_python(
    fleet: Fleet, world: dict[str, Any]
) -> None:
    agent = world["agent"]["token"]
    reported = fleet.api.hosts.report(agent, host="shared-h1", inventory=inventory(cpus=32))
    assert reported["id"] == world["host"]["id"]
    [spec] = fleet.api.instances.specs_for_host(agent, "shared-h1")["items"]
    assert spec["id"] == world["guest"] and "name" not in spec
    [booking] = fleet.api.reservations.for_host(agent, "shared-h1")["items"]
    assert "reservationId" not in booking and "tenantId" not in booking
    state = fleet.api.instances.report_state(
        agent, host=world["host"]["id"], instance_id=world["guest"], state="ready"
    )
    assert state == {"id": world["guest"], "state": "running", "readyAt": "2026-11-30T10:00:00Z"}
    assert fleet.api.instances.show(OP, world["acme"]["instance"]["id"])["readyAt"] is not None


def test_the_agent_token_does_its_hosts_work_over_http(fleet: Fleet, world: dict[str, Any]) -> None:
    with served(fleet) as (_server, root):
        agent = root.as_(world["agent"]["token"])
        inventory_sent = agent.post("/v1/hosts/shared-h1/inventory", json=inventory(cpus=32))
        assert inventory_sent.status_code == 200, inventory_sent.text
        specs = agent.get("/v1/hosts/shared-h1/specs")
        assert [s["id"] for s in specs.json()["items"]] == [world["guest"]]
        state = agent.post(f"/v1/hosts/shared-h1/instances/{world['guest']}/state",
                           json={"state": "running"})  # fmt: skip
        assert state.status_code == 200, state.text
        assert agent.get("/v1/hosts/shared-h1/reservations").status_code == 200


def _every_operation(
    root: ApiClient, bearer: str, world: dict[str, Any], host: str
) -> dict[str, Any]:
    """Every /v1 operation (streams too) as the bearer, aimed at the world's objects and at
    `host`: operation id → the answer."""
    answers = {}
    streams = [op for op in all_operations() if op.operation_id in STREAMS]
    for op in [*streams, *_ordered()]:
        kwargs: dict[str, Any] = {"headers": {"Authorization": f"Bearer {bearer}"}}
        if BODIES.get(op.operation_id) is not None or op.request is not None:
            kwargs["json"] = BODIES.get(op.operation_id)
        kwargs["params"] = QUERIES.get(op.operation_id)
        path = _path(op, world).replace("/hosts/shared-h1", f"/hosts/{host}")
        answers[op.operation_id] = root.http.request(op.method, path, **kwargs)
    return answers


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        pytest.param(
            "shared-h1", AGENT_WORK - {"hosts.reportInstanceState"} | SELF, id="its-own-host"
        ),
        pytest.param("shared-h2", SELF, id="another-host-of-its-tenant"),
        pytest.param("globex-h1", SELF, id="another-tenants-host"),
    ],
)
def test_every_other_route_is_forbidden_or_not_found_to_the_agent(
    fleet: Fleet, world: dict[str, Any], host: str, allowed: set[str]
) -> None:
    """The route matrix of test_security_roles.py, as the agent of shared-h1 (the state
    report there names acme's real instance id, which no one but root's admin may use)."""
    with served(fleet) as (_server, root):
        answers = _every_operation(root, world["agent"]["token"], world, host)
    letters = {op: _letter(answer.status_code) for op, answer in answers.items()}
    assert {op for op, letter in letters.items() if letter == "O"} == allowed
    refused = {op: a for op, a in answers.items() if op not in allowed}
    wrong = {op: a.text[:120] for op, a in refused.items() if error_code(a) not in REFUSED}
    assert not wrong, wrong
    assert set(answers) == {op.operation_id for op in all_operations()} - PUBLIC
    if host == "globex-h1":  # another tenant's host is not there at all
        assert {op for op in HOST_OPERATIONS if letters[op] != "H"} == set()


Call = Callable[[Any, str, dict[str, Any]], Any]
"""One call of the Python API: (fleet.api, the agent's token, the world)."""

CALLS: dict[str, Call] = {
    "hosts.report-another-host": lambda a, t, w: a.hosts.report(
        t, host="shared-h2", inventory=inventory()
    ),
    "hosts.report-another-tenants-host": lambda a, t, w: a.hosts.report(
        t, host="globex-h1", inventory=inventory()
    ),
    "hosts.specs-another-host": lambda a, t, w: a.instances.specs_for_host(t, "shared-h2"),
    "hosts.reportInstanceState-another-host": lambda a, t, w: a.instances.report_state(
        t, host="shared-h2", instance_id=w["guest"], state="ready"
    ),
    "hosts.reportGuests-another-host": lambda a, t, w: a.hosts.report_guests(
        t, host="shared-h2", health={"state": "degraded", "message": "x"}
    ),
    "hosts.reportGuests-a-real-instance-id": lambda a, t, w: a.hosts.report_guests(
        t, host="shared-h1", guests=[{"id": w["acme"]["instance"]["id"], "conditions": []}]
    ),
    "hosts.show-its-host": lambda a, t, w: a.hosts.show(t, host="shared-h1"),
    "hosts.list": lambda a, t, w: a.hosts.list(t),
    "hosts.drain-its-host": lambda a, t, w: a.hosts.set_state(t, host="shared-h1", draining=True),
    "hosts.delete": lambda a, t, w: a.hosts.remove(t, host="shared-h2"),
    "hosts.adopt": lambda a, t, w: a.hosts.adopt(
        t, tenant_id="hostco", pool=w["pool"]["id"], name="x"
    ),
    "tokens.list": lambda a, t, w: a.iam.list_tokens(t, tenant_id="hostco"),
    "tokens.create-admin": lambda a, t, w: a.iam.create_token(
        t, tenant_id="hostco", name="m", role="admin"
    ),
    "tokens.create-agent": lambda a, t, w: a.iam.create_token(
        t, tenant_id="hostco", name="m2", role="agent", host="shared-h2"
    ),
    "tokens.revoke-its-own": lambda a, t, w: a.iam.revoke_token(
        t, tenant_id="hostco", token_id=w["agent"]["id"]
    ),
    "principals.list": lambda a, t, w: a.iam.list_principals(t, tenant_id="hostco"),
    "policies.create": lambda a, t, w: a.iam.create_policy(
        t,
        tenant_id="hostco",
        name="p",
        statements=[{"effect": "allow", "actions": ["*"], "resources": ["tenant:hostco/*"]}],
    ),
    "pools.list": lambda a, t, w: a.pools.list(t),
    "pools.show": lambda a, t, w: a.pools.show(t, pool=w["pool"]["id"]),
    "pools.create": lambda a, t, w: a.pools.create(
        t, tenant_id="hostco", name="q", kind="vps-host"
    ),
    "pools.delete": lambda a, t, w: a.pools.delete(t, tenant_id="hostco", pool=w["pool"]["id"]),
    "instances.create": lambda a, t, w: a.instances.create(
        t, tenant_id="hostco", pool_id=w["pool"]["id"], flavor="g1.small"
    ),
    "instances.delete-a-guest": lambda a, t, w: a.instances.delete(t, w["acme"]["instance"]["id"]),
    "instances.list": lambda a, t, w: a.instances.list(t),
    "events.list": lambda a, t, w: a.events.list(t),
    "events.list-acme": lambda a, t, w: a.events.list(t, tenant_id="acme"),
    "usage.list": lambda a, t, w: a.usage.list(t),
    "usage.list-acme": lambda a, t, w: a.usage.list(t, tenant_id="acme"),
    "tenants.list": lambda a, t, w: a.tenants.list(t),
    "tenants.create": lambda a, t, w: a.tenants.create(t, "evil"),
    "quotas.show": lambda a, t, w: a.quotas.show(t, tenant_id="hostco"),
    "meters.list": lambda a, t, w: a.meters.list(t),
    "state.revision": lambda a, t, w: a.state.revision(t),
    "jobs.list": lambda a, t, w: a.jobs.list(t),
    "doctor.check": lambda a, t, w: a.doctor.check(t),
    "webhooks.list": lambda a, t, w: a.webhooks.list(t),
    "reservations.list": lambda a, t, w: a.reservations.list(t),
}
"""A sample of the Python API across its areas."""


@pytest.mark.parametrize("name", list(CALLS))
def test_every_other_python_call_is_forbidden_or_not_found_to_the_agent(
    fleet: Fleet, world: dict[str, Any], name: str
) -> None:
    before = fleet.api.hosts.list(OP)["items"], fleet.api.iam.list_tokens(OP, tenant_id="hostco")
    with pytest.raises(FleetError) as refused:
        CALLS[name](fleet.api, world["agent"]["token"], world)
    assert refused.value.code in REFUSED, refused.value
    for secret in (world["acme"]["instance"]["name"], world["acme"]["reservation"]["id"]):
        assert secret not in json.dumps(refused.value.to_json())
    after = fleet.api.hosts.list(OP)["items"], fleet.api.iam.list_tokens(OP, tenant_id="hostco")
    assert after == before


def test_a_revoked_or_expired_agent_token_is_refused(
    fleet: Fleet, world: dict[str, Any], clock: FakeClock
) -> None:
    api = fleet.api
    revoked = world["agent"]
    expiring = api.iam.create_token(OP, tenant_id="hostco", name="shared-h1-agent",
                                    role="agent", host="shared-h1", expires_in="1h")  # fmt: skip
    api.iam.revoke_token(OP, tenant_id="hostco", token_id=revoked["id"])
    assert api.instances.specs_for_host(expiring["token"], "shared-h1")["host"] == "shared-h1"
    clock.advance(3600)
    with served(fleet) as (_server, root):
        for made in (revoked, expiring):
            with pytest.raises(UnauthenticatedError):
                api.instances.specs_for_host(made["token"], "shared-h1")
            answer = root.as_(made["token"]).get("/v1/hosts/shared-h1/specs")
            assert (answer.status_code, error_code(answer)) == (401, "UNAUTHENTICATED")


@pytest.mark.parametrize(
    ("kwargs", "error"),
    [
        pytest.param({"role": "agent"}, InvalidInputError, id="an-agent-without-a-host"),
        pytest.param({"role": "admin", "host": "shared-h1"}, InvalidInputError,
                     id="a-host-for-another-role"),
        pytest.param({"role": "agent", "host": "globex-h1"}, NotFoundError,
                     id="another-tenants-host"),
        pytest.param({"role": "agent", "host": "nowhere"}, NotFoundError, id="no-such-host"),
        pytest.param({"role": "agent", "host": "shared-h1", "name": "hostco-admin"},
                     ConflictError, id="an-existing-admin-named"),
        pytest.param({"role": "agent", "host": "shared-h2", "name": "shared-h1-agent"},
                     ConflictError, id="another-hosts-agent-named"),
    ],
)  # fmt: skip
def test_an_agent_token_is_made_for_one_host_of_the_tenants_own_pools(
    fleet: Fleet, world: dict[str, Any], kwargs: dict[str, str], error: type[FleetError]
) -> None:
    hostco = world["tokens"][("owner", "admin")]
    before = fleet.api.iam.list_tokens(OP, tenant_id="hostco")
    with pytest.raises(error):
        fleet.api.iam.create_token(hostco, tenant_id="hostco", **{"name": "new", **kwargs})
    assert fleet.api.iam.list_tokens(OP, tenant_id="hostco") == before


def test_an_agent_token_is_made_over_http_by_the_hosts_owner(
    fleet: Fleet, world: dict[str, Any]
) -> None:
    with served(fleet) as (_server, root):
        hostco = root.as_(world["tokens"][("owner", "admin")])
        body = {"name": "h2-agent", "role": "agent", "host": "shared-h2"}
        made = hostco.post("/v1/tenants/hostco/tokens", json=body)
        assert made.status_code == 201, made.text
        agent = root.as_(made.json()["token"])
        assert agent.get("/v1/hosts/shared-h2/specs").status_code == 200
        assert agent.get("/v1/hosts/shared-h1/specs").status_code == 403
        no_host = hostco.post("/v1/tenants/hostco/tokens", json={"name": "x", "role": "agent"})
        assert (no_host.status_code, error_code(no_host)) == (400, "INVALID_INPUT")
        acme = root.as_(world["tokens"][("offered", "admin")])
        theirs = acme.post("/v1/tenants/acme/tokens", json={**body, "host": "shared-h1"})
        assert (theirs.status_code, error_code(theirs)) == (404, "NOT_FOUND")


def test_roots_admin_makes_an_agent_only_in_the_tenant_of_the_hosts_pool(
    fleet: Fleet, world: dict[str, Any]
) -> None:
    with pytest.raises(InvalidInputError, match="not in a pool of tenant 'root'"):
        fleet.api.iam.create_token(OP, tenant_id="root", name="a", role="agent", host="shared-h1")
    made = fleet.api.iam.create_token(OP, tenant_id="hostco", name="a", role="agent",
                                      host="shared-h1")  # fmt: skip
    assert made["principal"]["host"] == world["host"]["id"]


def test_attached_policies_never_widen_an_agent(fleet: Fleet, world: dict[str, Any]) -> None:
    fleet.api.iam.create_policy(
        OP, tenant_id="hostco", name="everything", attach_to=["shared-h1-agent"],
        statements=[{"effect": "allow", "actions": ["*"], "resources": ["tenant:hostco", "tenant:hostco/*"]}],
    )  # fmt: skip
    agent = world["agent"]["token"]
    for call in (
        lambda: fleet.api.hosts.list(agent),
        lambda: fleet.api.hosts.report(agent, host="shared-h2", inventory=inventory()),
        lambda: fleet.api.iam.list_tokens(agent, tenant_id="hostco"),
    ):
        with pytest.raises(FleetError) as refused:
            call()
        assert refused.value.code in REFUSED
    assert fleet.api.instances.specs_for_host(agent, "shared-h1")["host"] == "shared-h1"


def test_fleet_iam_tokens_create_makes_an_agent_token_and_lists_its_host(
    fleet: Fleet, world: dict[str, Any]
) -> None:
    url = fleet.settings.db_url
    made = run_cli("iam", "tokens", "create", "--tenant", "hostco", "--name", "h2-agent",
                   "--role", "agent", "--host", "shared-h2", "--json", db=url)  # fmt: skip
    assert made.exit_code == 0, made.stderr
    shared_h2 = fleet.api.hosts.show(OP, host="shared-h2")["id"]
    assert made.json()["principal"]["host"] == shared_h2  # type: ignore[index]
    listed = run_cli("iam", "tokens", "list", "--tenant", "hostco", "--name", "h2-agent", db=url)
    assert shared_h2 in listed.stdout and "agent" in listed.stdout
    bad = run_cli("iam", "tokens", "create", "--tenant", "hostco", "--name", "x", "--role",
                  "agent", db=url)  # fmt: skip
    assert bad.exit_code != 0 and "INVALID_INPUT" in bad.stderr and "--host" in bad.stderr
    token = str(made.json()["token"])  # type: ignore[index]
    with pytest.raises(FleetError) as refused:
        fleet.api.hosts.report(token, host="shared-h1", inventory=inventory())
    assert refused.value.code == "FORBIDDEN"

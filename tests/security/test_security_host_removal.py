"""Removing a host revokes its agents' tokens in the same transaction, and says which.

An agent principal (`--role agent --host H`) keeps its row (its revoked tokens keep their
history), but no token of it stays live once H is gone: over the Python API and over HTTP
they are UNAUTHENTICATED, a revoked one cannot be rotated, and the agents of other hosts are
untouched. The dependents of H (GET /v1/hosts/H/dependents, the console's confirm) name the
tokens before, and the `host.removed` event lists them after.
"""

from __future__ import annotations

from typing import Any

import pytest

from bcfleet.clock import FakeClock, format_time
from bcfleet.errors import ConflictError, ForbiddenError, UnauthenticatedError
from bcfleet.fleet import Fleet
from tests.support.builders import OP
from tests.support.http import error_code, served


def _world(fleet: Fleet, clock: FakeClock) -> dict[str, Any]:
    """hostco's pool with hosts h1 and h2; h1 has two agents: one token live, one expired and
    one revoked an hour before; h2 has one agent. hostco's admin holds a token too."""
    api = fleet.api
    api.tenants.create(OP, "hostco")
    pool = api.pools.create(OP, tenant_id="hostco", name="hp", kind="vps-host")
    for name in ("h1", "h2"):
        api.hosts.adopt(OP, tenant_id="hostco", pool=pool["id"], name=name)

    def agent(name: str, host: str, **kw: Any) -> dict[str, Any]:
        return api.iam.create_token(OP, tenant_id="hostco", name=name, role="agent", host=host,
                                    **kw)  # fmt: skip

    world = {
        "live": agent("h1-agent", "h1"),
        "expiring": agent("h1-backup", "h1", expires_in="1h"),
        "revoked": agent("h1-agent", "h1"),
        "other": agent("h2-agent", "h2"),
        "admin": api.iam.create_token(OP, tenant_id="hostco", name="ops", role="admin"),
    }
    api.iam.revoke_token(OP, tenant_id="hostco", token_id=world["revoked"]["id"])
    world["revokedAt"] = format_time(clock.now())
    clock.advance(3600)
    return world


def _tokens(fleet: Fleet) -> dict[str, dict[str, Any]]:
    return {t["id"]: t for t in fleet.api.iam.list_tokens(OP, tenant_id="hostco")["items"]}


def test_removing_a_host_revokes_its_agents_tokens_and_no_one_elses(
    any_fleet: Fleet, clock: FakeClock
) -> None:
    api = any_fleet.api
    world = _world(any_fleet, clock)
    found = api.dependents.of_host(OP, host="h1")
    assert found == {
        "items": [
            {"kind": "agent token", "id": world["live"]["id"], "name": "h1-agent",
             "state": "active"},
            {"kind": "agent token", "id": world["expiring"]["id"], "name": "h1-backup",
             "state": "expired"},
        ],
        "outcome": "deleted",
    }  # fmt: skip
    node_id = api.hosts.show(OP, host="h1")["id"]
    with served(any_fleet) as (_server, root):
        admin = root.as_(world["admin"]["token"])
        over_http = admin.get("/v1/hosts/h1/dependents")
        assert over_http.status_code == 200 and over_http.json() == found
        assert admin.delete("/v1/hosts/h1").status_code == 200
        for made in (world["live"], world["expiring"], world["revoked"]):
            with pytest.raises(UnauthenticatedError):
                api.iam.whoami(made["token"])
            answer = root.as_(made["token"]).get("/v1/whoami")
            assert (answer.status_code, error_code(answer)) == (401, "UNAUTHENTICATED")
        other = root.as_(world["other"]["token"]).get("/v1/hosts/h2/specs")
        assert other.status_code == 200, other.text
    tokens = _tokens(any_fleet)
    now = format_time(clock.now())
    assert [tokens[world[k]["id"]]["revokedAt"] for k in ("live", "expiring", "revoked")] == [
        now, now, world["revokedAt"]
    ]  # fmt: skip
    assert tokens[world["other"]["id"]]["state"] == "active"
    assert tokens[world["admin"]["id"]]["state"] == "active"
    agents = {p["name"] for p in api.iam.list_principals(OP, tenant_id="hostco")["items"]}
    assert {"h1-agent", "h1-backup", "h2-agent"} <= agents
    [event] = api.events.list(OP, types=["host.removed"])["items"]
    assert event["subjectId"] == node_id
    assert event["data"]["revokedTokens"] == [world["live"]["id"], world["expiring"]["id"]]


def test_a_removed_hosts_agent_gets_no_new_token(any_fleet: Fleet, clock: FakeClock) -> None:
    api = any_fleet.api
    world = _world(any_fleet, clock)
    api.hosts.remove(OP, host="h1")
    with pytest.raises(ConflictError):
        api.iam.rotate_token(OP, tenant_id="hostco", token_id=world["live"]["id"])
    with pytest.raises(ConflictError):
        api.iam.create_token(OP, tenant_id="hostco", name="h1-agent")
    api.hosts.adopt(OP, tenant_id="hostco", pool="hp", name="h1")
    with pytest.raises(ConflictError):
        api.iam.create_token(OP, tenant_id="hostco", name="h1-agent", role="agent", host="h1")
    assert api.iam.whoami(world["other"]["token"])["role"] == "agent"


def test_a_removal_refused_revokes_nothing(any_fleet: Fleet, clock: FakeClock) -> None:
    """A viewer is told the agent tokens (its role reads the tenant's IAM) but may not remove
    the host: the agents keep working."""
    api = any_fleet.api
    world = _world(any_fleet, clock)
    viewer = api.iam.create_token(OP, tenant_id="hostco", name="eve", role="viewer")
    seen = api.dependents.of_host(viewer["token"], host="h1")
    assert seen["outcome"] == "deleted" and len(seen["items"]) == 2
    with pytest.raises(ForbiddenError):
        api.hosts.remove(viewer["token"], host="h1")
    assert api.iam.whoami(world["live"]["token"])["role"] == "agent"

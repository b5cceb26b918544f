"""Token lifetimes and shapes: expired, blank and malformed tokens are refused on every entry point."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from bcfleet.agent.remote import AgentConnection
from bcfleet.clock import FakeClock, format_time
from bcfleet.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    UnauthenticatedError,
)
from bcfleet.fleet import Fleet
from bcfleet.http.app import all_operations
from tests.support.builders import OP, inventory
from tests.support.fleet import T0, run_cli
from tests.support.http import served


def _token(fleet: Fleet, tenant: str = "acme", name: str = "alice", **kw: Any) -> dict[str, Any]:
    if tenant not in {t["id"] for t in fleet.api.tenants.list(OP)["items"]}:
        fleet.api.tenants.create(OP, tenant)
    result: dict[str, Any] = fleet.api.iam.create_token(
        OP, tenant_id=tenant, name=name, role="admin", **kw
    )
    return result


# --- the Python API ---------------------------------------------------------------------


def test_a_token_is_refused_once_its_expiry_has_come(fleet: Fleet, clock: FakeClock) -> None:
    made = _token(fleet, expires_in="1h")
    assert made["expiresAt"] == format_time(T0 + timedelta(hours=1))
    assert fleet.api.pools.list(made["token"])["items"] == []
    clock.advance(hours=1)  # expires_at <= now: expired at the very instant
    with pytest.raises(UnauthenticatedError, match="token expired"):
        fleet.api.pools.list(made["token"])


def test_an_expiry_stored_in_the_past_is_enforced(fleet: Fleet) -> None:
    """The observed hole: expires_at in 2020 was stored and ignored."""
    from bcfleet.store.models import ApiToken

    made = _token(fleet)
    with fleet.write() as session:
        row = session.get(ApiToken, made["id"])
        assert row is not None
        row.expires_at = T0.replace(year=2020)
        session.add(row)
    with pytest.raises(UnauthenticatedError):
        fleet.api.pools.list(made["token"])


def test_a_token_without_expiry_keeps_working(fleet: Fleet, clock: FakeClock) -> None:
    made = _token(fleet)
    assert made["expiresAt"] is None
    clock.advance(days=4000)
    assert fleet.api.pools.list(made["token"]) == {"items": []}


@pytest.mark.parametrize(
    "credential",
    [
        pytest.param("", id="empty"),
        pytest.param("   ", id="blank"),
        pytest.param("garbage", id="no-prefix"),
        pytest.param("bcf_", id="prefix-only"),
        pytest.param(None, id="none"),
    ],
)
def test_blank_or_malformed_credentials_are_unauthenticated(
    fleet: Fleet, credential: str | None
) -> None:
    with pytest.raises(UnauthenticatedError):
        fleet.api.pools.list(credential)


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        pytest.param("30d", True, id="30d"),
        pytest.param("3650d", True, id="ten-years"),
        pytest.param("3651d", False, id="over-ten-years"),
        pytest.param("0s", False, id="zero"),
        pytest.param("-1d", False, id="negative"),
        pytest.param("soon", False, id="not-a-duration"),
    ],
)
def test_token_lifetimes_are_bounded(fleet: Fleet, text: str, ok: bool) -> None:
    if ok:
        assert _token(fleet, expires_in=text)["expiresAt"] is not None
    else:
        with pytest.raises(InvalidInputError, match="expiresIn"):
            _token(fleet, expires_in=text)


def test_list_shows_state_and_never_the_token(fleet: Fleet, clock: FakeClock) -> None:
    active = _token(fleet, name="alice")
    short = _token(fleet, name="bob", expires_in="1h")
    gone = _token(fleet, name="carol")
    fleet.api.iam.revoke_token(OP, tenant_id="acme", token_id=gone["id"])
    clock.advance(hours=2)
    listed = fleet.api.iam.list_tokens(OP, tenant_id="acme")["items"]
    states = {item["id"]: item["state"] for item in listed}
    assert states == {active["id"]: "active", short["id"]: "expired", gone["id"]: "revoked"}
    text = json.dumps(listed)
    for made in (active, short, gone):
        assert made["token"] not in text
    assert "hash" not in text.lower()
    only_bob = fleet.api.iam.list_tokens(OP, tenant_id="acme", principal="bob")["items"]
    assert [i["id"] for i in only_bob] == [short["id"]]
    assert set(only_bob[0]) == {
        "id", "principal", "principalId", "role", "hint",
        "createdAt", "expiresAt", "revokedAt", "state",
    }  # fmt: skip


def test_rotation_revokes_the_old_token_and_keeps_its_lifetime(
    fleet: Fleet, clock: FakeClock
) -> None:
    old = _token(fleet, expires_in="30d")
    clock.advance(days=1)
    new = fleet.api.iam.rotate_token(OP, tenant_id="acme", token_id=old["id"])
    assert new["replaces"] == old["id"]
    assert new["principal"]["id"] == old["principal"]["id"]
    assert new["expiresAt"] == format_time(T0 + timedelta(days=31))
    with pytest.raises(UnauthenticatedError):
        fleet.api.pools.list(old["token"])
    assert fleet.api.pools.list(new["token"]) == {"items": []}
    shorter = fleet.api.iam.rotate_token(
        new["token"], tenant_id="acme", token_id=new["id"], expires_in="1h"
    )
    assert shorter["expiresAt"] == format_time(T0 + timedelta(days=1, hours=1))
    with pytest.raises(ConflictError):
        fleet.api.iam.rotate_token(OP, tenant_id="acme", token_id=old["id"])


def test_another_tenants_token_is_not_found_to_a_tenant_admin(fleet: Fleet) -> None:
    acme = _token(fleet, tenant="acme")
    globex = _token(fleet, tenant="globex")
    for verb in (fleet.api.iam.revoke_token, fleet.api.iam.rotate_token):
        answers = []
        for token_id in (acme["id"], "tok_01MADEUP"):
            with pytest.raises(NotFoundError) as caught:
                verb(globex["token"], tenant_id="globex", token_id=token_id)
            answers.append(caught.value.message.replace(token_id, "ID"))
        assert answers[0] == answers[1]
    assert fleet.api.pools.list(acme["token"]) == {"items": []}  # still works


# --- the CLI ----------------------------------------------------------------------------


def _later(hours: int) -> dict[str, str]:
    return {"BCFLEET_NOW": format_time(T0 + timedelta(hours=hours))}


@pytest.mark.parametrize("how", ["flag", "env"])
def test_cli_refuses_an_expired_token(fleet: Fleet, sqlite_url: str, how: str) -> None:
    made = _token(fleet, expires_in="1h")
    args = ["pools", "list", "--json"]
    env = _later(0)
    if how == "flag":
        args += ["--token", made["token"]]
    else:
        env["BCFLEET_TOKEN"] = made["token"]
    assert run_cli(*args, db=sqlite_url, env=env).exit_code == 0
    result = run_cli(*args, db=sqlite_url, env={**env, **_later(2)})
    assert result.exit_code == 1
    assert result.json() == {
        "error": {"code": "UNAUTHENTICATED", "message": "token expired", "details": {}}
    }


@pytest.mark.parametrize("given", ["", "   ", "garbage"])
@pytest.mark.parametrize("how", ["flag", "env"])
def test_cli_blank_or_malformed_token_is_not_the_operator(
    fleet: Fleet, sqlite_url: str, given: str, how: str
) -> None:
    del fleet  # the database exists
    args = ["pools", "list", "--json"]
    env = _later(0)
    if how == "flag":
        args += ["--token", given]
    else:
        env["BCFLEET_TOKEN"] = given
    result = run_cli(*args, db=sqlite_url, env=env)
    assert result.exit_code == 1, result.stdout
    error = result.json()
    assert isinstance(error, dict)
    assert error["error"]["code"] == "UNAUTHENTICATED"
    assert "Traceback" not in result.stderr


def test_cli_without_any_token_is_the_local_operator(fleet: Fleet, sqlite_url: str) -> None:
    del fleet
    result = run_cli("pools", "list", "--json", db=sqlite_url, env=_later(0))
    assert result.exit_code == 0


def test_cli_tokens_create_list_rotate_revoke(fleet: Fleet, sqlite_url: str) -> None:
    fleet.api.tenants.create(OP, "acme")
    env = _later(0)

    def cli(*args: str) -> Any:
        result = run_cli(*args, "--json", db=sqlite_url, env=env)
        assert result.exit_code == 0, result.stdout + result.stderr
        return result.json()

    made = cli("iam", "tokens", "create", "--tenant", "acme", "--name", "ci", "--expires-in", "30d")
    assert made["expiresAt"] == format_time(T0 + timedelta(days=30))
    listed = cli("iam", "tokens", "list", "--tenant", "acme", "--name", "ci")["items"]
    assert [(i["id"], i["state"]) for i in listed] == [(made["id"], "active")]
    rotated = cli("iam", "tokens", "rotate", made["id"], "--tenant", "acme")
    assert rotated["replaces"] == made["id"] and rotated["token"] != made["token"]
    cli("iam", "tokens", "revoke", rotated["id"], "--tenant", "acme")
    states = {
        i["id"]: i["state"] for i in cli("iam", "tokens", "list", "--tenant", "acme")["items"]
    }
    assert states == {made["id"]: "revoked", rotated["id"]: "revoked"}
    bad = run_cli(
        "iam", "tokens", "create", "--tenant", "acme", "--name", "ci", "--expires-in", "0s",
        "--json", db=sqlite_url, env=env,
    )  # fmt: skip
    assert bad.exit_code == 1 and bad.json()["error"]["code"] == "INVALID_INPUT"  # type: ignore[index]


# --- HTTP and the agent -----------------------------------------------------------------


def test_http_bearer_and_agent_refuse_an_expired_token(fleet: Fleet, clock: FakeClock) -> None:
    pool = fleet.api.pools.create(OP, tenant_id="root", name="vps", kind="vps-host")
    fleet.api.hosts.adopt(OP, tenant_id="root", pool=pool["id"], name="fra-01")
    made = _token(fleet, tenant="root", name="agent", expires_in="1h")
    with served(fleet) as (server, root):
        client = root.as_(made["token"])
        agent = AgentConnection(server.url, made["token"])
        try:
            assert client.get("/v1/pools").status_code == 200
            agent.report_inventory("fra-01", inventory(cpus=2))
            clock.advance(hours=1, seconds=1)
            answer = client.get("/v1/pools")
            assert answer.status_code == 401
            assert answer.json()["error"] == {
                "code": "UNAUTHENTICATED", "message": "token expired", "details": {},
            }  # fmt: skip
            with pytest.raises(UnauthenticatedError, match="token expired"):
                agent.report_inventory("fra-01", inventory(cpus=2))
            with pytest.raises(UnauthenticatedError):
                agent.specs("fra-01")
        finally:
            agent.close()


def test_http_token_routes(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme")
    with served(fleet) as (_server, root):
        made = root.post("/v1/tenants/acme/tokens", json={"name": "ci", "expiresIn": "1d"})
        assert made.status_code == 201, made.text
        token_id = made.json()["id"]
        listed = root.get("/v1/tenants/acme/tokens", params={"name": "ci"}).json()["items"]
        assert [i["state"] for i in listed] == ["active"]
        rotated = root.post(f"/v1/tenants/acme/tokens/{token_id}/rotate", json={})
        assert rotated.status_code == 201 and rotated.json()["replaces"] == token_id
        gone = root.delete(f"/v1/tenants/acme/tokens/{rotated.json()['id']}")
        assert gone.status_code == 200 and gone.json()["revoked"] is True
        too_long = root.post("/v1/tenants/acme/tokens", json={"name": "x", "expiresIn": "99999d"})
        assert too_long.status_code == 400


@pytest.mark.parametrize(
    "authorization",
    [
        pytest.param(None, id="missing"),
        pytest.param("Bearer bcf_unknown", id="unknown"),
        pytest.param("Bearer garbage", id="malformed"),
    ],
)
def test_authentication_comes_before_validation_on_every_route(
    fleet: Fleet, authorization: str | None
) -> None:
    """An anonymous caller with an invalid body or query learns 401, never the schema's verdict."""
    bad_query = {"limit": "x", "after": "x", "tenant": "\x00", "pollSeconds": "0", "type": "\x00"}
    headers = {"Authorization": authorization} if authorization else {}
    checked = 0
    with served(fleet) as (_server, root):
        for op in all_operations():
            if not op.auth or (op.request is None and not op.query):
                continue
            path = op.path
            for name in op.path_params:
                path = path.replace("{" + name + "}", "x")
            kwargs: dict[str, Any] = {
                "params": {q.name: bad_query.get(q.name, "\x00") for q in op.query}
            }
            if op.request is not None:
                kwargs["content"] = b'{"not": "valid", "x": [1, 2'
                kwargs["headers"] = {**headers, "Content-Type": "application/json"}
            else:
                kwargs["headers"] = headers
            answer = root.http.request(op.method, path, **kwargs)
            assert answer.status_code == 401, (op.operation_id, answer.text)
            assert answer.json()["error"]["code"] == "UNAUTHENTICATED"
            checked += 1
        # The control: with a real token the same body is INVALID_INPUT.
        control = root.http.post(
            "/v1/pools",
            content=b'{"not": "valid", "x": [1, 2',
            headers={"Authorization": f"Bearer {root.token}", "Content-Type": "application/json"},
        )
        assert control.status_code == 400
    assert checked >= 21


def test_tokens_create_prints_the_id_rotate_and_revoke_take(cli: Any) -> None:
    assert cli("tenants", "create", "acme").exit_code == 0
    made = cli("iam", "tokens", "create", "--tenant", "acme", "--name", "bob")
    token, _once, id_line = made.stdout.splitlines()
    assert token.startswith("bcf_")
    token_id = id_line.split()[1]
    as_json = cli("iam", "tokens", "create", "--tenant", "acme", "--name", "bob", "--json").json()
    assert as_json["id"].startswith("tok_") and token_id.startswith("tok_")
    rotated = cli("iam", "tokens", "rotate", "--tenant", "acme", token_id)
    assert rotated.exit_code == 0, rotated.stderr
    new_id = rotated.stdout.splitlines()[2].split()[1]
    assert f"replaces: {token_id} (revoked)" in rotated.stdout
    revoked = cli("iam", "tokens", "revoke", "--tenant", "acme", new_id)
    assert revoked.exit_code == 0 and revoked.stdout.strip() == f"Token {new_id} revoked."

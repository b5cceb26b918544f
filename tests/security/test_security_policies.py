"""Policies are bounded by their author, and no stored policy lets a tenant do root's work.

acme's admin once created {"actions": ["*"], "resources": ["*"]} with its own token,
attached it to itself, and then did every root-only action it tried: create tenants, set
globex's quota in root's pool to 0, create flavors and change overcommit in root's pools,
drain root's hosts, replay usage.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from sqlmodel import select

from bcfleet.api.auth import Credential
from bcfleet.domain.policy import SHARED_POOL_ACTIONS, AccessRequest, evaluate, role_statements
from bcfleet.domain.policy_bounds import (
    ROOT_ONLY_ACTIONS,
    clamp_to_tenant,
    covers,
    policy_overreach,
    principal_statements,
)
from bcfleet.errors import FleetError, ForbiddenError, InvalidInputError, NotFoundError
from bcfleet.fleet import Fleet
from bcfleet.store.models import Policy, PolicyAttachment, Principal
from tests.support.builders import OP, flavor, host, hosted_pool, inventory, token

EVERYTHING = [{"effect": "allow", "actions": ["*"], "resources": ["*"]}]
ALL_OF_ACME = [{"effect": "allow", "actions": ["*"], "resources": ["tenant:acme", "tenant:acme/*"]}]


def _root_fleet(fleet: Fleet) -> dict[str, Any]:
    """root's pool offered to acme and globex, with a flavor and a host; acme's principals."""
    pool = hosted_pool(fleet, offered_to=("acme", "globex"))
    flavor(fleet, pool["id"])
    host(fleet, pool["id"], "fra-01", inventory(cpus=16))
    fleet.api.quotas.set(OP, tenant_id="globex", pool=pool["id"], limits={"vcpu": 64})
    return {
        "pool": pool,
        "admin": token(fleet, "acme", "acme-admin", role="admin"),
        "viewer": token(fleet, "acme", "acme-viewer", role="viewer"),
    }


# Every root-only action the API has, as acme would try it: (what, call(fleet, credential, pool)).
RootOnly = Callable[[Fleet, Credential, dict[str, Any]], object]
ROOT_ONLY: list[tuple[str, RootOnly]] = [
    ("tenants.create", lambda f, c, p: f.api.tenants.create(c, "initech")),
    ("tenants.update other", lambda f, c, p: f.api.tenants.update(c, "globex", name="pwned")),
    ("tenants.update own", lambda f, c, p: f.api.tenants.update(c, "acme", name="ACME Root")),
    ("tenants.delete", lambda f, c, p: f.api.tenants.delete(c, "globex")),
    ("tenants.set_managed", lambda f, c, p: f.api.tenants.set_managed(c, "acme")),
    ("quotas.set other tenant in root's pool",
     lambda f, c, p: f.api.quotas.set(c, tenant_id="globex", pool=p["id"], limits={"vcpu": 0})),
    ("quotas.set own quota in root's pool",
     lambda f, c, p: f.api.quotas.set(c, tenant_id="acme", pool=p["id"], limits={"vcpu": 9999})),
    ("quotas.clear in root's pool",
     lambda f, c, p: f.api.quotas.clear(c, tenant_id="globex", pool=p["id"])),
    ("flavors.create in root's pool",
     lambda f, c, p: f.api.flavors.create(c, tenant_id="acme", pool_id=p["id"], name="huge",
                                          vcpu=64, memory_gib=256, disk_gib=100)),
    ("flavors.update in root's pool",
     lambda f, c, p: f.api.flavors.update(c, tenant_id="acme", pool_id=p["id"], name="g1.small",
                                          vcpu=1, memory_gib=1, disk_gib=1)),
    ("flavors.delete in root's pool",
     lambda f, c, p: f.api.flavors.delete(c, tenant_id="acme", pool_id=p["id"], name="g1.small")),
    ("pools.update overcommit of root's pool",
     lambda f, c, p: f.api.pools.update(c, tenant_id="acme", pool=p["id"],
                                        overcommit={"vcpu": 100})),
    ("pools.offer root's pool", lambda f, c, p: f.api.pools.offer(c, tenant_id="acme",
                                                                   pool=p["id"], to="acme")),
    ("pools.offer revoke", lambda f, c, p: f.api.pools.offer(c, tenant_id="acme", pool=p["id"],
                                                             to="globex", revoke=True)),
    ("pools.delete root's pool", lambda f, c, p: f.api.pools.delete(c, tenant_id="acme",
                                                                     pool=p["id"])),
    ("hosts.adopt into root's pool",
     lambda f, c, p: f.api.hosts.adopt(c, tenant_id="acme", pool=p["id"], name="evil-01")),
    ("hosts.set_state drain root's host",
     lambda f, c, p: f.api.hosts.set_state(c, host="fra-01", draining=True)),
    ("hosts.report root's host",
     lambda f, c, p: f.api.hosts.report(c, host="fra-01", inventory=inventory(cpus=2))),
    ("hosts.update root's host",
     lambda f, c, p: f.api.hosts.update(c, host="fra-01", tenant_controlled=True)),
    ("hosts.remove root's host", lambda f, c, p: f.api.hosts.remove(c, host="fra-01")),
    ("usage.replay", lambda f, c, p: f.api.usage.replay(c)),
    ("iam setup --meters", lambda f, c, p: f.api.usage.setup_meters(c)),
    ("meters.create", lambda f, c, p: f.api.meters.create(c, "gpu.free.hours")),
    ("meters.ensure", lambda f, c, p: f.api.meters.ensure(c, ["gpu.free.hours"])),
    ("doctor", lambda f, c, p: f.api.doctor.check(c)),
    ("providerAccounts.create with tokenEnv",
     lambda f, c, p: f.api.provider_accounts.create(c, tenant_id="acme", name="steal",
                                                    provider="hetzner", token_env="ROOT_TOKEN")),
    ("iam tokens for another tenant",
     lambda f, c, p: f.api.iam.create_token(c, tenant_id="globex", name="x", role="admin")),
    ("iam policy for another tenant",
     lambda f, c, p: f.api.iam.create_policy(c, tenant_id="globex", name="x",
                                             statements=EVERYTHING)),
    ("act as another tenant", lambda f, c, p: f.api.pools.list(c, tenant_id="globex")),
]  # fmt: skip


def _everything_root_only_is_refused(fleet: Fleet, credential: Credential, pool: Any) -> None:
    before = _root_state(fleet, pool)
    allowed = []
    for what, attempt in ROOT_ONLY:
        try:
            attempt(fleet, credential, pool)
        except (ForbiddenError, NotFoundError):
            continue
        except FleetError as error:  # judged on its merits: authorization let it through
            allowed.append(f"{what}: {error.code} {error.message}")
        else:
            allowed.append(what)
    assert not allowed, f"root-only actions acme got through: {allowed}"
    assert _root_state(fleet, pool) == before


def _root_state(fleet: Fleet, pool: dict[str, Any]) -> str:
    api = fleet.api
    return json.dumps(
        {
            "tenants": api.tenants.list(OP),
            "pools": api.pools.list(OP),
            "flavors": api.flavors.list(OP, tenant_id="root", pool_id=pool["id"]),
            "hosts": api.hosts.list(OP),
            "quotas": [api.quotas.show(OP, tenant_id=t) for t in ("acme", "globex")],
            "meters": api.meters.list(OP),
            "accounts": api.provider_accounts.list(OP, tenant_id="acme"),
        },
        sort_keys=True,
    )


def test_a_tenant_admin_cannot_grant_itself_everything(fleet: Fleet) -> None:
    made = _root_fleet(fleet)
    with pytest.raises(InvalidInputError) as refused:
        fleet.api.iam.create_policy(
            made["admin"], tenant_id="acme", name="all", statements=EVERYTHING,
            attach_to=["acme-admin"],
        )  # fmt: skip
    assert "statements[0]" in refused.value.message
    assert refused.value.details["statements"] == [0]
    with fleet.read() as session:
        assert session.exec(select(Policy)).all() == []


@pytest.mark.parametrize("principal", ["admin", "viewer"])
def test_every_root_only_action_is_refused_after_the_broadest_grant_the_api_allows(
    fleet: Fleet, principal: str
) -> None:
    made = _root_fleet(fleet)
    fleet.api.iam.create_policy(
        made["admin"], tenant_id="acme", name="all-of-acme", statements=ALL_OF_ACME,
        attach_to=[f"acme-{principal}"],
    )  # fmt: skip
    _everything_root_only_is_refused(fleet, made[principal], made["pool"])


@pytest.mark.parametrize("principal", ["admin", "viewer"])
def test_a_stored_star_policy_still_refuses_every_root_only_action(
    any_fleet: Fleet, principal: str
) -> None:
    """Rows written before the bounds (or by hand) are clamped when the token is resolved."""
    fleet = any_fleet
    made = _root_fleet(fleet)
    _store_policy(fleet, "acme", f"acme-{principal}", EVERYTHING)
    _everything_root_only_is_refused(fleet, made[principal], made["pool"])
    # The row is not ignored: inside acme it grants what the role did not.
    created = fleet.api.pools.create(made[principal], tenant_id="acme", name="own", kind="vps-host")
    assert created["owner"] == "acme"


def _store_policy(fleet: Fleet, tenant: str, principal: str, statements: list[Any]) -> None:
    with fleet.write() as session:
        who = session.exec(
            select(Principal).where(Principal.tenant_id == tenant, Principal.name == principal)
        ).one()
        row = Policy(
            id=fleet.new_id("pol"),
            tenant_id=tenant,
            name="stored",
            statements=statements,
            created_at=fleet.now(),
        )
        session.add(row)
        session.flush()
        session.add(PolicyAttachment(policy_id=row.id, principal_id=who.id))


def test_the_cli_refuses_a_star_policy_from_a_tenant_token(
    fleet: Fleet, cli: Any, tmp_path: Path
) -> None:
    fleet.api.tenants.create(OP, "acme")
    admin = token(fleet, "acme", "acme-admin")
    document = tmp_path / "all.json"
    document.write_text(json.dumps({"statements": EVERYTHING}))
    result = cli("iam", "policies", "create", "--tenant", "acme", "--name", "all",
                 "--file", str(document), "--attach", "acme-admin", "--token", admin, "--json")  # fmt: skip
    assert result.exit_code == 1, result.stdout
    error = json.loads(result.stdout or result.stderr)["error"]
    assert error["code"] == "INVALID_INPUT"
    assert "statements[0]" in error["message"] and "'*'" in error["message"]


@pytest.mark.parametrize(
    ("statements", "error", "mentions"),
    [
        pytest.param(
            [{"effect": "allow", "actions": ["compute:pools:read"], "resources": ["tenant:*"]}],
            InvalidInputError, "statements[0]: resource 'tenant:*'", id="every-tenant",
        ),
        pytest.param(
            ALL_OF_ACME
            + [{"effect": "allow", "actions": ["*"], "resources": ["tenant:globex/*"]}],
            InvalidInputError, "statements[1]: resource 'tenant:globex/*'", id="another-tenant",
        ),
        pytest.param(
            [{"effect": "allow", "actions": ["compute:quotas:manage"],
              "resources": ["tenant:root/pool:*"]}],
            ForbiddenError,
            "action 'compute:quotas:manage' is not held by the admin role on 'tenant:root/pool:*'",
            id="managing-roots-pools",
        ),
        pytest.param(
            [{"effect": "allow", "actions": ["compute:read"], "resources": ["tenant:acmecorp"]}],
            InvalidInputError, "'tenant:acmecorp'", id="a-tenant-whose-id-starts-alike",
        ),
        pytest.param(
            [{"effect": "allow", "actions": ["compute:tenants:manage"], "resources": ["tenant:acme"]}],
            ForbiddenError, "statements[0]: action 'compute:tenants:manage' is root's alone",
            id="root-only-action",
        ),
        pytest.param(
            [{"effect": "allow", "actions": ["billing:*"], "resources": ["tenant:acme"]}],
            ForbiddenError, "'billing:*'", id="root-only-pattern",
        ),
    ],
)  # fmt: skip
def test_a_tenant_policy_names_only_the_tenants_own_resources_and_actions(
    fleet: Fleet, statements: list[dict[str, Any]], error: type[FleetError], mentions: str
) -> None:
    fleet.api.tenants.create(OP, "acme")
    admin = token(fleet, "acme", "acme-admin")
    for author in (admin, OP):  # root's admin acting for acme writes acme's policies too
        with pytest.raises(error) as refused:
            fleet.api.iam.create_policy(
                author, tenant_id="acme", name="p", statements=statements, attach_to=["acme-admin"]
            )
        assert mentions in refused.value.message


def test_a_policy_grants_only_actions_its_author_holds(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme")
    alice = token(fleet, "acme", "alice", role="member")
    token(fleet, "acme", "bob", role="viewer")
    iam = [{"effect": "allow", "actions": ["compute:iam:manage"], "resources": ["tenant:acme"]}]
    fleet.api.iam.create_policy(OP, tenant_id="acme", name="iam", statements=iam,
                                attach_to=["alice"])  # fmt: skip
    pools = [{"effect": "allow", "actions": ["compute:pools:manage"], "resources": ["tenant:acme"]}]
    with pytest.raises(ForbiddenError) as refused:
        fleet.api.iam.create_policy(alice, tenant_id="acme", name="x", statements=pools,
                                    attach_to=["bob"])  # fmt: skip
    assert "statements[0]: action 'compute:pools:manage' is not held by the member role" in (
        refused.value.message
    )
    run = [{"effect": "allow", "actions": ["compute:instances:*"], "resources": ["tenant:acme/*"]}]
    made = fleet.api.iam.create_policy(alice, tenant_id="acme", name="run", statements=run,
                                       attach_to=["bob"])  # fmt: skip
    assert made["attachedTo"] == ["bob"]


def test_a_tenant_may_give_spot_work_in_its_offered_pools_and_no_more(fleet: Fleet) -> None:
    """Document 003: "a tenant policy can allow spot work to people or agents it would not
    give regular capacity to"; the pools it names are those offered to the tenant."""
    made = _root_fleet(fleet)
    spot = [{"effect": "allow", "actions": ["compute:reservations:create"],
             "resources": ["tenant:*/pool:*"], "conditions": {"spot": True}}]  # fmt: skip
    fleet.api.iam.create_policy(made["admin"], tenant_id="acme", name="spot", statements=spot,
                                attach_to=["acme-viewer"])  # fmt: skip
    viewer, pool = made["viewer"], made["pool"]["id"]
    reserved = fleet.api.reservations.create(viewer, tenant_id="acme", pool_id=pool, gpus=1,
                                             duration="1h", spot=True)  # fmt: skip
    assert reserved["spot"] is True and reserved["tenantId"] == "acme"
    with pytest.raises(ForbiddenError):
        fleet.api.reservations.create(viewer, tenant_id="acme", pool_id=pool, gpus=1, duration="1h")
    with pytest.raises(ForbiddenError):
        fleet.api.instances.create(viewer, tenant_id="acme", pool_id=pool, flavor="g1.small")
    _everything_root_only_is_refused(fleet, viewer, made["pool"])
    hidden = hosted_pool(fleet, "vps-ams", offered_to=())
    with pytest.raises(NotFoundError):  # a pool not offered to acme stays out of sight
        fleet.api.reservations.create(viewer, tenant_id="acme", pool_id=hidden["id"], gpus=1,
                                      duration="1h", spot=True)  # fmt: skip


def test_deny_statements_are_not_bounded(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme")
    admin = token(fleet, "acme", "acme-admin")
    deny = [{"effect": "deny", "actions": ["*"], "resources": ["*"]}]
    fleet.api.iam.create_policy(admin, tenant_id="acme", name="stop", statements=deny,
                                attach_to=["acme-admin"])  # fmt: skip
    with pytest.raises(ForbiddenError):
        fleet.api.pools.list(admin)


def test_root_writes_root_policies_without_bounds(fleet: Fleet) -> None:
    """A root viewer given `*` on `*` by root's policy may then do what a viewer may not."""
    ops = token(fleet, "root", "ops", role="viewer")
    with pytest.raises(ForbiddenError):
        fleet.api.tenants.create(ops, "acme")
    made = fleet.api.iam.create_policy(OP, tenant_id="root", name="all", statements=EVERYTHING,
                                       attach_to=["ops"])  # fmt: skip
    assert made["statements"] == EVERYTHING
    assert fleet.api.tenants.create(ops, "acme")["id"] == "acme"
    assert "acme" in {t["id"] for t in fleet.api.tenants.list(OP)["items"]}


# -- the pure rules ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pattern", "asked", "expected"),
    [
        pytest.param("*", "compute:pools:read", True, id="star-covers-all"),
        pytest.param("compute:*:read", "compute:pools:read", True, id="inner-star"),
        pytest.param("compute:*:read", "compute:*:read", True, id="same-pattern"),
        pytest.param("compute:*:read", "compute:*", False, id="broader-is-not-covered"),
        pytest.param("compute:instances:*", "compute:*", False, id="star-is-broader"),
        pytest.param("tenant:acme/*", "tenant:acme/pool:*", True, id="narrower-resource"),
        pytest.param("tenant:acme/*", "tenant:acme", False, id="tenant-itself"),
        pytest.param("a?c", "a*c", False, id="question-mark-covers-only-itself"),
    ],
)  # fmt: skip
def test_covers(pattern: str, asked: str, expected: bool) -> None:
    assert covers(pattern, asked) is expected


def test_clamping_keeps_allows_inside_the_tenant_and_every_deny() -> None:
    stored = [
        {"effect": "allow", "actions": ["*"], "resources": ["*", "tenant:acme/*", "tenant:acmex"]},
        {"effect": "allow", "actions": ["*"], "resources": ["tenant:globex"]},
        {"effect": "allow", "actions": ["*"], "resources": ["*/pool:*", "tenant:*/pool:*"]},
        {"effect": "deny", "actions": ["compute:pools:*"], "resources": ["*"]},
        "not a statement",
    ]
    shared = list(SHARED_POOL_ACTIONS)
    assert clamp_to_tenant("acme", stored) == [
        {"effect": "allow", "actions": ["*"], "resources": ["tenant:acme", "tenant:acme/*"]},
        {"effect": "allow", "actions": shared, "resources": ["tenant:*/pool:*"]},
        {"effect": "allow", "actions": shared, "resources": ["tenant:*/pool:*"]},
        {"effect": "deny", "actions": ["compute:pools:*"], "resources": ["*"]},
    ]
    spot = {"effect": "allow", "actions": ["compute:reservations:create", "compute:quotas:*"],
            "resources": ["tenant:root/pool:pool_x"], "conditions": {"spot": True}}  # fmt: skip
    assert clamp_to_tenant("acme", [spot]) == [{**spot, "actions": ["compute:reservations:create"]}]


@pytest.mark.parametrize("action", [a.replace("*", "meters:manage") for a in ROOT_ONLY_ACTIONS])
def test_the_root_only_guard_beats_any_attached_allow(action: str) -> None:
    statements = principal_statements("acme", "admin", EVERYTHING)
    for resource in ("tenant:acme", "tenant:root", "tenant:acme/pool:pool_x"):
        assert not evaluate(statements, AccessRequest(action, resource)).allowed
    assert evaluate(role_statements("root", "admin"), AccessRequest(action, "tenant:root")).allowed


def test_an_admin_may_grant_what_it_holds() -> None:
    assert policy_overreach("acme", "admin", ALL_OF_ACME) == []
    viewer_reads = [
        {"effect": "allow", "actions": ["compute:*:read"], "resources": ["tenant:acme"]}
    ]
    assert policy_overreach("acme", "viewer", viewer_reads) == []
    found = policy_overreach("acme", "viewer", ALL_OF_ACME)
    assert {(o.kind, o.value) for o in found} == {("action", "*")}

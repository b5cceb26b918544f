"""IAM: tokens, roles, policies with conditions, and who may learn that a pool exists."""

from __future__ import annotations

import pytest

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.domain.policy import AccessRequest, evaluate
from bcfleet.errors import ForbiddenError, NotFoundError, UnauthenticatedError
from bcfleet.fleet import Fleet
from bcfleet.store.models import ApiToken
from tests.support.builders import flavor, hosted_pool, token

OP = LOCAL_OPERATOR


def test_a_tenant_the_pool_is_not_offered_to_cannot_learn_of_it(fleet: Fleet) -> None:
    pool = hosted_pool(fleet, offered_to=("acme",))
    flavor(fleet, pool["id"])
    fleet.api.tenants.create(OP, "globex")
    outsider = token(fleet, "globex", "eve")
    with pytest.raises(NotFoundError) as listing:
        fleet.api.flavors.list(outsider, tenant_id="globex", pool_id=pool["id"])
    with pytest.raises(NotFoundError):
        fleet.api.flavors.create(
            outsider,
            tenant_id="globex",
            pool_id=pool["id"],
            name="x",
            vcpu=1,
            memory_gib=1,
            disk_gib=1,
        )
    with pytest.raises(NotFoundError):
        fleet.api.pools.show(outsider, tenant_id="globex", pool=pool["name"])
    assert pool["id"] in listing.value.message or pool["name"] not in listing.value.message
    assert fleet.api.pools.list(outsider, tenant_id="globex")["items"] == []


def test_a_tenant_the_pool_is_offered_to_can_list_but_not_manage(fleet: Fleet) -> None:
    pool = hosted_pool(fleet, offered_to=("acme",))
    flavor(fleet, pool["id"], "g1.small")
    alice = token(fleet, "acme", "alice", role="admin")
    names = [
        f["name"]
        for f in fleet.api.flavors.list(alice, tenant_id="acme", pool_id=pool["id"])["items"]
    ]
    assert names == ["g1.small"]
    with pytest.raises(ForbiddenError):
        fleet.api.flavors.create(
            alice,
            tenant_id="acme",
            pool_id=pool["id"],
            name="mine",
            vcpu=1,
            memory_gib=1,
            disk_gib=1,
        )
    with pytest.raises(ForbiddenError):
        fleet.api.flavors.delete(alice, tenant_id="acme", pool_id=pool["id"], name="g1.small")


def test_offered_tenants_do_not_see_who_else_the_pool_is_offered_to(fleet: Fleet) -> None:
    pool = hosted_pool(fleet, offered_to=("acme", "globex"))
    alice = token(fleet, "acme", "alice")
    shown = fleet.api.pools.show(alice, tenant_id="acme", pool=pool["id"])
    assert "offeredTo" not in shown
    assert fleet.api.pools.show(OP, pool=pool["id"])["offeredTo"] == ["acme", "globex"]


def test_missing_and_unknown_tokens_are_unauthenticated(fleet: Fleet) -> None:
    with pytest.raises(UnauthenticatedError):
        fleet.api.pools.list("bcf_not-a-token")
    with pytest.raises(UnauthenticatedError):
        fleet.api.pools.list("")


def test_only_a_hash_of_the_token_is_stored(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme")
    made = fleet.api.iam.create_token(OP, tenant_id="acme", name="alice", role="member")
    with fleet.read() as session:
        row = session.get(ApiToken, made["id"])
        assert (
            row is not None
            and made["token"] not in row.token_hash
            and row.hint == made["token"][-4:]
        )


def test_revoked_token_stops_working(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme")
    made = fleet.api.iam.create_token(OP, tenant_id="acme", name="alice", role="admin")
    fleet.api.pools.list(made["token"], tenant_id="acme")
    fleet.api.iam.revoke_token(OP, tenant_id="acme", token_id=made["id"])
    with pytest.raises(UnauthenticatedError):
        fleet.api.pools.list(made["token"], tenant_id="acme")


def test_a_token_cannot_act_for_another_tenant(fleet: Fleet) -> None:
    hosted_pool(fleet, offered_to=("acme", "globex"))
    alice = token(fleet, "acme", "alice")
    with pytest.raises(ForbiddenError):
        fleet.api.pools.list(alice, tenant_id="globex")


def test_viewer_cannot_manage_its_own_tenant(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme")
    viewer = token(fleet, "acme", "vic", role="viewer")
    with pytest.raises(ForbiddenError):
        fleet.api.pools.create(viewer, tenant_id="acme", name="acme-pool", kind="vps-host")


def test_attached_policy_deny_wins_over_role_allow(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme")
    admin = token(fleet, "acme", "alice", role="admin")
    fleet.api.iam.create_policy(
        OP,
        tenant_id="acme",
        name="no-pools",
        attach_to=["alice"],
        statements=[{"effect": "deny", "actions": ["compute:pools:manage"], "resources": ["*"]}],
    )
    with pytest.raises(ForbiddenError):
        fleet.api.pools.create(admin, tenant_id="acme", name="acme-pool", kind="vps-host")


SPOT_ONLY = [
    {
        "effect": "allow",
        "actions": ["compute:reservations:create"],
        "resources": ["tenant:*/pool:*"],
        "conditions": {"spot": True},
    }
]


@pytest.mark.parametrize(
    ("statements", "attributes", "allowed"),
    [
        pytest.param(SPOT_ONLY, {"spot": True}, True, id="spot-condition-allows-spot"),
        pytest.param(SPOT_ONLY, {"spot": False}, False, id="spot-condition-refuses-regular"),
        pytest.param(SPOT_ONLY, {}, False, id="missing-attribute-does-not-match"),
        pytest.param([], {"spot": True}, False, id="default-deny"),
        pytest.param(
            SPOT_ONLY + [{"effect": "deny", "actions": ["compute:*"], "resources": ["*"]}],
            {"spot": True},
            False,
            id="explicit-deny-wins",
        ),
        pytest.param(
            [{"effect": "allow", "actions": ["compute:reservations:*"], "resources": ["*"]}],
            {},
            True,
            id="action-wildcard",
        ),
    ],
)
def test_policy_evaluation(
    statements: list[dict[str, object]], attributes: dict[str, object], allowed: bool
) -> None:
    request = AccessRequest("compute:reservations:create", "tenant:root/pool:pool_x", attributes)
    assert evaluate(statements, request).allowed is allowed

"""Cases where a plan without errors failed to apply, as the plan/apply property found them."""

from __future__ import annotations

import pytest

from bcfleet.errors import ConflictError, InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.reconcile.apply import Approved, apply, make_plan, plan_json
from bcfleet.reconcile.load import load_fleetconfig_text
from tests.support.builders import OP, token
from tests.support.fleetconfig import dump

HEAD = "apiVersion: bcfleet.dev/v1\nkind: FleetConfig\n"
WITH_ACME = HEAD + (
    "tenants:\n  - { id: acme }\n"
    "pools:\n  - { name: p1, kind: vps-host, offeredTo: [acme] }\n"
    "flavors:\n  - { pool: p1, name: f0, vcpu: 1, memoryGiB: 1, diskGiB: 10 }\n"
    "quotas:\n  - { tenant: acme, pool: p1, vcpu: 8 }\n"
)
WITHOUT_ACME = HEAD + (
    "pools:\n  - { name: p1, kind: vps-host }\n"
    "flavors:\n  - { pool: p1, name: f0, vcpu: 1, memoryGiB: 1, diskGiB: 10 }\n"
)


def apply_text(fleet: Fleet, text: str) -> None:
    desired = load_fleetconfig_text(text, host_reserve=fleet.settings.host_reserve)
    shown = make_plan(fleet, OP, desired)
    apply(fleet, OP, Approved(desired, plan_json(shown)))


def test_a_tenant_with_an_instance_is_a_plan_conflict_not_an_apply_failure(
    any_fleet: Fleet,
) -> None:
    """The plan said "3 to delete" and apply stopped at CONFLICT: the quota's rows in use stay
    when it is cleared, and the instance names the tenant."""
    apply_text(any_fleet, WITH_ACME)
    any_fleet.api.instances.create(OP, tenant_id="acme", pool_id="p1", flavor="f0")
    desired = load_fleetconfig_text(WITHOUT_ACME)
    result = make_plan(any_fleet, OP, desired)
    assert [(e.code, e.address) for e in result.errors] == [("CONFLICT", "tenant.acme")]
    assert result.errors[0].message == (
        "tenant.acme cannot be deleted: tenant 'acme' still has instances, quotas in use"
    )
    before = dump(any_fleet.settings.db_url)
    with pytest.raises(ConflictError, match="tenant 'acme' still has instances"):
        apply(any_fleet, OP, Approved(desired, plan_json(result)))
    assert dump(any_fleet.settings.db_url) == before


def test_a_tenant_with_a_principal_is_a_plan_conflict_with_the_apis_words(fleet: Fleet) -> None:
    apply_text(fleet, WITH_ACME)
    token(fleet, "acme", "alice")
    result = make_plan(fleet, OP, load_fleetconfig_text(WITHOUT_ACME))
    assert [e.message for e in result.errors] == [
        "tenant.acme cannot be deleted: tenant 'acme' still has principals"
    ]
    with pytest.raises(ConflictError) as refused:
        fleet.api.tenants.delete(OP, "acme")
    assert refused.value.message == "tenant 'acme' still has pool offers, principals, quotas"


def test_a_provider_pool_owned_by_a_tenant_is_refused_by_validate_not_by_apply() -> None:
    """validate and plan passed, then apply answered NOT_FOUND: the API finds a pool's
    provider account among its owner's, and a FleetConfig's accounts are root's."""
    text = HEAD + (
        "tenants:\n  - { id: acme }\n"
        "providerAccounts:\n  - { name: hz, provider: hetzner, tokenEnv: HCLOUD_TOKEN }\n"
        "pools:\n  - { name: p1, kind: provider, owner: acme, providerAccount: hz }\n"
    )
    with pytest.raises(InvalidInputError) as refused:
        load_fleetconfig_text(text, file="fleet.yaml")
    [diagnostic] = refused.value.details["errors"]
    assert diagnostic["path"] == "$.pools[0].owner"
    assert diagnostic["message"] == (
        "provider pool 'p1' is owned by 'acme', but a FleetConfig's provider accounts are "
        "root's and a pool uses its owner's account: leave owner out (or set it to root)"
    )
    load_fleetconfig_text(text.replace("owner: acme, ", ""), file="fleet.yaml")

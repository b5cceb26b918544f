"""FleetConfig apply through the API: idempotence, ownership, all or nothing, locks, saved plans."""

from __future__ import annotations

import dataclasses
import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bcfleet.clock import FakeClock
from bcfleet.errors import (
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    LockedError,
    NotFoundError,
    SizeInUseError,
    StalePlanError,
)
from bcfleet.fleet import Fleet
from bcfleet.providers.fake_server import FakeHetzner
from bcfleet.reconcile import lock
from bcfleet.reconcile.actions import Plan
from bcfleet.reconcile.apply import ApplyResult, Approved, apply, make_plan, plan_json
from bcfleet.reconcile.load import load_fleetconfig_text
from bcfleet.reconcile.render import render_text
from bcfleet.reconcile.saved import SavedPlan, approved_from
from bcfleet.store.models import Tenant
from bcfleet.store.uow import current_revision
from tests.support.builders import OP, flavor, hosted_pool, token
from tests.support.fleet import T0, open_fleet
from tests.support.fleetconfig import BASE, CHANGED, EXAMPLE, dump, without_compute


def desired(text: str = BASE) -> Any:
    return load_fleetconfig_text(text, file="fleet.yaml")


def planned(fleet: Fleet, text: str = BASE, **options: bool) -> Plan:
    return make_plan(fleet, OP, desired(text), **options)


def apply_text(fleet: Fleet, text: str = BASE, **options: Any) -> ApplyResult:
    """Plan and apply as `fleet apply -f --yes` does."""
    allow_empty = bool(options.pop("allow_empty", False))
    result = planned(fleet, text, allow_empty=allow_empty)
    approved = Approved(desired(text), plan_json(result), allow_empty, auto_approve=True)
    return apply(fleet, OP, approved, **options)


def changes(result: Plan) -> dict[str, tuple[str, ...]]:
    return {action.address: action.actions for action in result.changes}


def revision(fleet: Fleet) -> int:
    with fleet.read() as session:
        return current_revision(session)


# ---------------------------------------------------------------------------
# Idempotence


def test_the_example_applies_and_then_plans_no_changes(any_fleet: Fleet) -> None:
    text = EXAMPLE.read_text()
    result = apply_text(any_fleet, text)
    assert result.message == "Apply complete! 1 adopted, 15 added, 0 changed, 0 deleted."
    again = planned(any_fleet, text)
    assert not again.has_changes and again.errors == ()
    flavors = any_fleet.api.flavors.list(OP, tenant_id="acme", pool_id="vps-fra")["items"]
    assert [f["name"] for f in flavors] == ["g1.large", "g1.small", "gpu1.l40s"]
    gpu = next(f for f in flavors if f["name"] == "gpu1.l40s")
    assert gpu["placement"] == {
        "numaAffine": True,
        "pinned": True,
        "hugepageSizeBytes": 1073741824,
    }
    quota = any_fleet.api.quotas.show(OP, tenant_id="acme", pool="hetzner-fsn")["items"][0]
    assert quota["limits"] == {"vcpu": 16, "memoryGiB": 64, "diskGiB": None, "gpu": None}
    settings = any_fleet.api.settings.compute_show(OP, tenant_id="acme")
    assert settings["defaultSize"] == "large"
    assert settings["totalCreditsPerMonth"] == 2160  # (1 + 2) spares x 720 hours


def test_a_changed_document_applies_exactly_its_changes(any_fleet: Fleet) -> None:
    apply_text(any_fleet)
    result = planned(any_fleet, CHANGED)
    assert changes(result) == {
        "tenant.acme": ("update",),
        "pool.vps-fra": ("update",),
        "host.fra-01": ("update",),
        "flavor.vps-fra.g1.large": ("update",),
        "flavor.vps-fra.g1.medium": ("create",),
        "quota.acme.hetzner-fsn": ("update",),
        "flavor.vps-fra.g1.small": ("delete",),
        "offer.hetzner-fsn.acme": ("delete",),
    }
    done = apply_text(any_fleet, CHANGED)
    assert done.message == "Apply complete! 1 added, 5 changed, 2 deleted."
    assert not planned(any_fleet, CHANGED).has_changes
    pool = any_fleet.api.pools.show(OP, pool="vps-fra")
    assert pool["policy"]["overcommit"]["vcpu"] == 3
    assert any_fleet.api.pools.show(OP, pool="hetzner-fsn")["offeredTo"] == []
    host = any_fleet.api.hosts.show(OP, host="fra-01")
    assert host["labels"] == {}


def test_one_apply_bumps_the_revision_once_and_no_changes_not_at_all(fleet: Fleet) -> None:
    before = revision(fleet)
    apply_text(fleet)
    assert revision(fleet) == before + 1
    result = apply_text(fleet)
    assert not result.plan.has_changes and revision(fleet) == before + 1


# ---------------------------------------------------------------------------
# Ownership


def test_declared_objects_made_through_the_api_are_adopted(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme", name="ACME")
    pool = hosted_pool(fleet, "vps-fra", offered_to=("acme",))
    flavor(fleet, pool["id"], "g1.small", vcpu=2, memory_gib=4, disk_gib=20)
    result = planned(fleet)
    assert changes(result)["tenant.acme"] == ("adopt",)
    assert changes(result)["pool.vps-fra"] == ("adopt", "update")  # overcommit differs
    assert changes(result)["flavor.vps-fra.g1.small"] == ("adopt", "update")
    done = apply_text(fleet)
    assert done.message.startswith("Apply complete! 5 adopted, ")
    assert not planned(fleet).has_changes
    small = fleet.api.flavors.get(OP, tenant_id="root", pool_id="vps-fra", name="g1.small")
    assert small["diskGiB"] == 40
    removed = BASE.replace(
        "  - { pool: vps-fra, name: g1.small, vcpu: 2, memoryGiB: 4, diskGiB: 40 }\n", ""
    )
    assert changes(planned(fleet, removed)) == {"flavor.vps-fra.g1.small": ("delete",)}


def test_objects_made_through_the_api_are_never_deleted(fleet: Fleet) -> None:
    apply_text(fleet)
    flavor(fleet, "vps-fra", "handmade", vcpu=1, memory_gib=1, disk_gib=10)
    fleet.api.tenants.create(OP, "globex")
    assert not planned(fleet).has_changes
    apply_text(fleet)
    names = [
        f["name"] for f in fleet.api.flavors.list(OP, tenant_id="root", pool_id="vps-fra")["items"]
    ]
    assert "handmade" in names


def test_a_removed_flavor_that_instances_used_is_archived(fleet: Fleet) -> None:
    apply_text(fleet)
    fleet.api.instances.create(OP, tenant_id="acme", pool_id="vps-fra", flavor="g1.large")
    removed = BASE.replace(
        "  - { pool: vps-fra, name: g1.large, vcpu: 8, memoryGiB: 32, diskGiB: 200 }\n", ""
    )
    result = planned(fleet, removed)
    assert changes(result) == {"flavor.vps-fra.g1.large": ("archive",)}
    assert "instance rows reference it" in result.changes[0].reason
    assert apply_text(fleet, removed).message.endswith("0 deleted, 1 archived.")
    assert not planned(fleet, removed).has_changes
    assert changes(planned(fleet)) == {"flavor.vps-fra.g1.large": ("update",)}  # restores it


def test_removing_every_managed_object_needs_allow_empty(fleet: Fleet) -> None:
    apply_text(fleet)
    empty = "apiVersion: bcfleet.dev/v1\nkind: FleetConfig\n"
    result = planned(fleet, empty)
    assert result.errors and "--allow-empty" in result.errors[0].message
    with pytest.raises(InvalidInputError):
        apply_text(fleet, empty)
    done = apply_text(fleet, empty, allow_empty=True)
    assert done.plan.summary.delete > 0
    assert fleet.api.pools.list(OP)["items"] == []


def test_a_pool_owner_cannot_change(fleet: Fleet) -> None:
    apply_text(fleet)
    moved = BASE.replace(
        "  - name: vps-fra\n    kind: vps-host\n",
        "  - name: vps-fra\n    kind: vps-host\n    owner: acme\n",
    )
    result = planned(fleet, moved)
    assert [e.code for e in result.errors] == ["UNSUPPORTED"]
    assert "owner cannot change (root -> acme)" in result.errors[0].message


def test_offering_a_pool_to_its_owner_is_ignored_with_a_warning() -> None:
    fleet_ = desired(BASE.replace("offeredTo: [acme]\n", "offeredTo: [acme, root]\n"))
    assert [o.tenant for o in fleet_.offers if o.pool == "vps-fra"] == ["acme"]
    assert any("owns pool 'vps-fra'" in w.message for w in fleet_.warnings)


def test_a_removed_quota_is_cleared_and_hosts_and_accounts_follow(fleet: Fleet) -> None:
    apply_text(fleet)
    edited = (
        BASE.replace("  - { tenant: acme, pool: hetzner-fsn, vcpu: 16, memoryGiB: 64 }\n", "")
        .replace("  - { name: fra-02, pool: vps-fra }\n", "")
        .replace(
            "tokenEnv: HCLOUD_TOKEN }", "tokenEnv: HZ_TOKEN, endpoint: http://127.0.0.1:8787 }"
        )
    )
    assert changes(planned(fleet, edited)) == {
        "providerAccount.hetzner-main": ("update",),
        "quota.acme.hetzner-fsn": ("delete",),
        "host.fra-02": ("delete",),
    }
    apply_text(fleet, edited)
    assert not planned(fleet, edited).has_changes
    assert (
        fleet.api.quotas.show(OP, tenant_id="acme", pool="hetzner-fsn")["items"][0]["limits"] == {}
    )
    with pytest.raises(NotFoundError):
        fleet.api.hosts.show(OP, host="fra-02")
    account = fleet.api.provider_accounts.list(OP, tenant_id="root")["items"][0]
    assert (account["tokenEnv"], account["endpoint"]) == ("HZ_TOKEN", "http://127.0.0.1:8787")


# ---------------------------------------------------------------------------
# One transaction


def test_an_error_in_the_middle_leaves_everything_as_it_was(any_fleet: Fleet) -> None:
    globex = BASE.replace(
        "  - { id: acme, name: ACME }\n", "  - { id: acme, name: ACME }\n  - { id: globex }\n"
    )
    apply_text(any_fleet, globex)
    before, rows = revision(any_fleet), dump(any_fleet.settings.db_url)
    broken = BASE.replace(
        "name: g1.small,",
        "name: g1.tiny, vcpu: 1, memoryGiB: 1, diskGiB: 5 }\n  - { pool: vps-fra, name: g1.small,",
    )

    def fail_after_the_first(done: int) -> None:  # the database refuses the second action
        if done == 1:
            raise ConflictError("tenant 'globex' is still referenced")

    with pytest.raises(ConflictError, match="globex"):
        apply_text(any_fleet, broken, between=fail_after_the_first)
    names = [
        f["name"]
        for f in any_fleet.api.flavors.list(OP, tenant_id="root", pool_id="vps-fra")["items"]
    ]
    assert "g1.tiny" not in names
    assert revision(any_fleet) == before
    assert lock.current(any_fleet) is None  # released when the apply failed
    assert dump(any_fleet.settings.db_url) == rows


def test_api_calls_in_a_transaction_commit_together_or_not_at_all(fleet: Fleet) -> None:
    with pytest.raises(RuntimeError, match="boom"), fleet.transaction() as joined:
        joined.api.tenants.create(OP, "acme")
        joined.api.pools.create(OP, tenant_id="acme", name="p1", kind="vps-host")
        raise RuntimeError("boom")
    assert [t["id"] for t in fleet.api.tenants.list(OP)["items"]] == ["root"]
    before = revision(fleet)
    with fleet.transaction() as joined:
        joined.api.tenants.create(OP, "acme")
        joined.api.pools.create(OP, tenant_id="acme", name="p1", kind="vps-host")
        assert [p["name"] for p in joined.api.pools.list(OP)["items"]] == ["p1"]
        with pytest.raises(RuntimeError):
            joined.transaction().__enter__()
    assert revision(fleet) == before + 1
    assert fleet.api.pools.show(OP, pool="p1")["owner"] == "acme"


def test_every_call_keeps_its_own_authorization(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme")
    acme = token(fleet, "acme", "alice")
    with pytest.raises(ForbiddenError):
        make_plan(fleet, acme, desired())
    with fleet.transaction() as joined, pytest.raises(ForbiddenError):
        joined.api.pools.create(acme, tenant_id="root", name="p1", kind="vps-host")


COMPUTE = EXAMPLE.read_text()


def test_a_spares_change_shows_credits_and_applies(fleet: Fleet) -> None:
    apply_text(fleet, COMPUTE)
    more = COMPUTE.replace(
        "large:  { enabled: true, spares: 2 }", "large:  { enabled: true, spares: 4 }"
    )
    result = planned(fleet, more)
    assert changes(result) == {"compute.acme": ("update",)}
    credits = result.changes[0].credits
    assert credits is not None and (credits.total_before, credits.total_after) == (2160, 3600)
    apply_text(fleet, more)
    assert not planned(fleet, more).has_changes
    assert fleet.api.settings.compute_show(OP, tenant_id="acme")["totalCreditsPerMonth"] == 3600


MORE_LARGE = COMPUTE.replace(
    "large:  { enabled: true, spares: 2 }", "large:  { enabled: true, spares: 4 }"
)


def spares(fleet: Fleet) -> dict[str, int]:
    sizes = fleet.api.settings.compute_show(OP, tenant_id="acme")["sizes"]
    return {size: sizes[size]["spares"] for size in ("medium", "large")}


@pytest.mark.parametrize("saved", [pytest.param(False, id="shown"), pytest.param(True, id="saved")])
def test_a_write_to_a_before_value_the_operator_saw_stales_the_plan(
    any_fleet: Fleet, saved: bool
) -> None:
    """The before-values shown are part of what was approved: medium 1 was shown, medium is 5
    now, so applying large 2 -> 4 would put medium back to 1 unseen. STALE_PLAN, no change."""
    apply_text(any_fleet, COMPUTE)
    shown = plan_json(planned(any_fleet, MORE_LARGE))
    approved = Approved(desired(MORE_LARGE), shown, saved=saved)
    any_fleet.api.settings.compute_set(OP, tenant_id="acme", spares={"medium": 5})
    before = revision(any_fleet)
    with pytest.raises(StalePlanError, match=r"compute\.acme") as refused:
        apply(any_fleet, OP, approved)
    assert refused.value.details["address"] == "compute.acme"
    assert spares(any_fleet) == {"medium": 5, "large": 2} and revision(any_fleet) == before


@pytest.mark.parametrize("saved", [pytest.param(False, id="shown"), pytest.param(True, id="saved")])
def test_a_write_to_something_the_plan_does_not_touch_keeps_it_valid(
    any_fleet: Fleet, saved: bool
) -> None:
    apply_text(any_fleet, COMPUTE)
    shown = plan_json(planned(any_fleet, MORE_LARGE))
    any_fleet.api.tenants.create(OP, "globex")
    done = apply(any_fleet, OP, Approved(desired(MORE_LARGE), shown, saved=saved))
    assert not done.replanned and changes(done.plan) == {"compute.acme": ("update",)}
    assert spares(any_fleet) == {"medium": 1, "large": 4}


def test_settings_saved_through_the_api_are_adopted(fleet: Fleet) -> None:
    apply_text(fleet, without_compute(COMPUTE))
    fleet.api.settings.compute_set(OP, tenant_id="acme", spares={"medium": 1})
    result = planned(fleet, COMPUTE)
    assert changes(result) == {"compute.acme": ("adopt", "update")}
    apply_text(fleet, COMPUTE)
    assert not planned(fleet, COMPUTE).has_changes


def test_turning_off_a_size_in_use_is_a_plan_error_and_changes_nothing(any_fleet: Fleet) -> None:
    apply_text(any_fleet, COMPUTE)
    any_fleet.api.environments.create(OP, tenant_id="acme", name="staging", size="large")
    any_fleet.api.indexes.create(
        OP, tenant_id="acme", workspace="search", name="docs", pod_size="large"
    )
    off = COMPUTE.replace("defaultSize: large", "defaultSize: medium").replace(
        "large:  { enabled: true, spares: 2 }", "large:  { enabled: false }"
    )
    result = planned(any_fleet, off)
    assert [e.code for e in result.errors] == ["SIZE_IN_USE"]
    assert "environment staging, index docs (workspace search)" in result.errors[0].message
    before = dump(any_fleet.settings.db_url)
    with pytest.raises(SizeInUseError):
        apply_text(any_fleet, off)
    assert dump(any_fleet.settings.db_url) == before


def test_a_tenant_removed_takes_its_compute_settings_along(fleet: Fleet) -> None:
    globex = COMPUTE.replace(
        "  - { id: acme, name: ACME }\n", "  - { id: acme, name: ACME }\n  - { id: globex }\n"
    ) + ("  - tenant: globex\n    sizes: { small: { spares: 1 } }\n")
    apply_text(fleet, globex)
    assert fleet.api.settings.compute_show(OP, tenant_id="globex")["totalCreditsPerMonth"] == 720
    assert changes(planned(fleet, COMPUTE)) == {
        "tenant.globex": ("delete",),
        "compute.globex": ("delete",),  # shown, and run first: before any pool it names
    }
    apply_text(fleet, COMPUTE)
    assert [t["id"] for t in fleet.api.tenants.list(OP)["items"]] == ["acme", "root"]


# ---------------------------------------------------------------------------
# The apply lock


def test_a_held_lock_refuses_a_second_apply_naming_its_holder(fleet: Fleet) -> None:
    held = lock.acquire(fleet, operation="apply other.yaml", holder="ci@runner-7")
    with pytest.raises(LockedError) as caught:
        apply_text(fleet)
    assert "ci@runner-7" in caught.value.message and held.id in caught.value.message
    assert caught.value.details["lock"]["operation"] == "apply other.yaml"
    assert fleet.api.pools.list(OP)["items"] == []
    lock.force_unlock(fleet, OP, held.id)
    assert apply_text(fleet).plan.has_changes


def test_a_waiting_apply_takes_an_expired_lock(fleet: Fleet, clock: FakeClock) -> None:
    lock.acquire(fleet, operation="apply", holder="gone@elsewhere")
    with pytest.raises(LockedError, match="after waiting 10s"):
        apply_text(fleet, lock_timeout=10)
    clock.advance(fleet.settings.lock_ttl_seconds)
    done = apply_text(fleet)
    assert done.lock.holder != "gone@elsewhere"
    assert lock.current(fleet) is None


def test_locks_never_bump_the_revision_and_unknown_ids_are_not_found(fleet: Fleet) -> None:
    before = revision(fleet)
    info = lock.acquire(fleet, operation="apply")
    lock.release(fleet, info)
    assert revision(fleet) == before
    with pytest.raises(NotFoundError):
        lock.force_unlock(fleet, OP, "lock_nope")
    fleet.api.tenants.create(OP, "acme")
    acme = token(fleet, "acme", "alice")
    held = lock.acquire(fleet, operation="apply")
    with pytest.raises(ForbiddenError):
        lock.force_unlock(fleet, acme, held.id)


# ---------------------------------------------------------------------------
# Saved plans


def saved_from(fleet: Fleet, text: str = BASE) -> SavedPlan:
    return SavedPlan(file="fleet.yaml", text=text, plan=plan_json(planned(fleet, text)))


def test_a_saved_plan_applies_once_and_then_is_stale(fleet: Fleet) -> None:
    saved = saved_from(fleet)  # made on an empty database
    assert apply(fleet, OP, approved_from(saved)).plan.has_changes
    with pytest.raises(StalePlanError, match="no longer matches"):
        apply(fleet, OP, approved_from(saved))


def test_a_saved_plan_is_stale_after_a_write_to_what_it_touches(fleet: Fleet) -> None:
    saved = saved_from(fleet)
    fleet.api.tenants.create(OP, "acme", name="Acme Inc")  # the plan created acme
    with pytest.raises(StalePlanError, match=r"\(tenant.acme changed"):
        apply(fleet, OP, approved_from(saved))
    assert fleet.api.pools.list(OP)["items"] == []


def test_a_saved_plan_survives_a_write_to_what_it_does_not_touch(fleet: Fleet) -> None:
    saved = saved_from(fleet)
    fleet.api.tenants.create(OP, "globex")
    assert apply(fleet, OP, approved_from(saved)).plan.has_changes
    assert not planned(fleet).has_changes


def test_a_saved_plan_whose_plan_would_differ_is_stale(fleet: Fleet) -> None:
    saved = saved_from(fleet)
    changed = dataclasses.replace(saved, plan={**saved.plan, "resource_changes": []})
    with pytest.raises(StalePlanError, match="no longer matches"):
        apply(fleet, OP, approved_from(changed))


def test_a_plan_shown_before_the_prompt_is_stale_if_the_state_changed_it(fleet: Fleet) -> None:
    shown = planned(fleet)
    fleet.api.tenants.create(OP, "acme", name="ACME")  # now acme is adopted, not created
    approved = Approved(desired(), plan_json(shown))
    with pytest.raises(StalePlanError, match="review the new plan"):
        apply(fleet, OP, approved)
    replanned = apply(fleet, OP, dataclasses.replace(approved, auto_approve=True))
    assert replanned.replanned and changes(replanned.plan)["tenant.acme"] == ("adopt",)


def test_the_root_tenant_is_never_deleted(fleet: Fleet) -> None:
    with pytest.raises(ConflictError):
        fleet.api.tenants.delete(OP, "root")
    with fleet.read() as session:
        assert session.get(Tenant, "root") is not None


# ---------------------------------------------------------------------------
# flavors.create_many, which apply uses for large documents


def test_create_many_writes_what_create_would(any_fleet: Fleet) -> None:
    pool = hosted_pool(any_fleet, "vps-fra")
    made = any_fleet.api.flavors.create_many(
        OP,
        tenant_id="root",
        pool_id=pool["id"],
        flavors=[
            {"name": "a1", "vcpu": 1, "memory_gib": 2, "disk_gib": 10},
            {
                "name": "g1",
                "vcpu": 8,
                "memory_gib": 32,
                "disk_gib": 200,
                "gpus": 1,
                "placement": {"numaAffine": True},
            },
        ],
        managed=True,
    )["items"]
    for body in made:
        assert body == any_fleet.api.flavors.get(
            OP, tenant_id="root", pool_id="vps-fra", name=body["name"]
        )
    assert made[1]["placement"] == {"numaAffine": True, "pinned": False, "hugepageSizeBytes": None}
    events = any_fleet.api.events.list(OP, types=["flavor.created"])["items"]
    assert [e["data"]["name"] for e in events] == ["a1", "g1"]


@pytest.mark.parametrize(
    ("items", "error"),
    [
        pytest.param(
            [{"name": "a1", "vcpu": 1, "memory_gib": 2, "disk_gib": 10}] * 2,
            ConflictError,
            id="a-name-twice",
        ),
        pytest.param(
            [{"name": "taken", "vcpu": 1, "memory_gib": 2, "disk_gib": 10}],
            ConflictError,
            id="a-name-taken",
        ),
        pytest.param(
            [
                {"name": "ok", "vcpu": 1, "memory_gib": 2, "disk_gib": 10},
                {"name": "bad", "vcpu": 0, "memory_gib": 2, "disk_gib": 10},
            ],
            InvalidInputError,
            id="an-invalid-shape",
        ),
    ],
)
def test_create_many_writes_all_or_nothing(
    fleet: Fleet, items: list[dict[str, Any]], error: type[Exception]
) -> None:
    pool = hosted_pool(fleet, "vps-fra")
    flavor(fleet, pool["id"], "taken")
    with pytest.raises(error):
        fleet.api.flavors.create_many(OP, tenant_id="root", pool_id="vps-fra", flavors=items)
    names = [
        f["name"] for f in fleet.api.flavors.list(OP, tenant_id="root", pool_id="vps-fra")["items"]
    ]
    assert names == ["taken"]


def test_create_many_keeps_authorization(fleet: Fleet) -> None:
    hosted_pool(fleet, "vps-fra")
    acme = token(fleet, "acme", "alice")
    with pytest.raises(NotFoundError):  # a pool nobody has
        fleet.api.flavors.create_many(acme, tenant_id="acme", pool_id="nope", flavors=[])
    with pytest.raises(ForbiddenError):  # offered to acme, so visible, but root's to manage
        fleet.api.flavors.create_many(
            acme,
            tenant_id="acme",
            pool_id="vps-fra",
            flavors=[{"name": "x", "vcpu": 1, "memory_gib": 1, "disk_gib": 1}],
        )


# ---------------------------------------------------------------------------
# Provider pools: offers checked by the provider, over real HTTP to the fake


def provider_doc(url: str, *offers: str) -> str:
    flavors = "".join(
        f"  - {{ pool: hz-fsn, name: {offer}, vcpu: 2, memoryGiB: 4, diskGiB: 40, offerId: {offer} }}\n"
        for offer in offers
    )
    return (
        "apiVersion: bcfleet.dev/v1\nkind: FleetConfig\n"
        f"providerAccounts:\n  - {{ name: hz, provider: hetzner, tokenEnv: HCLOUD_TOKEN, endpoint: '{url}' }}\n"
        "pools:\n  - { name: hz-fsn, kind: provider, providerAccount: hz }\n"
        f"flavors:\n{flavors}"
    )


def test_provider_offers_are_checked_and_reported(
    fleet: Fleet, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HCLOUD_TOKEN", "hc-apply-test")
    with FakeHetzner(token="hc-apply-test", clock=clock) as fake:
        done = apply_text(fleet, provider_doc(fake.url, "cx23", "cx22"))
        assert any("offer 'cx22' is deprecated" in w for w in done.warnings)
        with pytest.raises(InvalidInputError, match="cx99"):
            apply_text(fleet, provider_doc(fake.url, "cx23", "cx22", "cx99"))
    names = [
        f["name"] for f in fleet.api.flavors.list(OP, tenant_id="root", pool_id="hz-fsn")["items"]
    ]
    assert names == ["cx22", "cx23"]


# ---------------------------------------------------------------------------
# Any valid document, once applied, plans no changes: stored values go through the
# loader's normalizers (default ratios, default reserves, empty placements, capped spares).

RATIOS = st.sampled_from([0.1, 0.5, 1, 1.5, 2, 3.25, 100])
SIZE_NAMES = ("small", "medium", "large", "xlarge")


@st.composite
def documents(draw: st.DrawFn) -> str:
    tenants = ["acme", "globex"][: draw(st.integers(1, 2))]
    lines = ["apiVersion: bcfleet.dev/v1", "kind: FleetConfig", "tenants:"]
    lines += [f"  - {{ id: {t} }}" for t in tenants]
    lines.append("pools:")
    pools = [f"p{i}" for i in range(draw(st.integers(1, 3)))]
    offers: dict[str, list[str]] = {}
    for pool in pools:
        policy = []
        if draw(st.booleans()):
            policy.append(f"overcommit: {{ vcpu: {draw(RATIOS)}, diskGiB: {draw(RATIOS)} }}")
        if draw(st.booleans()):
            policy.append(f"hostReserve: {{ memoryGiB: {draw(st.integers(0, 16))} }}")
        gpu = ", gpuModel: L40S" if draw(st.booleans()) else ""
        offered = offers[pool] = draw(st.lists(st.sampled_from(tenants), unique=True))
        lines.append(
            f"  - {{ name: {pool}, kind: vps-host{gpu}, offeredTo: [{', '.join(offered)}], "
            f"policy: {{ {', '.join(policy)} }} }}"
        )
    lines.append("hosts:")
    for index in range(draw(st.integers(0, 2))):
        labels = '{ bc.dev/cap.instance.placement: "true" }' if draw(st.booleans()) else "{}"
        controlled = str(draw(st.booleans())).lower()
        lines.append(
            f"  - {{ name: h{index}, pool: {draw(st.sampled_from(pools))}, labels: {labels}, "
            f"tenantControlled: {controlled} }}"
        )
    lines.append("flavors:")
    for index in range(draw(st.integers(0, 4))):
        placement = draw(
            st.sampled_from(
                ["", ", placement: {}", ", placement: { numaAffine: false }",
                 ", placement: { pinned: true, hugepageSizeBytes: 2097152 }"]
            )
        )  # fmt: skip
        gpus = draw(st.sampled_from(["", ", gpus: 0", ", gpus: 1"]))
        lines.append(
            f"  - {{ pool: {draw(st.sampled_from(pools))}, name: f{index}, vcpu: {draw(st.integers(1, 8))}, "
            f"memoryGiB: {draw(st.integers(1, 64))}, diskGiB: 10{gpus}{placement} }}"
        )
    lines.append("quotas:")
    for tenant in draw(st.lists(st.sampled_from(tenants), unique=True)):
        limits = draw(st.lists(st.sampled_from(["vcpu: 8", "memoryGiB: 0", "gpu: 2"]), unique=True))
        lines.append(f"  - {{ tenant: {tenant}, pool: {pools[0]}, {', '.join(limits)} }}")
    lines.append("compute:")
    for tenant in draw(st.lists(st.sampled_from(tenants), unique=True)):
        sizes = []
        for size in SIZE_NAMES:
            choice = draw(
                st.sampled_from(["", "{}", "{ spares: 1 }", "{ enabled: false }", "{ spares: 12 }"])
            )
            if size == "large" and choice == "{ enabled: false }":
                choice = "{ spares: 2 }"  # large is the default below: it stays on
            if choice:
                sizes.append(f"{size}: {choice}")
        serverless = f"serverlessPool: {pools[0]}, " if tenant in offers[pools[0]] else ""
        lines.append(
            f"  - {{ tenant: {tenant}, {serverless}defaultSize: large, "
            f"sizes: {{ {', '.join(sizes)} }} }}"
        )
    text = "\n".join(lines) + "\n"
    for section in ("hosts", "flavors", "quotas", "compute"):  # sections left empty
        text = (
            text.replace(f"{section}:\n", f"{section}: []\n")
            if f"{section}:\n  -" not in text
            else text
        )
    return text


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents())
def test_any_applied_document_plans_no_changes(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        fleet = open_fleet(f"sqlite:///{tmp}/fleet.db", FakeClock(T0))
        try:
            apply_text(fleet, text)
            again = planned(fleet, text)
            assert [a.address for a in again.changes] == [], render_text(again)
        finally:
            fleet.close()


# ---------------------------------------------------------------------------
# What the configuration no longer declares is removed, in an order that works

ROOT_ONLY = "apiVersion: bcfleet.dev/v1\nkind: FleetConfig\ntenants:\n  - { id: root }\n"
SECTIONS = ("tenants", "providerAccounts", "pools", "hosts", "flavors", "quotas", "compute")


def without(text: str, *sections: str) -> str:
    """The document with these top-level sections left out (each runs to the next one)."""
    kept: list[str] = []
    dropping = False
    for line in text.splitlines(keepends=True):
        if line[:1].isalpha():
            dropping = line.split(":", 1)[0] in sections
        if not dropping:
            kept.append(line)
    return "".join(kept)


def test_dropping_the_compute_section_deletes_the_settings(any_fleet: Fleet) -> None:
    apply_text(any_fleet, COMPUTE)
    dropped = without(COMPUTE, "compute")
    assert dropped.rstrip() == without_compute(COMPUTE).rstrip()
    assert changes(planned(any_fleet, dropped)) == {"compute.acme": ("delete",)}
    assert (
        apply_text(any_fleet, dropped).message == "Apply complete! 0 added, 0 changed, 1 deleted."
    )
    assert not planned(any_fleet, dropped).has_changes
    settings = any_fleet.api.settings.compute_show(OP, tenant_id="acme")
    assert settings["serverlessPool"] is None and settings["totalCreditsPerMonth"] == 0


def test_a_root_only_config_applies_settings_before_the_pool_they_name(any_fleet: Fleet) -> None:
    apply_text(any_fleet, COMPUTE)
    result = planned(any_fleet, ROOT_ONLY, allow_empty=True)
    assert result.errors == () and changes(result)["compute.acme"] == ("delete",)
    addresses = [action.address for action in result.changes]
    assert addresses.index("compute.acme") < addresses.index("pool.vps-fra")
    done = apply_text(any_fleet, ROOT_ONLY, allow_empty=True)
    assert done.plan.summary.delete == result.summary.delete
    assert not planned(any_fleet, ROOT_ONLY).has_changes
    assert any_fleet.api.pools.list(OP)["items"] == []


def test_settings_made_outside_naming_a_removed_pool_are_a_plan_conflict(fleet: Fleet) -> None:
    apply_text(fleet, without_compute(COMPUTE))
    fleet.api.settings.compute_set(OP, tenant_id="acme", serverless_pool="vps-fra")
    result = planned(fleet, without(COMPUTE, "pools", "hosts", "flavors", "quotas", "compute"))
    assert [e.address for e in result.errors if e.code == "CONFLICT"] == ["pool.vps-fra"]
    assert "compute.acme (not managed by a FleetConfig)" in result.errors[0].message


EDITS = [(section,) for section in SECTIONS] + [
    ("pools", "compute"),
    ("hosts", "flavors"),
    ("flavors", "quotas", "compute"),
    ("pools", "hosts", "flavors", "quotas", "compute"),
    ("providerAccounts", "pools", "hosts", "flavors", "quotas", "compute"),
    ("tenants", "providerAccounts", "pools", "hosts", "flavors", "quotas", "compute"),
]


def test_every_valid_edit_plans_without_errors_applies_and_then_plans_no_changes(
    any_fleet: Fleet,
) -> None:
    """Sections dropped from the example (everything in them is managed, nothing is in use):
    each valid document plans without errors, applies, and a second plan of the same file
    shows no changes; putting the sections back does the same."""
    applied = 0
    for edit in EDITS:
        text = without(COMPUTE, *edit)
        try:
            desired(text)
        except InvalidInputError:
            continue  # the document itself is refused (a section names a dropped one)
        for document in (text, COMPUTE):
            result = planned(any_fleet, document, allow_empty=True)
            assert result.errors == (), (edit, [e.message for e in result.errors])
            apply_text(any_fleet, document, allow_empty=True)
            assert not planned(any_fleet, document, allow_empty=True).has_changes, edit
            applied += 1
    assert applied >= 10

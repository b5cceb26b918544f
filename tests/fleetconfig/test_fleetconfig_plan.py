"""FleetConfig plans: ownership, archiving, order, capacity, credits, sizes in use, text and JSON.

Golden files live in tests/fleetconfig/golden/; run with UPDATE_GOLDEN=1 to rewrite them.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bcfleet.domain.compute_settings import (
    ComputeSettings,
    EnvironmentUse,
    IndexUse,
    ServiceUse,
    SizeSetting,
    SizeUsers,
    check_in_use,
)
from bcfleet.domain.fit import ResourceRow, capacity
from bcfleet.errors import ConflictError, InvalidInputError, SizeInUseError
from bcfleet.reconcile.actions import Plan, Summary, freeze
from bcfleet.reconcile.load import load_fleetconfig, load_fleetconfig_text
from bcfleet.reconcile.model import (
    DesiredFleet,
    FlavorSpec,
    HostCapacity,
    ObservedCompute,
    ObservedFlavor,
    ObservedFleet,
    ObservedHost,
    ObservedOffer,
    ObservedPool,
    ObservedProviderAccount,
    ObservedQuota,
    ObservedTenant,
)
from bcfleet.reconcile.plan import plan
from bcfleet.reconcile.render import (
    NO_CHANGES,
    render_json,
    render_json_text,
    render_text,
    summary_line,
)

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).resolve().parent / "golden"

BASE = """\
apiVersion: bcfleet.dev/v1
kind: FleetConfig
tenants:
  - { id: root }
  - { id: acme, name: ACME }
providerAccounts:
  - { name: hetzner-main, provider: hetzner, tokenEnv: HCLOUD_TOKEN }
pools:
  - name: vps-fra
    kind: vps-host
    offeredTo: [acme]
    gpuModel: L40S
    policy:
      overcommit: { vcpu: 2, memoryGiB: 1.5 }
      hostReserve: { vcpu: 2 }
  - { name: hetzner-fsn, kind: provider, providerAccount: hetzner-main }
hosts:
  - { name: fra-01, pool: vps-fra, labels: { bc.dev/cap.instance.placement: "true" } }
  - { name: fra-02, pool: vps-fra }
flavors:
  - { pool: vps-fra, name: g1.small, vcpu: 2, memoryGiB: 4, diskGiB: 40 }
  - { pool: vps-fra, name: gpu1.l40s, vcpu: 8, memoryGiB: 32, diskGiB: 200, gpus: 1,
      placement: { numaAffine: true, pinned: true, hugepageSizeBytes: 1073741824 } }
  - { pool: hetzner-fsn, name: cx23, vcpu: 2, memoryGiB: 4, diskGiB: 40, offerId: cx23 }
quotas:
  - { tenant: acme, pool: vps-fra, vcpu: 64, memoryGiB: 256, diskGiB: 2000, gpu: 4 }
compute:
  - tenant: acme
    serverlessPool: vps-fra
    defaultSize: large
    sizes:
      small:  { enabled: true, spares: 0 }
      medium: { enabled: true, spares: 1 }
      large:  { enabled: true, spares: 2 }
      xlarge: { enabled: false }
"""


# ---------------------------------------------------------------------------
# Builders


def desired(text: str = BASE) -> DesiredFleet:
    return load_fleetconfig_text(text, file="fleet.yaml")


def edited(old: str, new: str, text: str = BASE) -> DesiredFleet:
    assert old in text, old
    return desired(text.replace(old, new))


def observed_from(fleet: DesiredFleet, *, managed: bool = True, revision: int = 7) -> ObservedFleet:
    """The state right after applying ``fleet``: what the database loader would return."""
    return ObservedFleet(
        revision=revision,
        tenants=tuple(ObservedTenant(t, managed) for t in fleet.tenants),
        provider_accounts=tuple(
            ObservedProviderAccount(a, f"pacct_{a.name}", managed) for a in fleet.provider_accounts
        ),
        pools=tuple(ObservedPool(p, f"pool_{p.name}", managed) for p in fleet.pools),
        offers=tuple(ObservedOffer(o, managed) for o in fleet.offers),
        hosts=tuple(ObservedHost(h, f"node_{h.name}", managed) for h in fleet.hosts),
        flavors=tuple(ObservedFlavor(f, f"flv_{f.name}", managed) for f in fleet.flavors),
        quotas=tuple(ObservedQuota(q, managed) for q in fleet.quotas),
        compute=tuple(ObservedCompute(c, managed) for c in fleet.compute),
    )


def with_flavor(state: ObservedFleet, name: str, **changes: object) -> ObservedFleet:
    """``state`` with the flavor ``name`` changed (``spec__vcpu=1`` changes its spec)."""
    spec_changes = {
        k.removeprefix("spec__"): v for k, v in changes.items() if k.startswith("spec__")
    }
    own = {k: v for k, v in changes.items() if not k.startswith("spec__")}
    flavors = tuple(
        dataclasses.replace(f, spec=dataclasses.replace(f.spec, **spec_changes), **own)  # type: ignore[arg-type]
        if f.spec.name == name
        else f
        for f in state.flavors
    )
    return dataclasses.replace(state, flavors=flavors)


def extra_flavor(state: ObservedFleet, name: str, **flags: bool) -> ObservedFleet:
    flavor = ObservedFlavor(FlavorSpec("vps-fra", name, 1, 1, 10), f"flv_{name}", **flags)
    return dataclasses.replace(state, flavors=(*state.flavors, flavor))


def host(name: str, pool: str = "vps-fra", **rows: tuple[int, int, float, int]) -> HostCapacity:
    """A host's rows: resource=(total, allocatable, ratio, allocated), capacity as vps.hosts stores it."""
    return HostCapacity(
        name,
        pool,
        tuple(
            ResourceRow(resource, allocatable, ratio, capacity(allocatable, ratio), allocated)
            for resource, (_, allocatable, ratio, allocated) in rows.items()
        ),
        {resource: numbers[0] for resource, numbers in rows.items()},
    )


def service(
    workspace: str,
    name: str,
    hosting: str,
    deployed: bool,
    size: str | None,
    environment: str | None = None,
) -> ServiceUse:
    """A service as the in-use check sees it; ``environment`` names an environment of env()."""
    env_id = None if environment is None else f"env_{environment}"
    return ServiceUse(f"svc_{name}", workspace, name, hosting, deployed, size, env_id)  # type: ignore[arg-type]


def index(workspace: str, name: str, pod_size: str | None) -> IndexUse:
    return IndexUse(f"idx_{name}", workspace, name, pod_size, deployed=True)


def env(name: str, size: str) -> EnvironmentUse:
    return EnvironmentUse(f"env_{name}", name, size)


def tenant_users(
    tenant: str,
    services: tuple[ServiceUse, ...] = (),
    indexes: tuple[IndexUse, ...] = (),
    environments: tuple[EnvironmentUse, ...] = (),
) -> tuple[str, SizeUsers]:
    """One tenant's entry of ObservedFleet.size_users."""
    return tenant, SizeUsers(services, indexes, environments)


def changes_of(result: Plan) -> dict[str, tuple[str, ...]]:
    return {action.address: action.actions for action in result.changes}


def assert_golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return
    assert path.exists(), f"{path.name} is missing: run the tests with UPDATE_GOLDEN=1"
    assert text == path.read_text(), f"{path.name} differs: run with UPDATE_GOLDEN=1 if intended"


# ---------------------------------------------------------------------------
# What gets planned


def _applied() -> tuple[DesiredFleet, ObservedFleet]:
    fleet = desired()
    return fleet, observed_from(fleet)


Case = Callable[[], tuple[DesiredFleet, ObservedFleet]]

CASES = [
    pytest.param(
        lambda: (desired(), ObservedFleet()),
        {
            "tenant.acme": ("create",),
            "tenant.root": ("create",),
            "providerAccount.hetzner-main": ("create",),
            "pool.hetzner-fsn": ("create",),
            "pool.vps-fra": ("create",),
            "offer.vps-fra.acme": ("create",),
            "host.fra-01": ("create",),
            "host.fra-02": ("create",),
            "flavor.hetzner-fsn.cx23": ("create",),
            "flavor.vps-fra.g1.small": ("create",),
            "flavor.vps-fra.gpu1.l40s": ("create",),
            "quota.acme.vps-fra": ("create",),
            "compute.acme": ("create",),
        },
        id="empty-state-creates-everything",
    ),
    pytest.param(_applied, {}, id="applied-state-plans-no-changes"),
    pytest.param(
        lambda: (desired(), dataclasses.replace(observed_from(desired()), tenants=())),
        {"tenant.acme": ("create",), "tenant.root": ("create",)},
        id="only-what-is-missing-is-created",
    ),
    pytest.param(
        lambda: (desired(), with_flavor(observed_from(desired()), "g1.small", managed=False)),
        {"flavor.vps-fra.g1.small": ("adopt",)},
        id="unmanaged-and-equal-is-adopted",
    ),
    pytest.param(
        lambda: (
            desired(),
            with_flavor(observed_from(desired()), "g1.small", managed=False, spec__vcpu=1),
        ),
        {"flavor.vps-fra.g1.small": ("adopt", "update")},
        id="unmanaged-and-different-is-adopted-then-updated",
    ),
    pytest.param(
        lambda: (desired(), extra_flavor(observed_from(desired()), "handmade")),
        {},
        id="unmanaged-undeclared-is-never-touched",
    ),
    pytest.param(
        lambda: (desired(), extra_flavor(observed_from(desired()), "old", managed=True)),
        {"flavor.vps-fra.old": ("delete",)},
        id="managed-undeclared-flavor-is-deleted",
    ),
    pytest.param(
        lambda: (
            desired(),
            extra_flavor(observed_from(desired()), "old", managed=True, referenced=True),
        ),
        {"flavor.vps-fra.old": ("archive",)},
        id="referenced-undeclared-flavor-is-archived",
    ),
    pytest.param(
        lambda: (
            desired(),
            extra_flavor(
                observed_from(desired()), "old", managed=True, referenced=True, archived=True
            ),
        ),
        {},
        id="archived-undeclared-flavor-stays-archived",
    ),
    pytest.param(
        lambda: (desired(), with_flavor(observed_from(desired()), "g1.small", archived=True)),
        {"flavor.vps-fra.g1.small": ("update",)},
        id="archived-declared-flavor-is-restored",
    ),
    pytest.param(
        lambda: (
            edited("name: g1.small, vcpu: 2", "name: g1.small, vcpu: 4"),
            observed_from(desired()),
        ),
        {"flavor.vps-fra.g1.small": ("update",)},
        id="changed-flavor-is-updated",
    ),
    pytest.param(
        lambda: (
            desired(
                BASE.replace("offeredTo: [acme]", "offeredTo: []").replace(
                    "    serverlessPool: vps-fra\n", ""
                )
            ),
            observed_from(desired()),
        ),
        {"offer.vps-fra.acme": ("delete",)},
        id="tenant-removed-from-offered-to-loses-the-offer",
    ),
    pytest.param(
        lambda: (edited("{ id: root }", "{ id: root, name: Operator }"), observed_from(desired())),
        {"tenant.root": ("update",)},
        id="renamed-tenant-is-updated",
    ),
    pytest.param(
        lambda: (edited("  - { id: root }\n", ""), observed_from(desired())),
        {},
        id="root-tenant-is-never-deleted",
    ),
    pytest.param(
        lambda: (
            edited("gpu: 4 }", "gpu: 4 }\n  - { tenant: acme, pool: hetzner-fsn, vcpu: 8 }"),
            observed_from(desired()),
        ),
        {"quota.acme.hetzner-fsn": ("create",)},
        id="new-quota-is-created",
    ),
    pytest.param(
        lambda: (
            edited('labels: { bc.dev/cap.instance.placement: "true" }', "labels: {}"),
            observed_from(desired()),
        ),
        {"host.fra-01": ("update",)},
        id="host-labels-are-updated",
    ),
]


@pytest.mark.parametrize(("case", "expected"), CASES)
def test_plan_actions(case: Case, expected: dict[str, tuple[str, ...]]) -> None:
    want, have = case()
    result = plan(want, have)
    assert changes_of(result) == expected
    assert result.errors == ()


def test_an_applied_fleet_plans_only_no_ops() -> None:
    fleet, state = _applied()
    result = plan(fleet, state)
    assert {action.actions for action in result.actions} == {("no-op",)}
    assert len(result.actions) == fleet.object_count
    assert not result.has_changes and not result.applyable
    assert render_text(result) == NO_CHANGES + "\n"


def test_an_applied_example_plans_no_changes() -> None:
    fleet = load_fleetconfig(ROOT / "fleet.example.yaml")
    assert not plan(fleet, observed_from(fleet)).has_changes


def test_creations_follow_dependencies_and_deletions_come_last_in_reverse() -> None:
    fleet = edited("  - { pool: hetzner-fsn, name: cx23", "  - { pool: hetzner-fsn, name: cx33")
    state = dataclasses.replace(observed_from(desired()), tenants=(), compute=())
    state = dataclasses.replace(state, offers=(), quotas=())
    types = [(action.type, action.actions[0]) for action in plan(fleet, state).changes]
    assert types == [
        ("tenant", "create"),
        ("tenant", "create"),
        ("offer", "create"),
        ("flavor", "create"),
        ("quota", "create"),
        ("compute", "create"),
        ("flavor", "delete"),
    ]


def test_removals_say_why() -> None:
    state = extra_flavor(observed_from(desired()), "old", managed=True, referenced=True)
    (archive,) = plan(desired(), state).changes
    assert "instance rows reference it" in archive.reason
    assert archive.after is not None and archive.after["archived"] is True
    state = extra_flavor(observed_from(desired()), "gone", managed=True)
    (delete,) = plan(desired(), state).changes
    assert delete.reason == "no longer in the configuration"
    assert delete.after is None


def test_reshaping_a_used_flavor_says_instances_keep_their_shape() -> None:
    state = with_flavor(observed_from(desired()), "g1.small", referenced=True)
    (update,) = plan(edited("name: g1.small, vcpu: 2", "name: g1.small, vcpu: 4"), state).changes
    assert update.reason == "instances already using it keep the shape they were admitted with"
    assert [(c.path, c.before, c.after) for c in update.changes] == [("vcpu", 2, 4)]


def test_removing_every_managed_object_needs_allow_empty() -> None:
    empty = desired("apiVersion: bcfleet.dev/v1\nkind: FleetConfig\n")
    state = observed_from(desired())
    refused = plan(empty, state)
    assert [error.code for error in refused.errors] == ["INVALID_INPUT"]
    assert not refused.applyable
    with pytest.raises(InvalidInputError):
        refused.raise_for_errors()
    allowed = plan(empty, state, allow_empty=True)
    assert allowed.errors == () and allowed.applyable
    assert all(action.is_removal for action in allowed.changes)


def test_an_empty_document_on_an_unmanaged_state_changes_nothing() -> None:
    empty = desired("apiVersion: bcfleet.dev/v1\nkind: FleetConfig\n")
    result = plan(empty, observed_from(desired(), managed=False))
    assert not result.has_changes and result.errors == ()


def test_compute_settings_left_out_are_deleted() -> None:
    fleet = dataclasses.replace(desired(), compute=())
    result = plan(fleet, observed_from(desired()))
    assert [(a.address, a.actions) for a in result.changes] == [("compute.acme", ("delete",))]
    assert result.errors == () and result.warnings == ()


def test_compute_without_serverless_pool_keeps_the_state_pool() -> None:
    fleet = edited("    serverlessPool: vps-fra\n", "")
    assert fleet.compute[0].serverless_pool is None
    assert not plan(fleet, observed_from(desired())).has_changes
    (created,) = plan(fleet, dataclasses.replace(observed_from(desired()), compute=())).changes
    assert created.after is not None and created.after["serverlessPool"] is None


def test_a_pool_kind_cannot_change() -> None:
    fleet = desired()
    state = observed_from(fleet)
    pools = tuple(
        dataclasses.replace(p, spec=dataclasses.replace(p.spec, kind="provider"))
        if p.spec.name == "vps-fra"
        else p
        for p in state.pools
    )
    result = plan(fleet, dataclasses.replace(state, pools=pools))
    assert [error.code for error in result.errors] == ["UNSUPPORTED"]
    assert "kind cannot change" in result.errors[0].message


def test_a_pool_cannot_be_deleted_while_an_archived_flavor_needs_it() -> None:
    fleet = desired()
    state = with_flavor(observed_from(fleet), "cx23", referenced=True)
    without = edited(
        "  - { pool: hetzner-fsn, name: cx23, vcpu: 2, memoryGiB: 4, diskGiB: 40, "
        "offerId: cx23 }\n",
        "",
        BASE.replace(
            "  - { name: hetzner-fsn, kind: provider, providerAccount: hetzner-main }\n", ""
        ),
    )
    result = plan(without, state)
    assert changes_of(result) == {
        "flavor.hetzner-fsn.cx23": ("archive",),
        "pool.hetzner-fsn": ("delete",),
    }
    (error,) = result.errors
    assert error.code == "CONFLICT" and error.address == "pool.hetzner-fsn"
    assert "flavor.hetzner-fsn.cx23 (archived: instances reference it)" in error.message
    with pytest.raises(ConflictError):
        result.raise_for_errors()


def test_a_host_with_allocations_cannot_be_removed_or_moved() -> None:
    fleet = desired()
    state = dataclasses.replace(
        observed_from(fleet), capacity=(host("fra-02", vcpu=(32, 30, 2.0, 8)),)
    )
    removed = plan(edited("  - { name: fra-02, pool: vps-fra }\n", ""), state)
    assert [(e.code, e.address) for e in removed.errors] == [("CONFLICT", "host.fra-02")]
    assert "drain it first" in removed.errors[0].message
    moved_text = BASE.replace(
        "  - { name: hetzner-fsn", "  - { name: vps-ams, kind: vps-host }\n  - { name: hetzner-fsn"
    ).replace("{ name: fra-02, pool: vps-fra }", "{ name: fra-02, pool: vps-ams }")
    moved = plan(desired(moved_text), state)
    assert [(e.code, e.address) for e in moved.errors] == [("CONFLICT", "host.fra-02")]
    assert "moved to pool vps-ams" in moved.errors[0].message


# ---------------------------------------------------------------------------
# Capacity and money


def test_an_overcommit_change_shows_capacity_and_names_hosts_over_it() -> None:
    state = dataclasses.replace(
        observed_from(desired()),
        capacity=(
            host("fra-01", vcpu=(32, 30, 2.0, 40), memoryGiB=(256, 248, 1.5, 100)),
            host("fra-02", vcpu=(16, 14, 2.0, 10), memoryGiB=(128, 120, 1.5, 200)),
        ),
    )
    result = plan(
        edited("overcommit: { vcpu: 2, memoryGiB: 1.5 }", "overcommit: { vcpu: 1 }"), state
    )
    (pool,) = result.changes
    assert pool.address == "pool.vps-fra"
    capacity = {c.resource: (c.before, c.after) for c in pool.capacity}
    assert capacity == {"vcpu": (88, 44), "memoryGiB": (552, 368)}
    over = {w.address: w for w in result.warnings if w.code == "CAPACITY_BELOW_ALLOCATED"}
    assert set(over) == {"host.fra-01", "host.fra-02"}
    assert "vcpu 40 allocated, new capacity 30" in over["host.fra-01"].message
    assert "memoryGiB 200 allocated, new capacity 120" in over["host.fra-02"].message
    assert "keep running" in over["host.fra-01"].message
    assert result.errors == ()


def test_a_host_reserve_change_shows_capacity_before_and_after() -> None:
    state = dataclasses.replace(
        observed_from(desired()), capacity=(host("fra-01", vcpu=(32, 30, 2.0, 0)),)
    )
    result = plan(edited("hostReserve: { vcpu: 2 }", "hostReserve: { vcpu: 4 }"), state)
    (pool,) = result.changes
    assert [(c.resource, c.before, c.after) for c in pool.capacity] == [("vcpu", 60, 56)]
    assert result.warnings == ()


def test_a_policy_change_without_reported_hosts_shows_no_capacity() -> None:
    result = plan(
        edited("hostReserve: { vcpu: 2 }", "hostReserve: { vcpu: 4 }"), observed_from(desired())
    )
    (pool,) = result.changes
    assert pool.capacity == ()


def test_a_spares_change_shows_credits_per_month_per_size_and_in_total() -> None:
    fleet = edited("medium: { enabled: true, spares: 1 }", "medium: { enabled: true, spares: 3 }")
    (compute,) = plan(fleet, observed_from(desired())).changes
    assert compute.credits is not None
    lines = {line.size: (line.before, line.after) for line in compute.credits.sizes}
    assert lines == {
        "small": (0, 0),
        "medium": (720, 2160),
        "large": (1440, 1440),
        "xlarge": (0, 0),
    }
    assert (compute.credits.total_before, compute.credits.total_after) == (2160, 3600)


def test_a_change_that_keeps_spares_shows_no_credits() -> None:
    fleet = edited("defaultSize: large", "defaultSize: medium")
    (compute,) = plan(fleet, observed_from(desired())).changes
    assert compute.credits is None


# ---------------------------------------------------------------------------
# Turning off a size in use (document 004)

LARGE_OFF = BASE.replace(
    "large:  { enabled: true, spares: 2 }", "large:  { enabled: false }"
).replace("defaultSize: large", "defaultSize: medium")
USERS = [
    pytest.param(
        tenant_users("acme", services=(service("prod", "api", "serverless", True, "large"),)),
        True,
        id="deployed-serverless-service-blocks",
    ),
    pytest.param(
        tenant_users("acme", services=(service("prod", "api", "serverless", False, "large"),)),
        False,
        id="undeployed-service-does-not-block",
    ),
    pytest.param(
        tenant_users("acme", services=(service("prod", "api", "managed", True, "large"),)),
        False,
        id="managed-hosting-does-not-block",
    ),
    pytest.param(
        tenant_users("acme", indexes=(index("prod", "docs", "large"),)),
        True,
        id="index-with-pod-size-blocks-deployed-or-not",
    ),
    pytest.param(
        tenant_users("acme", indexes=(index("prod", "docs", None),)),
        False,
        id="index-on-default-pod-size-never-blocks",
    ),
    pytest.param(
        tenant_users("acme", environments=(env("staging", "large"),)),
        True,
        id="empty-environment-blocks",
    ),
    pytest.param(
        tenant_users(
            "acme",
            services=(service("prod", "api", "serverless", True, "small", "staging"),),
            environments=(env("staging", "medium"),),
        ),
        False,
        id="service-in-environment-runs-on-the-environment-size",
    ),
    pytest.param(
        tenant_users("other", environments=(env("staging", "large"),)),
        False,
        id="another-tenant-users-do-not-count",
    ),
    pytest.param(
        tenant_users("acme", services=(service("prod", "legacy", "serverless", True, None),)),
        True,
        id="service-from-before-sizes-runs-on-large",
    ),
]


@pytest.mark.parametrize(("users", "blocks"), USERS)
def test_turning_off_a_size_in_use(users: tuple[str, SizeUsers], blocks: bool) -> None:
    fleet = desired(LARGE_OFF)
    state = dataclasses.replace(observed_from(desired()), size_users=dict((users,)))
    result = plan(fleet, state)
    assert [e.code for e in result.errors] == (["SIZE_IN_USE"] if blocks else [])
    assert result.applyable is not blocks


def test_size_in_use_names_each_user_with_its_workspace() -> None:
    fleet = desired(LARGE_OFF)
    users = tenant_users(
        "acme",
        services=(service("prod", "api", "serverless", True, "large"),),
        indexes=(index("search", "docs", "large"),),
        environments=(env("staging", "large"),),
    )
    result = plan(fleet, dataclasses.replace(observed_from(desired()), size_users=dict((users,))))
    (error,) = result.errors
    assert error.message == (
        "tenant acme: Size Large is in use: service api (workspace prod), "
        "environment staging, index docs (workspace search)"
    )
    (blocked,) = error.details["sizes"]
    assert blocked["size"] == "large"
    assert [(u["kind"], u["name"]) for u in blocked["users"]] == [
        ("service", "api"),
        ("environment", "staging"),
        ("index", "docs"),
    ]
    with pytest.raises(SizeInUseError) as caught:
        result.raise_for_errors()
    assert caught.value.details["errors"][0]["details"]["tenant"] == "acme"


def test_the_plan_and_the_settings_api_say_the_same_about_a_size_in_use() -> None:
    users = SizeUsers(environments=(env("staging", "large"),))
    current = ComputeSettings()
    with pytest.raises(SizeInUseError) as caught:
        check_in_use(current, current.with_size("large", enabled=False), users)
    result = plan(
        desired(LARGE_OFF),
        dataclasses.replace(observed_from(desired()), size_users={"acme": users}),
    )
    (error,) = result.errors
    assert error.message == f"tenant acme: {caught.value.message}"
    assert error.details["sizes"] == freeze(caught.value.details)["sizes"]


def test_a_size_already_off_never_blocks() -> None:
    users = tenant_users("acme", environments=(env("staging", "xlarge"),))
    fleet = edited("defaultSize: large", "defaultSize: medium")
    result = plan(fleet, dataclasses.replace(observed_from(desired()), size_users=dict((users,))))
    assert result.errors == ()


def test_without_known_settings_every_use_blocks() -> None:
    users = tenant_users("acme", environments=(env("staging", "xlarge"),))
    state = dataclasses.replace(observed_from(desired()), compute=(), size_users=dict((users,)))
    result = plan(desired(), state)
    assert [e.code for e in result.errors] == ["SIZE_IN_USE"]


# ---------------------------------------------------------------------------
# Rendering


@pytest.mark.parametrize(
    ("counts", "line"),
    [
        pytest.param(
            (0, 3, 1, 0, 0), "Plan: 3 to add, 1 to change, 0 to delete.", id="terraform-summary"
        ),
        pytest.param(
            (2, 0, 1, 1, 1),
            "Plan: 2 to adopt, 0 to add, 1 to change, 1 to delete, 1 to archive.",
            id="adoptions-and-archives-when-present",
        ),
    ],
)
def test_summary_line(counts: tuple[int, int, int, int, int], line: str) -> None:
    assert summary_line(Summary(*counts)) == line


def test_json_follows_terraform_plan_fields() -> None:
    document = render_json(plan(desired(), ObservedFleet()))
    assert document["format_version"] == "1.0"
    assert document["applyable"] is True
    assert document["summary"] == {"adopt": 0, "add": 13, "change": 0, "delete": 0, "archive": 0}
    change = document["resource_changes"][0]
    assert set(change) >= {"address", "actions", "before", "after", "action_reason"}
    assert change["actions"] == ["create"] and change["before"] is None
    json.dumps(document)


def test_plans_are_frozen() -> None:
    result = plan(desired(), ObservedFleet())
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.actions = ()  # type: ignore[misc]
    after = result.actions[0].after
    assert after is not None
    with pytest.raises(TypeError):
        after["name"] = "x"  # type: ignore[index]


def test_loader_and_planner_do_not_import_sql() -> None:
    code = (
        "import sys, bcfleet.reconcile.load, bcfleet.reconcile.plan, bcfleet.reconcile.render; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('sqlmodel', 'sqlalchemy')); "
        "assert not bad, bad"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


# ---------------------------------------------------------------------------
# Golden plans


def _mixed() -> tuple[DesiredFleet, ObservedFleet]:
    """Adopt, update with capacity and credits, delete, archive, restore and an offer removed."""
    fleet = desired(
        BASE.replace(
            "overcommit: { vcpu: 2, memoryGiB: 1.5 }", "overcommit: { vcpu: 1.5, memoryGiB: 1.5 }"
        )
        .replace("medium: { enabled: true, spares: 1 }", "medium: { enabled: true, spares: 4 }")
        .replace("{ id: acme, name: ACME }", "{ id: acme, name: ACME Corp }")
    )
    state = observed_from(desired())
    state = with_flavor(state, "g1.small", managed=False, spec__disk_gib=20)
    state = with_flavor(state, "gpu1.l40s", archived=True, referenced=True)
    state = extra_flavor(state, "g1.old", managed=True, referenced=True)
    state = extra_flavor(state, "g1.tmp", managed=True)
    state = dataclasses.replace(
        state,
        offers=(
            *state.offers,
            ObservedOffer(dataclasses.replace(state.offers[0].spec, tenant="root"), True),
        ),
        capacity=(
            host(
                "fra-01",
                vcpu=(32, 30, 2.0, 48),
                memoryGiB=(256, 248, 1.5, 300),
                diskGiB=(2000, 1900, 1.0, 400),
            ),
            host(
                "fra-02",
                vcpu=(16, 14, 2.0, 4),
                memoryGiB=(128, 120, 1.5, 16),
                diskGiB=(1000, 900, 1.0, 40),
            ),
        ),
    )
    return fleet, state


def _size_in_use() -> tuple[DesiredFleet, ObservedFleet]:
    fleet = desired(LARGE_OFF)
    users = tenant_users(
        "acme",
        services=(
            service("prod", "api", "serverless", True, "large"),
            service("prod", "worker", "serverless", False, "large"),
        ),
        indexes=(index("search", "docs", "large"),),
        environments=(env("staging", "large"),),
    )
    return fleet, dataclasses.replace(observed_from(desired()), size_users=dict((users,)))


GOLDEN_CASES = [
    pytest.param(lambda: (desired(), ObservedFleet()), "plan_create", id="create-on-empty-state"),
    pytest.param(_applied, "plan_no_changes", id="no-changes"),
    pytest.param(_mixed, "plan_mixed", id="adopt-update-delete-archive"),
    pytest.param(_size_in_use, "plan_size_in_use", id="size-in-use"),
]


@pytest.mark.parametrize(("case", "name"), GOLDEN_CASES)
def test_golden_plan_text(case: Case, name: str) -> None:
    assert_golden(f"{name}.txt", render_text(plan(*case())))


@pytest.mark.parametrize(("case", "name"), GOLDEN_CASES)
def test_golden_plan_json(case: Case, name: str) -> None:
    assert_golden(f"{name}.json", render_json_text(plan(*case())))


def test_the_mixed_plan_carries_every_kind_of_action() -> None:
    result = plan(*_mixed())
    kinds = {kind for action in result.changes for kind in action.actions}
    assert kinds == {"adopt", "update", "delete", "archive"}
    assert result.errors == ()
    assert SizeSetting("medium", enabled=True, spares=4) in _mixed()[0].compute[0].sizes

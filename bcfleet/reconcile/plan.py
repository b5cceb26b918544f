"""The pure planner, ``plan(desired, observed) -> Plan``: what `fleet plan` shows and apply runs.

Ownership follows kubectl's ApplySet: only objects a FleetConfig created or
adopted (``managed``) are updated or deleted; a declared object that exists
unmanaged is adopted, then updated if it differs; undeclared unmanaged objects
are never touched. A removed flavor that instance rows reference is archived.
Like Argo CD, a plan that would delete every managed object is an error unless
``allow_empty``. Actions are ordered so creations follow dependencies
(tenants, provider accounts, pools, offers, hosts, flavors, quotas, compute) and
deletions run afterwards in reverse, so compute settings no longer declared
(back to the defaults) go before the pool they name; a deleted tenant's settings,
managed or not, are deleted first with it. A compute section that leaves out
``serverlessPool`` keeps the state's pool, as the compute settings API does.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

from bcfleet.domain.compute_settings import SizeUsers
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.domain.states import PoolKind
from bcfleet.reconcile.actions import (
    RESOURCE_TYPES,
    Action,
    ActionKind,
    Attrs,
    Plan,
    PlanMessage,
    freeze,
)
from bcfleet.reconcile.attrs import Entry, desired_entries, diff, observed_entries
from bcfleet.reconcile.impact import (
    blocked_removals,
    credits_change,
    host_allocations,
    host_busy,
    pool_capacity,
    sizes_in_use,
    tenant_held,
)
from bcfleet.reconcile.model import (
    ComputeSpec,
    DesiredFleet,
    HostCapacity,
    HostSpec,
    ObservedFleet,
    PoolSpec,
)

__all__ = ["Plan", "plan"]

Key = tuple[str, tuple[str, ...]]

REASON_ADOPT = "exists but no FleetConfig manages it yet: apply adopts it"
REASON_DELETE = "no longer in the configuration"
REASON_WITH_TENANT = "its tenant is deleted, and the settings with it"
REASON_ARCHIVE = (
    "no longer in the configuration, but instance rows reference it: "
    "archived instead of deleted; instances using it keep running"
)
REASON_RESTORE = "archived in the state: the update restores it"
REASON_RESHAPE = "instances already using it keep the shape they were admitted with"
_RANK = {kind: rank for rank, kind in enumerate(RESOURCE_TYPES)}


@dataclass
class _Context:
    capacity_by_pool: dict[str, list[HostCapacity]] = field(default_factory=dict)
    allocations: dict[str, dict[str, int]] = field(default_factory=dict)
    users: dict[str, SizeUsers] = field(default_factory=dict)
    tenant_holders: dict[str, tuple[str, ...]] = field(default_factory=dict)
    deleted_tenants: set[str] = field(default_factory=set)
    warnings: list[PlanMessage] = field(default_factory=list)
    errors: list[PlanMessage] = field(default_factory=list)

    @classmethod
    def of(cls, observed: ObservedFleet) -> _Context:
        by_pool: dict[str, list[HostCapacity]] = defaultdict(list)
        for host in observed.capacity:
            by_pool[host.pool].append(host)
        return cls(
            capacity_by_pool=dict(by_pool),
            allocations={k: dict(v) for k, v in host_allocations(observed.capacity).items()},
            users=dict(observed.size_users),
            tenant_holders={t.spec.id: t.held_by for t in observed.tenants if t.held_by},
        )


def plan(desired: DesiredFleet, observed: ObservedFleet, *, allow_empty: bool = False) -> Plan:
    """Compare the declared fleet with the state; never raises for a problem, it lists it."""
    desired = _keep_unset_serverless_pools(desired, observed)
    want: dict[Key, Entry] = {(e.type, e.key): e for e in desired_entries(desired)}
    have: dict[Key, Entry] = {(e.type, e.key): e for e in observed_entries(observed)}
    context = _Context.of(observed)
    context.deleted_tenants = {
        key[1][0]
        for key, entry in have.items()
        if key[0] == "tenant" and entry.managed and key not in want and key[1][0] != ROOT_TENANT
    }
    context.warnings.extend(
        PlanMessage("CONFIG", d.format(), None, freeze(d.to_json())) for d in desired.warnings
    )
    actions: list[Action] = []
    for key in sorted(want.keys() | have.keys(), key=_order):
        action = _decide(want.get(key), have.get(key), context)
        if action is not None:
            actions.append(_decorate(action, want.get(key), have.get(key), context))
    _check_removals(actions, want, have, context)
    _check_prune(actions, want, have, context, allow_empty)
    return Plan(
        actions=tuple(sorted(actions, key=_action_order)),
        warnings=tuple(context.warnings),
        errors=tuple(context.errors),
        state_revision=observed.revision,
        config_digest=desired.digest,
    )


def _keep_unset_serverless_pools(desired: DesiredFleet, observed: ObservedFleet) -> DesiredFleet:
    """A compute section without serverlessPool keeps the state's pool; the API cannot unset it."""
    current = {c.spec.tenant: c.spec.serverless_pool for c in observed.compute}
    compute = tuple(
        replace(spec, serverless_pool=current.get(spec.tenant))
        if spec.serverless_pool is None and current.get(spec.tenant)
        else spec
        for spec in desired.compute
    )
    return replace(desired, compute=compute)


def _order(key: Key) -> tuple[int, tuple[str, ...]]:
    return _RANK[key[0]], key[1]


def _action_order(action: Action) -> tuple[int, int]:
    rank = _RANK[action.type]
    return (1, -rank) if action.is_removal else (0, rank)


def _decide(want: Entry | None, have: Entry | None, context: _Context) -> Action | None:
    if want is not None and have is None:
        return _action(want, ("create",), None, want.attrs)
    if want is not None and have is not None:
        return _compare(want, have)
    assert have is not None
    return _remove(have, context)


def _action(
    entry: Entry,
    kinds: tuple[ActionKind, ...],
    before: Attrs | None,
    after: Attrs | None,
    reason: str = "",
) -> Action:
    return Action(entry.address, entry.type, kinds, before, after, reason)


def _compare(want: Entry, have: Entry) -> Action:
    changes = tuple(diff(have.attrs, want.attrs))
    kinds: tuple[ActionKind, ...]
    reason = ""
    if not have.managed:
        kinds = ("adopt", "update") if changes else ("adopt",)
        reason = f"{REASON_ADOPT}; {REASON_RESTORE}" if have.archived else REASON_ADOPT
    elif changes:
        kinds = ("update",)
        reason = REASON_RESTORE if have.archived else ""
        if have.referenced and any(change.path != "archived" for change in changes):
            reason = f"{reason}; {REASON_RESHAPE}" if reason else REASON_RESHAPE
    else:
        kinds = ("no-op",)
    return Action(want.address, want.type, kinds, have.attrs, want.attrs, reason, changes)


def _remove(have: Entry, context: _Context) -> Action | None:
    if have.type == "compute" and have.key[0] in context.deleted_tenants:
        # part of its tenant, managed or not: removed first, before the pool it may name
        return _action(have, ("delete",), have.attrs, None, REASON_WITH_TENANT)
    if not have.managed or have.archived:
        return None
    if have.type == "tenant" and have.key == (ROOT_TENANT,):
        return None
    if have.type == "flavor" and have.referenced:
        after = freeze({**have.attrs, "archived": True})
        return _action(have, ("archive",), have.attrs, after, REASON_ARCHIVE)
    return _action(have, ("delete",), have.attrs, None, REASON_DELETE)


def _decorate(action: Action, want: Entry | None, have: Entry | None, context: _Context) -> Action:
    """Add capacity, credits and the errors a change meets."""
    spec = want.spec if want is not None else None
    if isinstance(spec, PoolSpec):
        return _decorate_pool(action, spec, have, context)
    if isinstance(spec, ComputeSpec):
        before = have.spec if have is not None and isinstance(have.spec, ComputeSpec) else None
        return _decorate_compute(action, spec, before, context)
    if isinstance(spec, HostSpec) and "update" in action.actions:
        _check_host_move(action, spec, have, context)
    return action


def _decorate_pool(
    action: Action, after: PoolSpec, have: Entry | None, context: _Context
) -> Action:
    if have is None or "update" not in action.actions:
        return action
    before = have.spec
    assert isinstance(before, PoolSpec)
    fixed = [
        (label, old, new)
        for label, old, new in (
            ("kind", before.kind, after.kind),
            ("owner", before.owner, after.owner),
            ("providerAccount", before.provider_account, after.provider_account),
        )
        if old != new
    ]
    for label, old, new in fixed:
        context.errors.append(
            PlanMessage(
                "UNSUPPORTED",
                f"{action.address}: a pool's {label} cannot change ({old} -> {new}); "
                "declare a new pool instead",
                action.address,
            )
        )
    if fixed:
        return action
    policy_changed = any(change.path.startswith("policy.") for change in action.changes)
    if after.kind != PoolKind.VPS_HOST or not policy_changed:
        return action
    capacity, warnings = pool_capacity(after, context.capacity_by_pool.get(after.name, []))
    context.warnings.extend(warnings)
    return replace(action, capacity=capacity)


def _decorate_compute(
    action: Action, after: ComputeSpec, before: ComputeSpec | None, context: _Context
) -> Action:
    if not action.is_change:
        return action
    old_sizes = before.sizes if before is not None else None
    context.errors.extend(
        sizes_in_use(after.tenant, old_sizes, after.sizes, context.users.get(after.tenant))
    )
    return replace(action, credits=credits_change(old_sizes, after.sizes))


def _check_host_move(
    action: Action, after: HostSpec, have: Entry | None, context: _Context
) -> None:
    if have is None or not isinstance(have.spec, HostSpec):
        return
    allocated = context.allocations.get(after.name)
    if have.spec.pool != after.pool and allocated:
        context.errors.append(
            host_busy(action.address, after.name, allocated, f"moved to pool {after.pool}")
        )


def _check_removals(
    actions: list[Action], want: dict[Key, Entry], have: dict[Key, Entry], context: _Context
) -> None:
    deleted = {action.address for action in actions if "delete" in action.actions}
    survivors = [
        want.get(key) or entry
        for key, entry in have.items()
        if entry.address not in deleted and not _goes_with_tenant(entry, context)
    ]
    survivors += [entry for key, entry in want.items() if key not in have]
    context.errors.extend(blocked_removals(deleted, survivors))
    for action in actions:
        name = action.address.removeprefix("host.")
        allocated = context.allocations.get(name)
        if action.type == "host" and "delete" in action.actions and allocated:
            context.errors.append(host_busy(action.address, name, allocated, "removed"))
        tenant = action.address.removeprefix("tenant.")
        holders = context.tenant_holders.get(tenant)
        if action.type == "tenant" and "delete" in action.actions and holders:
            context.errors.append(tenant_held(action.address, tenant, holders))


def _goes_with_tenant(entry: Entry, context: _Context) -> bool:
    """Compute settings are part of their tenant: deleting the tenant removes them."""
    return entry.type == "compute" and entry.key[0] in context.deleted_tenants


def _check_prune(
    actions: list[Action],
    want: dict[Key, Entry],
    have: dict[Key, Entry],
    context: _Context,
    allow_empty: bool,
) -> None:
    managed = [key for key, entry in have.items() if entry.managed and not entry.archived]
    removals = sum(1 for action in actions if action.is_removal)
    if allow_empty or not managed or not removals or any(key in want for key in managed):
        return
    context.errors.insert(
        0,
        PlanMessage(
            "INVALID_INPUT",
            f"this plan removes every object a FleetConfig manages ({len(managed)}); "
            "if that is intended, allow an empty fleet (--allow-empty)",
            None,
            freeze({"managed": len(managed)}),
        ),
    )

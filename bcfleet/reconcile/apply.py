"""Plan and apply a FleetConfig against the state: what `fleet plan` and `fleet apply` run.

Apply takes the apply lock, opens ONE write transaction that every API call
joins (``Fleet.transaction``), and inside it observes the state again and plans
again before changing anything:

- a saved plan (``fleet apply plan.json``) and a plan shown before a prompt
  (``fleet apply -f``) must still have the same changes with the same before-
  and after-values (``_check_fresh``, the one rule for both); otherwise
  STALE_PLAN and nothing changes. A write to something the plan does not touch
  leaves it valid;
- an auto-approved apply (``--yes``, as Terraform's ``-auto-approve`` plans
  under the lock) applies the plan made under the lock;
- an edit of part of the configuration (the console's `e` and `n`, reconcile/edit.py)
  plans the merged document and keeps only what its scope covers, both times.

Then every change runs through the API; any error rolls the whole transaction
back, so either all of the plan lands or none of it, and a process killed
mid-apply leaves the state as it was.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bcfleet.api.auth import Credential, require_fleet_operator
from bcfleet.errors import StalePlanError
from bcfleet.reconcile.actions import Plan, Summary
from bcfleet.reconcile.execute import Executor
from bcfleet.reconcile.lock import WaitNotice, held
from bcfleet.reconcile.model import DesiredFleet, ObservedFleet
from bcfleet.reconcile.observe import observe
from bcfleet.reconcile.perf import collector_paused
from bcfleet.reconcile.plan import plan
from bcfleet.reconcile.render import render_json
from bcfleet.store.locks import Lease
from bcfleet.store.uow import bump, current_revision

if TYPE_CHECKING:
    from bcfleet.api.handle import ApiHandle
    from bcfleet.reconcile.edit import Scope

StepHook = Callable[[int], None]


def observe_state(fleet: ApiHandle, credential: Credential | None) -> ObservedFleet:
    """The state in one read transaction, for root's admin only."""
    with fleet.read() as session:
        require_fleet_operator(session, credential, fleet.now())
        return observe(session, host_reserve=fleet.settings.host_reserve)


def make_plan(
    fleet: ApiHandle,
    credential: Credential | None,
    desired: DesiredFleet,
    *,
    allow_empty: bool = False,
    scope: Scope | None = None,
    observed: ObservedFleet | None = None,
) -> Plan:
    """`fleet plan`: compare the document with the state (read now, unless the caller read it
    already); writes nothing (an edit's plan keeps only what its scope covers)."""
    with collector_paused():
        state = observed if observed is not None else observe_state(fleet, credential)
        result = plan(desired, state, allow_empty=allow_empty)
    return result if scope is None else scope.of(result)


def plan_json(result: Plan) -> dict[str, Any]:
    """The plan's JSON exactly as it reads back from a file (lists, floats, nulls)."""
    loaded: dict[str, Any] = json.loads(json.dumps(render_json(result)))
    return loaded


def approved_changes(document: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """What a plan's JSON approves: each change's address, actions, before- and after-values."""
    return [
        (change["address"], tuple(change["actions"]), change.get("before"), change["after"])
        for change in document.get("resource_changes", [])
        if change["actions"] != ["no-op"]
    ]


@dataclass(frozen=True)
class Approved:
    """What the operator approved: the plan as JSON, the document it came from, and how."""

    desired: DesiredFleet
    plan: Mapping[str, Any]  # plan_json() of the approved plan
    allow_empty: bool = False
    saved: bool = False  # a saved plan: any change of the state since is STALE_PLAN
    auto_approve: bool = False  # --yes: a plan made again under the lock may be applied
    scope: Scope | None = None  # an edit of part of the configuration: only this changes

    @property
    def state_revision(self) -> int:
        return int(self.plan.get("state_revision", -1))


@dataclass(frozen=True)
class ApplyResult:
    plan: Plan
    revision: int  # the state revision after the apply
    lock: Lease
    replanned: bool = False  # the state changed after the prompt: this plan was made under the lock
    warnings: tuple[str, ...] = ()  # what the API warned about (deprecated or unchecked offers)

    @property
    def message(self) -> str:
        return complete_line(self.plan.summary)

    def to_json(self) -> dict[str, Any]:
        summary = self.plan.summary
        return {
            "applied": True,
            "message": self.message,
            "summary": {
                "adopted": summary.adopt,
                "added": summary.add,
                "changed": summary.change,
                "deleted": summary.delete,
                "archived": summary.archive,
            },
            "stateRevision": self.revision,
            "replanned": self.replanned,
            "warnings": list(self.warnings),
            "lock": self.lock.to_json(),
            "plan": render_json(self.plan),
        }


def complete_line(summary: Summary) -> str:
    """``Apply complete! 3 added, 1 changed, 0 deleted.``, with adoptions and archives if any."""
    parts = [f"{summary.add} added", f"{summary.change} changed", f"{summary.delete} deleted"]
    if summary.adopt:
        parts.insert(0, f"{summary.adopt} adopted")
    if summary.archive:
        parts.append(f"{summary.archive} archived")
    return f"Apply complete! {', '.join(parts)}."


def apply(
    fleet: ApiHandle,
    credential: Credential | None,
    approved: Approved,
    *,
    lock_timeout: float = 0.0,
    operation: str = "apply",
    between: StepHook | None = None,
    on_wait: WaitNotice | None = None,
) -> ApplyResult:
    """Apply under the lock, in one transaction: all of the plan or none of it."""
    with held(fleet, operation=operation, timeout=lock_timeout, on_wait=on_wait) as lock:
        return apply_held(fleet, credential, approved, lock, between)


def apply_held(
    fleet: ApiHandle,
    credential: Credential | None,
    approved: Approved,
    lock: Lease,
    between: StepHook | None = None,
) -> ApplyResult:
    """Apply a plan approved while the caller held the apply lock (``held``) and holds it still:
    Terraform's order, lock → plan → show → ask → apply, so no other apply runs meanwhile."""
    _warm_offers(fleet, approved.plan)
    return _apply_locked(fleet, credential, approved, lock, between)


def _warm_offers(fleet: ApiHandle, approved: Mapping[str, Any]) -> None:
    """Ask providers for their offers before the transaction, not while it holds the database:
    flavors of provider pools are checked against them (existing accounts only; a new
    account's offers are fetched, briefly, inside)."""
    if any(
        change["type"] == "flavor" and (change.get("after") or {}).get("offerId")
        for change in approved.get("resource_changes", [])
        if change["actions"] != ["no-op"]
    ):
        fleet.api.offer_catalog.warm_all()


def _apply_locked(
    fleet: ApiHandle,
    credential: Credential | None,
    approved: Approved,
    lock: Lease,
    between: StepHook | None,
) -> ApplyResult:
    with fleet.transaction(bump_revision=False) as joined, collector_paused():
        session = joined.session
        assert session is not None
        require_fleet_operator(session, credential, fleet.now())
        revision = current_revision(session)
        observed = observe(session, host_reserve=fleet.settings.host_reserve)
        fresh = plan(approved.desired, observed, allow_empty=approved.allow_empty)
        if approved.scope is not None:
            fresh = approved.scope.of(fresh)
        replanned = _check_fresh(approved, fresh, revision)
        fresh.raise_for_errors()
        warnings: list[str] = []
        if fresh.has_changes:
            warnings = _execute(joined, credential, approved.desired, observed, fresh, between)
            bump(session)  # last: PostgreSQL's counter is a sequence, which never rolls back
        return ApplyResult(fresh, current_revision(session), lock, replanned, tuple(warnings))


def _check_fresh(approved: Approved, fresh: Plan, revision: int) -> bool:
    """Whether the fresh plan replaces the approved one; STALE_PLAN when it may not.

    The one rule for a saved plan and a plan shown at a prompt: what was approved is each
    change with the before-values the operator saw. If a change, a before-value or an
    after-value differs now, the plan is stale; a write to anything the plan does not touch
    leaves it valid. Only ``--yes`` (no prompt, no saved plan) applies the plan made again."""
    if approved_changes(plan_json(fresh)) == approved_changes(approved.plan):
        return False
    if approved.auto_approve and not approved.saved:
        return True
    details = {"planRevision": approved.state_revision, "stateRevision": revision}
    changed = _first_difference(approved.plan, plan_json(fresh))
    if approved.saved:
        raise StalePlanError(
            f"the saved plan no longer matches what its configuration plans against the "
            f"state ({changed} changed since it was made): nothing was applied; make a new "
            f"plan with `fleet plan --out`",
            {**details, "address": changed},
        )
    raise StalePlanError(
        f"the state changed after this plan was shown ({changed}), and the plan with it; "
        f"nothing was applied: run `fleet apply` again to review the new plan",
        {**details, "address": changed},
    )


def _first_difference(approved: Mapping[str, Any], fresh: Mapping[str, Any]) -> str:
    """The first address whose approved change differs from the fresh one."""
    old = {change[0]: change for change in approved_changes(approved)}
    new = {change[0]: change for change in approved_changes(fresh)}
    for address in sorted(old.keys() | new.keys()):
        if old.get(address) != new.get(address):
            return str(address)
    return "the plan"


def _execute(
    fleet: ApiHandle,
    credential: Credential | None,
    desired: DesiredFleet,
    observed: ObservedFleet,
    result: Plan,
    between: StepHook | None,
) -> list[str]:
    owners = {pool.spec.name: pool.spec.owner for pool in observed.pools}
    owners.update({pool.name: pool.owner for pool in desired.pools})
    executor = Executor(fleet, credential, owners)
    executor.run_all(result.changes, between)
    return executor.warnings

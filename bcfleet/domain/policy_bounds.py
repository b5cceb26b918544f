"""What a tenant's principals may hold: root-only actions, attached policies kept inside the tenant.

Two callers, one set of rules. ``auth.resolve()`` builds a principal's statements with
``principal_statements()``: whatever policy rows say, a principal of a tenant other than
root ends up with its role's statements, its attached allow statements clamped to what the
tenant may hold (``clamp_to_tenant``), and a deny of every ROOT_ONLY_ACTIONS action.
``iam.create_policy()`` refuses, before anything is stored, a policy that reaches past
its author (``policy_overreach()``), naming the statement.

What a tenant may hold, at most: anything on its own resources (``tenant:<own>`` and
``tenant:<own>/…``), and SHARED_POOL_ACTIONS on pools (``tenant:*/pool:*``; lookups show
a tenant only the pools it owns or is offered), which is how document 003's "a tenant
policy can allow spot work to people or agents it would not give regular capacity to"
names the pools offered to the tenant.

Root-only work comes in two kinds. Actions that only root may do anywhere are listed in
ROOT_ONLY_ACTIONS. The rest is root's because the resource is root's (or another
tenant's) and the action is not a shared-pool one: quotas, flavors, overcommit and offers
of pools a tenant does not own, hosts of such pools (adopt, drain, report), usage replay
and billing meters (``tenant:root``): the clamp keeps every one of those out of a
tenant's reach. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from bcfleet.domain.policy import (
    AGENT,
    ROOT_TENANT,
    SHARED_POOL_ACTIONS,
    Statement,
    agent_statements,
    role_statements,
)

POOLS = "tenant:*/pool:*"
"""Every pool, as a resource pattern: where SHARED_POOL_ACTIONS apply."""

ROOT_ONLY_ACTIONS = (
    "compute:tenants:manage",  # create, rename, delete tenants
    "compute:doctor:read",  # fleet-wide warnings and invariants
    "compute:jobs:*",  # the scheduled jobs: their runs (read) and running one now
    "billing:*",  # billing meters, `fleet iam setup --meters`, usage replay
)
"""Actions no principal of a tenant other than root may do, on any resource."""

ROOT_ONLY_GUARD: Statement = {
    "sid": "root-only",
    "effect": "deny",
    "actions": list(ROOT_ONLY_ACTIONS),
    "resources": ["*"],
}


def covers(pattern: str, asked: str) -> bool:
    """Whether every string the pattern `asked` matches is matched by `pattern` too.

    Sound for patterns whose only wildcard is "*" (the roles' patterns): `asked`, read
    literally, must match `pattern`, so each of its wildcards falls in one of `pattern`'s.
    Any other wildcard in `pattern` covers only the identical pattern.
    """
    if pattern == asked:
        return True
    if "?" in pattern or "[" in pattern:
        return False
    return fnmatchcase(asked, pattern)


def within_tenant(resource: str, tenant_id: str) -> bool:
    """Whether a resource pattern names only the tenant's own resources.

    Tenant ids hold no wildcard characters, so a pattern that starts with the literal
    ``tenant:<id>/`` can only match that tenant's resources, whatever follows.
    """
    own = f"tenant:{tenant_id}"
    return resource == own or resource.startswith(own + "/")


def own_resources(tenant_id: str) -> list[str]:
    """Every resource of a tenant, as patterns."""
    return [f"tenant:{tenant_id}", f"tenant:{tenant_id}/*"]


def _inside(patterns: Iterable[str], bound: Sequence[str], keep: Any) -> list[str]:
    """The part of each pattern inside the bound patterns: the pattern itself when `keep`
    says it is inside already, else the bound patterns it covers ("*" covers them all)."""
    found: list[str] = []
    for pattern in patterns:
        parts = [pattern] if keep(pattern) else [b for b in bound if covers(pattern, b)]
        found.extend(p for p in parts if p not in found)
    return found


def _strings(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def clamp_statement(tenant_id: str, statement: Mapping[str, Any]) -> list[Statement]:
    """An allow statement cut down to what the tenant may hold: its own resources with the
    statement's actions, and pools with the shared-pool actions among them. Nothing left,
    no statement; an overlap no pattern can express is dropped."""
    resources, actions = _strings(statement.get("resources")), _strings(statement.get("actions"))
    own = _inside(resources, own_resources(tenant_id), lambda r: within_tenant(r, tenant_id))
    pools = _inside(resources, [POOLS], lambda r: covers(POOLS, r))
    shared = _inside(actions, SHARED_POOL_ACTIONS, lambda a: _shared(a))
    clamped: list[Statement] = []
    if own:
        clamped.append({**statement, "resources": own})
    if pools and shared:
        clamped.append({**statement, "actions": shared, "resources": pools})
    return clamped


def _shared(action: str) -> bool:
    return any(covers(s, action) for s in SHARED_POOL_ACTIONS)


def clamp_to_tenant(tenant_id: str, statements: Iterable[Any]) -> list[Statement]:
    """Attached statements of a tenant's principal: every allow clamped (clamp_statement),
    every deny as it is (denies only take away), anything else dropped. A stored "*" thus
    allows everything in the tenant and the shared-pool actions on pools, nothing more."""
    clamped: list[Statement] = []
    for statement in statements:
        if not isinstance(statement, Mapping):
            continue
        if statement.get("effect") == "allow":
            clamped.extend(clamp_statement(tenant_id, statement))
        else:
            clamped.append(statement)
    return clamped


def principal_statements(
    tenant_id: str, role: str, attached: Iterable[Any], host_id: str | None = None
) -> list[Statement]:
    """A principal's statements: its role's, then its attached ones (bounded outside root).

    A host's agent (role AGENT, bound to host_id) gets agent_statements and, of its attached
    policies, only the deny statements: nothing attached widens what an agent may do.
    """
    if role == AGENT:
        denies = [s for s in attached if isinstance(s, Mapping) and s.get("effect") == "deny"]
        return [*agent_statements(tenant_id, host_id), *denies, dict(ROOT_ONLY_GUARD)]
    statements: list[Statement] = list(role_statements(tenant_id, role))
    if tenant_id == ROOT_TENANT:
        statements.extend(s for s in attached if isinstance(s, Mapping))
        return statements
    statements.extend(clamp_to_tenant(tenant_id, attached))
    statements.append(dict(ROOT_ONLY_GUARD))
    return statements


def _holds(held: Sequence[Statement], action: str, resource: str) -> bool:
    return any(
        s.get("effect") == "allow"
        and any(covers(p, action) for p in s.get("actions", ()))
        and any(covers(p, resource) for p in s.get("resources", ()))
        for s in held
    )


@dataclass(frozen=True)
class Overreach:
    """One way a statement reaches past its author: a resource outside the tenant, or an action."""

    index: int
    kind: str  # "resource" (INVALID_INPUT) or "action" (FORBIDDEN)
    value: str
    why: str

    def text(self) -> str:
        return f"statements[{self.index}]: {self.kind} {self.value!r} {self.why}"


def policy_overreach(
    tenant_id: str, author_role: str, statements: Sequence[Mapping[str, Any]]
) -> list[Overreach]:
    """What a policy of a tenant, written by a principal of that tenant with that role, may not say.

    An allow statement may name the tenant's own resources and pools (``tenant:*/pool:…``)
    and, on each, only actions the author's role holds there; a tenant other than root
    may not name a ROOT_ONLY_ACTIONS action. Broad action patterns such as "*" stay
    allowed on the tenant's own resources: the root-only guard still refuses those actions
    when the policy is evaluated. Deny statements only take away and are not bounded.
    """
    held = role_statements(tenant_id, author_role)
    found: list[Overreach] = []
    for index, statement in enumerate(statements):
        if statement.get("effect") != "allow":
            continue
        resources = [str(r) for r in statement.get("resources", ())]
        outside = [r for r in resources if not (within_tenant(r, tenant_id) or covers(POOLS, r))]
        found.extend(
            Overreach(index, "resource", r, f"is outside tenant {tenant_id!r}; name "
                      f"tenant:{tenant_id}, tenant:{tenant_id}/… or pools (tenant:*/pool:…)")
            for r in outside
        )  # fmt: skip
        inside = [r for r in resources if r not in outside]
        for action in (str(a) for a in statement.get("actions", ())):
            if tenant_id != ROOT_TENANT and any(covers(p, action) for p in ROOT_ONLY_ACTIONS):
                found.append(Overreach(index, "action", action, "is root's alone"))
            elif not all(_holds(held, action, r) for r in inside):
                missing = next(r for r in inside if not _holds(held, action, r))
                found.append(
                    Overreach(index, "action", action,
                              f"is not held by the {author_role} role on {missing!r}")
                )  # fmt: skip
    return found

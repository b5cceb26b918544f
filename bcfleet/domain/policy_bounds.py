"""What a tenant's principals may hold: root-only actions, attached policies kept inside the tenant.

Two callers, one set of rules. ``auth.resolve()`` builds a principal's statements with
``principal_statements()``: whatever policy rows say, a principal of a tenant other than
root ends up with its role's statements, its attached allow statements clamped to its own
tenant's resources (``tenant:<own>`` and ``tenant:<own>/…``), and a deny of every
ROOT_ONLY_ACTIONS action. ``iam.create_policy()`` refuses, before anything is stored, a
policy that reaches past those bounds (``policy_overreach()``), naming the statement.

Root-only work comes in two kinds. Actions that only root may do anywhere are listed in
ROOT_ONLY_ACTIONS. The rest is root's because the resource is root's (or another
tenant's): quotas, flavors, overcommit and offers of pools a tenant does not own, hosts
of such pools (adopt, drain, report), usage replay and billing meters (``tenant:root``):
the clamp keeps every one of those out of a tenant's reach, since the resource is never
``tenant:<own>/…``. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from bcfleet.domain.policy import Statement, role_statements

ROOT_TENANT = "root"

ROOT_ONLY_ACTIONS = (
    "compute:tenants:manage",  # create, rename, delete tenants
    "compute:providers:manage",  # provider accounts: tokenEnv names a variable of the server
    "compute:doctor:read",  # fleet-wide warnings and invariants
    "billing:*",  # billing meters, `fleet iam setup --meters`, usage replay
)
"""Actions no principal of a tenant other than root may do, on any resource."""

ROOT_ONLY_GUARD: Statement = {
    "sid": "root-only",
    "effect": "deny",
    "actions": list(ROOT_ONLY_ACTIONS),
    "resources": ["*"],
}


def within_tenant(resource: str, tenant_id: str) -> bool:
    """Whether a resource pattern names only the tenant's own resources.

    Tenant ids hold no wildcard characters, so a pattern that starts with the literal
    ``tenant:<id>/`` can only match that tenant's resources, whatever follows.
    """
    own = f"tenant:{tenant_id}"
    return resource == own or resource.startswith(own + "/")


def clamp_resource(resource: Any, tenant_id: str) -> list[str]:
    """The part of a resource pattern inside the tenant, as patterns: itself when it is
    inside already; the tenant's own patterns when it covers them ("*", "tenant:*"); else
    nothing (an overlap that no pattern of the tenant's can express is dropped)."""
    if not isinstance(resource, str):
        return []
    if within_tenant(resource, tenant_id):
        return [resource]
    return [own for own in own_resources(tenant_id) if covers(resource, own)]


def own_resources(tenant_id: str) -> list[str]:
    """Every resource of a tenant, as patterns."""
    return [f"tenant:{tenant_id}", f"tenant:{tenant_id}/*"]


def clamp_to_tenant(tenant_id: str, statements: Iterable[Any]) -> list[Statement]:
    """Attached statements of a tenant's principal: allows cut down to the tenant's resources.

    An allow statement keeps the part of each resource inside the tenant (clamp_resource)
    and goes when nothing is left: a stored "*" allows everything in the tenant and
    nothing outside it. Deny statements stay as they are (they can only take away);
    anything that is not a statement is dropped.
    """
    clamped: list[Statement] = []
    for statement in statements:
        if not isinstance(statement, Mapping):
            continue
        if statement.get("effect") != "allow":
            clamped.append(statement)
            continue
        resources = statement.get("resources")
        kept: list[str] = []
        for resource in resources if isinstance(resources, list) else []:
            kept.extend(r for r in clamp_resource(resource, tenant_id) if r not in kept)
        if kept:
            clamped.append({**statement, "resources": kept})
    return clamped


def principal_statements(tenant_id: str, role: str, attached: Iterable[Any]) -> list[Statement]:
    """A principal's statements: its role's, then its attached ones (bounded outside root)."""
    statements: list[Statement] = list(role_statements(tenant_id, role))
    if tenant_id == ROOT_TENANT:
        statements.extend(s for s in attached if isinstance(s, Mapping))
        return statements
    statements.extend(clamp_to_tenant(tenant_id, attached))
    statements.append(dict(ROOT_ONLY_GUARD))
    return statements


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

    Allow statements may name only the tenant's own resources and only actions the
    author's role holds on them; a tenant other than root may not name a ROOT_ONLY_ACTIONS
    action. Broad action patterns such as "*" stay allowed: the root-only guard still
    refuses those actions when the policy is evaluated. Deny statements only take away
    and are not bounded.
    """
    held = role_statements(tenant_id, author_role)
    found: list[Overreach] = []
    for index, statement in enumerate(statements):
        if statement.get("effect") != "allow":
            continue
        resources = [str(r) for r in statement.get("resources", ())]
        outside = [r for r in resources if not within_tenant(r, tenant_id)]
        for resource in outside:
            found.append(
                Overreach(
                    index,
                    "resource",
                    resource,
                    f"is outside tenant {tenant_id!r}; "
                    f"name tenant:{tenant_id} or tenant:{tenant_id}/…",
                )  # fmt: skip
            )
        inside = [r for r in resources if r not in outside]
        for action in (str(a) for a in statement.get("actions", ())):
            if tenant_id != ROOT_TENANT and any(covers(p, action) for p in ROOT_ONLY_ACTIONS):
                found.append(Overreach(index, "action", action, "is root's alone"))
            elif not all(_holds(held, action, r) for r in inside):
                found.append(
                    Overreach(index, "action", action, f"is not held by the {author_role} role")
                )
    return found

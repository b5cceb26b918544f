"""IAM policy evaluation: default deny, explicit deny wins, wildcards in actions and resources.

A statement is {"effect": "allow"|"deny", "actions": [...], "resources": [...],
"conditions": {attribute: value or [values]}}. Actions look like
"compute:flavors:manage" and may end in or contain "*"; resources look like
"tenant:acme" or "tenant:root/pool:pool_01…" and match with the same wildcards.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any

ROOT_TENANT = "root"


def may_use_pool(tenant: str, owner: str, offered_to: Container[str]) -> bool:
    """A pool's owner and the tenants it is offered to may use it: quotas, instances, reservations.

    `offered_to` may answer `in` lazily (the API asks the database only when the tenant is not
    the owner); FleetConfig's checks pass the declared list.
    """
    return tenant == owner or tenant in offered_to


"""The tenant that runs the fleet; its admin is the operator (PRODUCT.md §5)."""

Statement = Mapping[str, Any]

EFFECTS = ("allow", "deny")


@dataclass(frozen=True)
class AccessRequest:
    action: str
    resource: str
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str


def _matches_any(value: str, patterns: Iterable[str]) -> bool:
    for pattern in patterns:  # noqa: SIM110 (a loop: no generator on every call; "*" matches all)
        if pattern == "*" or fnmatchcase(value, pattern):
            return True
    return False


def _conditions_hold(conditions: Mapping[str, Any], attributes: Mapping[str, Any]) -> bool:
    for key, expected in conditions.items():
        if key not in attributes:
            return False
        actual = attributes[key]
        allowed = expected if isinstance(expected, list) else [expected]
        if actual not in allowed:
            return False
    return True


def statement_applies(statement: Statement, request: AccessRequest) -> bool:
    return (
        _matches_any(request.action, statement.get("actions", ()))
        and _matches_any(request.resource, statement.get("resources", ()))
        and _conditions_hold(statement.get("conditions") or {}, request.attributes)
    )


def evaluate(statements: Sequence[Statement], request: AccessRequest) -> Decision:
    """Decide one request: any applying deny refuses, else any applying allow permits."""
    allowed = False
    for statement in statements:  # a loop: every call is decided here
        if statement_applies(statement, request):
            effect = statement.get("effect")
            if effect == "deny":
                return Decision(False, f"explicitly denied: {request.action} on {request.resource}")
            allowed = allowed or effect == "allow"
    if allowed:
        return _ALLOWED
    return Decision(False, f"no policy allows {request.action} on {request.resource}")


_ALLOWED = Decision(True, "allowed")

DECISIONS_MAX = 4_096
"""How many decisions are kept (decide): all are let go when one more would not fit."""

_decisions: dict[tuple[Any, ...], Decision] = {}


def policy_key(statements: Sequence[Statement]) -> str:
    """The statements' content as one text (their repr): statements that read alike decide
    alike, so it keys their decisions (decide). Other statements, a policy changed since,
    read otherwise."""
    return repr(statements)


def decide(
    key: str,
    statements: Sequence[Statement],
    action: str,
    resource: str,
    attributes: Mapping[str, Any],
) -> Decision:
    """evaluate() of the request on the statements whose policy_key is `key`, kept by all it
    depends on: that content, the action, the resource and the attributes (compared as evaluate
    compares them, by equality). A request with an attribute that cannot be a key is evaluated
    every time. A kept decision is a pure function's answer, so one map serves every thread:
    a race only evaluates twice."""
    try:
        found_key = (key, action, resource, tuple(attributes.items()))
        kept = _decisions.get(found_key)
    except TypeError:  # an unhashable attribute value
        return evaluate(statements, AccessRequest(action, resource, attributes))
    if kept is None:
        kept = evaluate(statements, AccessRequest(action, resource, attributes))
        if len(_decisions) >= DECISIONS_MAX:
            _decisions.clear()
        _decisions[found_key] = kept
    return kept


def validate_statement(statement: Any) -> list[str]:
    """Problems with one statement, empty when it is well formed."""
    problems: list[str] = []
    if not isinstance(statement, Mapping):
        return ["a statement must be an object"]
    if statement.get("effect") not in EFFECTS:
        problems.append("effect must be 'allow' or 'deny'")
    for key in ("actions", "resources"):
        value = statement.get(key)
        if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
            problems.append(f"{key} must be a non-empty list of strings")
    conditions = statement.get("conditions", {})
    if conditions is not None and not isinstance(conditions, Mapping):
        problems.append("conditions must be an object")
    unknown = set(statement) - {"effect", "actions", "resources", "conditions", "sid"}
    if unknown:
        problems.append(f"unknown keys: {', '.join(sorted(unknown))}")
    return problems


SHARED_POOL_ACTIONS = (
    "compute:pools:read",
    "compute:flavors:read",
    "compute:instances:*",
    "compute:reservations:*",
    "compute:capacity:preview",
)
"""What a tenant's admin and member may do in the pools offered to the tenant."""

SHARED_POOL_READS = (
    "compute:pools:read",
    "compute:flavors:read",
    "compute:instances:read",
    "compute:reservations:read",
)
"""What a viewer may do there: the reads among SHARED_POOL_ACTIONS, so a viewer never holds
more than a member (a pool's hosts are its owner's business, whatever the role)."""

AGENT = "agent"
"""The role of a host's agent: bound to one host (its principal's host_id), see agent_statements."""

ROLES = ("admin", "member", "viewer", AGENT)

HOST_REPORT = "compute:hosts:report"
"""What a host's agent does: report the host's inventory and its guests' states, read its specs."""

HOST_ATTRIBUTE = "host"
"""The request attribute naming the host (its node id) a HOST_REPORT call is about."""


def agent_statements(tenant_id: str, host_id: str | None) -> list[dict[str, Any]]:
    """An agent's statements: HOST_REPORT on its own tenant's pools, for its one host only.

    Nothing else, whatever it asks: every other action is refused by default deny, and an
    agent with no host (None) may do nothing at all.
    """
    if host_id is None:
        return []
    return [
        {
            "effect": "allow",
            "actions": [HOST_REPORT],
            "resources": [f"tenant:{tenant_id}/pool:*"],
            "conditions": {HOST_ATTRIBUTE: host_id},
        }
    ]


def role_statements(tenant_id: str, role: str) -> list[dict[str, Any]]:
    """The built-in statements of a role in a tenant; root's admin may do anything anywhere.

    Roles only add: whatever a viewer may do a member may, and whatever a member may do an
    admin may (tests/security/test_security_roles.py checks it route by route). The agent
    role stands apart: by itself it allows nothing (agent_statements adds its one host).
    """
    own = [f"tenant:{tenant_id}", f"tenant:{tenant_id}/*"]
    shared_pools = ["tenant:*/pool:*"]
    if role == "admin" and tenant_id == ROOT_TENANT:
        return [{"effect": "allow", "actions": ["*"], "resources": ["*"]}]
    if role == "admin":
        return [
            {"effect": "allow", "actions": ["*"], "resources": own},
            {"effect": "allow", "actions": list(SHARED_POOL_ACTIONS), "resources": shared_pools},
        ]
    if role == "member":
        member_actions = [
            "compute:*:read",
            "compute:instances:*",
            "compute:reservations:*",
            "compute:capacity:preview",
            "compute:services:*",
            "compute:indexes:*",
            "compute:environments:*",
        ]
        return [
            {"effect": "allow", "actions": member_actions, "resources": own},
            {"effect": "allow", "actions": list(SHARED_POOL_ACTIONS), "resources": shared_pools},
        ]
    if role == "viewer":
        return [
            {"effect": "allow", "actions": ["compute:*:read"], "resources": own},
            {"effect": "allow", "actions": list(SHARED_POOL_READS), "resources": shared_pools},
        ]
    if role == AGENT:
        return []
    raise ValueError(f"unknown role {role!r}")

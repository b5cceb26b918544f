"""domain.policy.decide: evaluate's decision kept by the statements' content and the request,
the same decision evaluate gives, whatever was decided before."""

from __future__ import annotations

from typing import Any

import pytest

from bcfleet.domain import policy
from bcfleet.domain.policy import AccessRequest, decide, evaluate, policy_key, role_statements

ALLOW_SMALL = [{"effect": "allow", "actions": ["compute:instances:*"], "resources": ["*"],
                "conditions": {"gpus": [0, 1]}}]  # fmt: skip
DENY_SPOT = [*ALLOW_SMALL, {"effect": "deny", "actions": ["*"], "resources": ["*"],
                            "conditions": {"spot": True}}]  # fmt: skip
POLICIES = [role_statements("acme", "member"), role_statements("root", "admin"), ALLOW_SMALL,
            DENY_SPOT, []]  # fmt: skip
REQUESTS = [
    ("compute:instances:create", "tenant:root/pool:pool_1", {"gpus": 0, "spot": False}),
    ("compute:instances:create", "tenant:root/pool:pool_1", {"gpus": 2, "spot": False}),
    ("compute:instances:create", "tenant:root/pool:pool_1", {"gpus": 1, "spot": True}),
    ("compute:flavors:manage", "tenant:acme", {}),
    ("compute:instances:read", "tenant:acme/instance:ins_1", {}),
]


def test_each_decision_is_the_one_evaluate_gives_whatever_was_decided_before() -> None:
    cases = [(p, r) for p in POLICIES for r in REQUESTS]
    for statements, (action, resource, attributes) in cases + cases[::-1]:
        expected = evaluate(statements, AccessRequest(action, resource, attributes))
        assert decide(policy_key(statements), statements, action, resource, attributes) == expected


def test_statements_that_read_otherwise_are_decided_again() -> None:
    request = REQUESTS[2]
    assert decide(policy_key(ALLOW_SMALL), ALLOW_SMALL, *request).allowed
    assert not decide(policy_key(DENY_SPOT), DENY_SPOT, *request).allowed


def test_an_attribute_that_cannot_be_a_key_is_evaluated() -> None:
    statements: list[dict[str, Any]] = [
        {"effect": "allow", "actions": ["*"], "resources": ["*"], "conditions": {"x": [[1]]}}
    ]
    key = policy_key(statements)
    assert decide(key, statements, "a", "b", {"x": [1]}).allowed
    assert not decide(key, statements, "a", "b", {"x": [2]}).allowed


def test_the_kept_decisions_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(policy, "DECISIONS_MAX", 3)
    monkeypatch.setattr(policy, "_decisions", {})
    for i in range(10):
        decide(policy_key(ALLOW_SMALL), ALLOW_SMALL, f"compute:instances:{i}", "r", {})
        assert len(policy._decisions) <= 3

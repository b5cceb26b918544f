"""value_findings: each problem at its path, in document order, at most one past MAX_PROBLEMS."""

from __future__ import annotations

from collections import UserDict
from typing import Any

from bcfleet.domain.document_limits import MAX_PROBLEMS
from bcfleet.reconcile.value_checks import value_findings


def _found(data: Any) -> list[tuple[tuple[str | int, ...], bool, str]]:
    return [(p.path, p.at_key, p.message.split(" (")[0]) for p in value_findings(data)]


def test_keys_values_and_numbers_are_found_at_their_paths_in_document_order() -> None:
    data = {
        "tenants": [{"id": "ok"}, {"id": "a\x00b"}],
        "pools": [{"name": "p", "policy": {"overcommit": {"vcpu": float("nan")}}}],
        "labels": {"bad\u202ekey": "fine", "key": "bad\nvalue"},
        "flavors": [{"pool": "p", "name": "f", "vcpu": 0, "memoryGiB": 2, "diskGiB": 3}],
    }
    assert _found(data) == [
        (("tenants", 1, "id"), False, "NUL characters are not allowed"),
        (("pools", 0, "policy", "overcommit", "vcpu"), False, "expected a finite number, got nan"),
        (
            ("labels", "bad\u202ekey"),
            True,
            "a key must not contain control or formatting characters",
        ),
        (("labels", "key"), False, "the value must not contain control or formatting characters"),
        (("flavors", 0, "vcpu"), False, "vcpu must be a whole number from 1 to 1,000,000, got 0"),
    ]


def test_any_mapping_is_walked_and_plain_scalars_are_fine() -> None:
    data = UserDict({"a": [1, True, None, 2.5, "x"], "b": UserDict({"c": float("inf")})})
    assert _found(data) == [(("b", "c"), False, "expected a finite number, got inf")]


def test_it_stops_one_past_the_limit_and_the_bounds_fill_what_is_left() -> None:
    many = {"names": ["\x00"] * (MAX_PROBLEMS + 50)}
    found = value_findings(many)
    assert len(found) == MAX_PROBLEMS + 1
    assert found[-1].path == ("names", MAX_PROBLEMS)
    few = {"names": ["\x00"] * 3, "quotas": [{"tenant": "t", "pool": "p", "vcpu": -1}]}
    assert [p.path for p in value_findings(few)] == [
        ("names", 0),
        ("names", 1),
        ("names", 2),
        ("quotas", 0, "vcpu"),
    ]

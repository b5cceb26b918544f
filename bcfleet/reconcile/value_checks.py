"""FleetConfig values against bcfleet.domain.bounds, each problem at its file:line:column.

load.py reports these with the schema's problems (one per path). The schema cannot see what these
see: a NUL, a newline or a bidi override written as a YAML escape ("\0", "\u202e"), a NaN
or an infinity (``.nan``, ``.inf``, which pass ``minimum`` and ``maximum``), the
bounds that the API enforces (a flavor's shape up to SHAPE_MAX, quotas up to QUOTA_MAX), and
a provider endpoint against the one URL rule (bounds.url_problem), of which the schema's
pattern states only the shape.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from itertools import islice
from typing import Any

from bcfleet.domain.bounds import (
    QUOTA_MAX,
    SHAPE_MAX,
    characters_problem,
    storable_problem,
    url_problem,
    whole_problem,
)
from bcfleet.domain.document_limits import MAX_PROBLEMS
from bcfleet.reconcile.yamldoc import PathKey, Problem

SHAPE_FIELDS = {"vcpu": 1, "memoryGiB": 1, "diskGiB": 1, "gpus": 0}
QUOTA_FIELDS = ("vcpu", "memoryGiB", "diskGiB", "gpu")
RESERVE_FIELDS = ("vcpu", "memoryGiB", "diskGiB")


def value_findings(data: Any) -> list[Problem]:
    """Every text and number of the document that breaks the bounds, in document order, up to
    one past MAX_PROBLEMS."""
    found = _Walk(MAX_PROBLEMS + 1)
    found.walk(data)
    if isinstance(data, Mapping):
        walked = {problem.path for problem in found.problems}
        bounded = (p for p in _bounded_values(data) if p.path not in walked)
        found.problems += islice(bounded, MAX_PROBLEMS + 1 - len(found.problems))
    return found.problems


_PLAIN_SCALARS = (int, bool, type(None))


class _Walk:
    """One walk over the document with one path list pushed and popped as it goes, so the
    values of a large document cost no path objects (only a problem gets its path)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.problems: list[Problem] = []
        self.path: list[str | int] = []

    def walk(self, value: Any) -> None:
        kind = type(value)  # the converter's own types first: isinstance on an ABC is slow
        if kind is str:
            self.text(value, at_key=False)
        elif kind is dict:
            self.mapping(value)
        elif kind is list:
            self.sequence(value)
        elif kind is float:
            self.number(value)
        elif kind in _PLAIN_SCALARS:
            return
        elif isinstance(value, Mapping):
            self.mapping(value)
        elif isinstance(value, list):
            self.sequence(value)
        elif isinstance(value, str):
            self.text(value, at_key=False)
        elif isinstance(value, float):
            self.number(value)

    def mapping(self, value: Mapping[Any, Any]) -> None:
        path, problems, limit = self.path, self.problems, self.limit
        for key, item in value.items():
            if len(problems) >= limit:
                return
            path.append(key)
            if isinstance(key, str):
                self.text(key, at_key=True)
            self.walk(item)
            path.pop()

    def sequence(self, value: list[Any]) -> None:
        path, problems, limit = self.path, self.problems, self.limit
        for index, item in enumerate(value):
            if len(problems) >= limit:
                return
            path.append(index)
            self.walk(item)
            path.pop()

    def number(self, value: float) -> None:
        if not math.isfinite(value):
            self.add(f"expected a finite number, got {value}", at_key=False)

    def text(self, text: str, *, at_key: bool) -> None:
        what = "a key" if at_key else "the value"
        problem = storable_problem(text) or characters_problem(what, text)
        if problem is not None:
            self.add(problem, at_key=at_key)

    def add(self, message: str, *, at_key: bool) -> None:
        if len(self.problems) < self.limit:
            self.problems.append(Problem(tuple(self.path), message, at_key=at_key))


def _items(data: Mapping[str, Any], section: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    items = data.get(section)
    for index, item in enumerate(items if isinstance(items, list) else []):
        if isinstance(item, Mapping):
            yield index, item


def _bounded_values(data: Mapping[str, Any]) -> Iterator[Problem]:
    for index, account in _items(data, "providerAccounts"):
        if isinstance(account.get("endpoint"), str):
            problem = url_problem("endpoint", account["endpoint"])
            if problem is not None:
                yield Problem(("providerAccounts", index, "endpoint"), problem)
    checks: list[tuple[PathKey, str, Any, int, int]] = []
    for index, flavor in _items(data, "flavors"):
        for name, low in SHAPE_FIELDS.items():
            if name in flavor:
                checks.append((("flavors", index, name), name, flavor[name], low, SHAPE_MAX))
    for index, quota in _items(data, "quotas"):
        for name in QUOTA_FIELDS:
            if quota.get(name) is not None:
                checks.append((("quotas", index, name), name, quota[name], 0, QUOTA_MAX))
    for index, pool in _items(data, "pools"):
        policy = pool.get("policy")
        reserve = policy.get("hostReserve") if isinstance(policy, Mapping) else None
        reserve = reserve if isinstance(reserve, Mapping) else {}
        for name in RESERVE_FIELDS:
            if name in reserve:
                path: PathKey = ("pools", index, "policy", "hostReserve", name)
                checks.append((path, f"hostReserve.{name}", reserve[name], 0, SHAPE_MAX))
    for path, name, value, low, high in checks:
        problem = whole_problem(name, value, low, high)
        if problem is not None:
            yield Problem(path, problem)

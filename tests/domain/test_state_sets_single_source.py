"""State names and pool kinds are listed in domain/states.py only: no module keeps its own copy."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path

import bcfleet
from bcfleet.domain import states

PACKAGE = Path(bcfleet.__file__).parent
SOURCE_OF_TRUTH = PACKAGE / "domain" / "states.py"
SET_NAME = re.compile(r"(^|_)STATES$|^LIVE_|_LIVE$|^POOL_KINDS$")
"""Names a module would give its own list of states (or of pool kinds)."""
VOCABULARIES = [
    {member.value for member in enum}
    for enum in vars(states).values()
    if isinstance(enum, type) and issubclass(enum, StrEnum) and enum is not StrEnum
]


def _strings(node: ast.AST) -> list[str] | None:
    """The strings of a tuple, list or set literal made of string constants only; else None."""
    if not isinstance(node, ast.Tuple | ast.List | ast.Set):
        return None
    found = [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return found if len(found) == len(node.elts) else None


def _names(target: ast.expr) -> Iterator[str]:
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, ast.Attribute):
        yield target.attr
    elif isinstance(target, ast.Tuple | ast.List):
        for element in target.elts:
            yield from _names(element)


def copies_in(source: str) -> list[str]:
    """Where a module defines a set of states: by name (…_STATES, LIVE_…), or as a literal
    of two or more names of one entity's states (or of pool kinds)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = list(node.targets)
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        found += [
            f"line {node.lineno}: {n}" for t in targets for n in _names(t) if SET_NAME.search(n)
        ]
        words = _strings(node)
        if (
            words is not None
            and len(set(words)) >= 2
            and any(set(words) <= vocabulary for vocabulary in VOCABULARIES)
        ):
            found.append(f"line {getattr(node, 'lineno', '?')}: {sorted(set(words))}")
    return found


def test_no_module_but_domain_states_lists_states() -> None:
    copies = {
        str(path.relative_to(PACKAGE)): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != SOURCE_OF_TRUTH and "migrations" not in path.parts
        for found in [copies_in(path.read_text())]
        if found
    }
    assert copies == {}, "import the sets of bcfleet.domain.states instead"


def test_the_check_finds_the_copies_it_is_meant_to_find() -> None:
    assert copies_in('LIVE_STATES = ("placed", "binding", "active")\n') == [
        "line 1: LIVE_STATES",
        "line 1: ['active', 'binding', 'placed']",
    ]
    assert copies_in("ALIAS_STATES = INSTANCE_LIVE\n") == ["line 1: ALIAS_STATES"]
    assert copies_in('q = where(state.in_(("running", "stopped")))\n') == [
        "line 1: ['running', 'stopped']"
    ]
    assert copies_in('KINDS = ["vps-host", "provider"]\n') == ["line 1: ['provider', 'vps-host']"]
    # not states: a count's keys, one state alone, names mixing entities' words
    assert (
        copies_in('COUNTS = ("placed", "failed")\nS = ("pending",)\nx = ("running", "draining")\n')
        == []
    )

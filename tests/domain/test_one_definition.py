"""Rules defined once: the root tenant's id, the quota a shape charges, the error codes.

A second copy is what drifted before: "root" written out in a dozen modules next to
ROOT_TENANT, a quota charge in placement beside Shape.quota_charge, a hand-kept tuple of
error classes beside error_classes().
"""

from __future__ import annotations

import ast
from pathlib import Path

import bcfleet
from bcfleet import errors
from bcfleet.domain.policy import ROOT_TENANT

PACKAGE = Path(bcfleet.__file__).parent
MIGRATIONS = PACKAGE / "store" / "migrations"
ERROR_CLASSES = {
    name
    for name, value in vars(errors).items()
    if isinstance(value, type) and issubclass(value, errors.FleetError)
}


def _modules() -> list[tuple[str, ast.Module]]:
    return [
        (str(path.relative_to(PACKAGE)), ast.parse(path.read_text(encoding="utf-8")))
        for path in sorted(PACKAGE.rglob("*.py"))
        if MIGRATIONS not in path.parents
    ]


def test_the_root_tenants_id_is_written_once() -> None:
    found = [
        f"{name}:{node.lineno}"
        for name, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and node.value == ROOT_TENANT
    ]
    assert found == ["domain/policy.py:" + str(_line_of_root_tenant())]


def _line_of_root_tenant() -> int:
    source = (PACKAGE / "domain" / "policy.py").read_text(encoding="utf-8")
    return next(
        i for i, line in enumerate(source.splitlines(), 1) if line.startswith("ROOT_TENANT")
    )


def test_one_function_says_what_a_shape_charges_against_quota() -> None:
    found = [
        f"{name}:{node.lineno} {node.name}"
        for name, tree in _modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.FunctionDef) and "quota_charge" in node.name
    ]
    assert found == [
        f"domain/shapes.py:{_line_of('domain/shapes.py', 'def quota_charge')} quota_charge"
    ]


def _line_of(module: str, text: str) -> int:
    source = (PACKAGE / module).read_text(encoding="utf-8")
    return next(i for i, line in enumerate(source.splitlines(), 1) if text in line)


def test_no_module_keeps_its_own_list_of_error_classes() -> None:
    """error_classes() walks the tree; a literal naming half of its classes or more is a
    copy of it (an `except` clause or a short table names a few)."""
    found = []
    for name, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Tuple | ast.List | ast.Set):
                named = {e.id for e in node.elts if isinstance(e, ast.Name)} & ERROR_CLASSES
                if len(named) * 2 >= len(errors.error_classes()):
                    found.append(f"{name}:{node.lineno}")
    assert found == []

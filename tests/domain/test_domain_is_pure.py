"""The domain imports the standard library, itself and bcfleet.errors only, and the import
contract that says so names every runtime dependency (a new one cannot slip in unlisted)."""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import bcfleet

PACKAGE = Path(bcfleet.__file__).parent
PYPROJECT = PACKAGE.parent / "pyproject.toml"
IMPORT_NAMES = {"pyyaml": "yaml", "python-ulid": "ulid", "jsonschema-rs": "jsonschema_rs"}


def _imports(source: str) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):  # function-level imports too
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def _allowed(module: str) -> bool:
    top = module.split(".")[0]
    if top == "bcfleet":
        return module.startswith("bcfleet.domain") or module == "bcfleet.errors"
    return top in sys.stdlib_module_names


def test_every_domain_import_is_the_standard_library_the_domain_or_errors() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line}: {module}"
        for path in sorted((PACKAGE / "domain").rglob("*.py"))
        for line, module in _imports(path.read_text(encoding="utf-8"))
        if not _allowed(module)
    ]
    assert found == []


def test_the_pure_domain_contract_forbids_every_runtime_dependency() -> None:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    (pure,) = [
        c
        for c in config["tool"]["importlinter"]["contracts"]
        if c.get("source_modules") == ["bcfleet.domain"]
    ]
    names = {
        re.split(r"[\[=<>~! ]", requirement, maxsplit=1)[0].lower()
        for requirement in config["project"]["dependencies"]
    }
    modules = {IMPORT_NAMES.get(name, name.replace("-", "_")) for name in names}
    assert "jsonschema" in modules
    assert modules - set(pure["forbidden_modules"]) == set()

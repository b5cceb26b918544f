"""Inventory validation, schema and meaning together; the API and the host agent call it.

The caller passes the parsed schema (``bcfleet.schemas.load_schema("inventory")``),
so this module reads no files. jsonschema is a pure validator and the only
third-party import here.

Semantic checks, each reported at the JSON path of the offending value:

- CPU ids are unique, and so are NUMA node ids and huge page sizes per node;
- while ``numaNodes`` lists nodes, every integer ``numaNode`` of a CPU or a GPU
  names one of them (null means unknown and is always allowed); an empty
  ``numaNodes`` means no topology is known, so node numbers cannot be checked;
- a huge page size never has more free pages than it has pages.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator

from bcfleet.errors import InvalidInputError


@dataclass(frozen=True, order=True)
class InventoryProblem:
    """One thing wrong with an inventory: where (a JSON path such as ``$.cpus[3].id``) and what."""

    path: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"path": self.path, "message": self.message}


def json_path(parts: Sequence[str | int]) -> str:
    """``["cpus", 3, "id"]`` as ``$.cpus[3].id``."""
    text = "$"
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return text


def schema_problems(doc: object, schema: Mapping[str, Any]) -> list[InventoryProblem]:
    """Every way ``doc`` breaks ``schema``, sorted by path."""
    validator = Draft202012Validator(schema)
    found = {
        InventoryProblem(json_path(list(error.absolute_path)), error.message)
        for error in validator.iter_errors(doc)
    }
    return sorted(found)


def _entries(doc: Mapping[str, Any], key: str) -> Iterator[tuple[int, Mapping[str, Any]]]:
    items = doc.get(key)
    if not isinstance(items, list):
        return
    for index, item in enumerate(items):
        if isinstance(item, Mapping):
            yield index, item


def _int(value: object) -> int | None:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def _duplicates(doc: Mapping[str, Any], key: str, what: str) -> Iterator[InventoryProblem]:
    first_at: dict[int, int] = {}
    for index, item in _entries(doc, key):
        ident = _int(item.get("id"))
        if ident is None:
            continue
        if ident in first_at:
            where = json_path([key, first_at[ident]])
            yield InventoryProblem(
                json_path([key, index, "id"]), f"duplicate {what} id {ident} (also at {where})"
            )
        else:
            first_at[ident] = index


def _node_references(doc: Mapping[str, Any], node_ids: set[int]) -> Iterator[InventoryProblem]:
    if not node_ids:
        return
    listed = ", ".join(str(n) for n in sorted(node_ids))
    for key, what in (("cpus", "CPU"), ("gpus", "GPU")):
        for index, item in _entries(doc, key):
            node = _int(item.get("numaNode"))
            if node is not None and node >= 0 and node not in node_ids:
                yield InventoryProblem(
                    json_path([key, index, "numaNode"]),
                    f"{what} names NUMA node {node}, which is not listed (listed: {listed})",
                )


def _hugepage_problems(doc: Mapping[str, Any]) -> Iterator[InventoryProblem]:
    for node_index, node in _entries(doc, "numaNodes"):
        seen: set[int] = set()
        for index, pages in _entries(node, "hugepages"):
            path: list[str | int] = ["numaNodes", node_index, "hugepages", index]
            size = _int(pages.get("sizeBytes"))
            if size is not None and size in seen:
                yield InventoryProblem(
                    json_path([*path, "sizeBytes"]), f"huge page size {size} listed twice"
                )
            if size is not None:
                seen.add(size)
            total, free = _int(pages.get("total")), _int(pages.get("free"))
            if total is not None and free is not None and free > total:
                yield InventoryProblem(
                    json_path([*path, "free"]), f"{free} free huge pages but only {total} in all"
                )


def semantic_problems(doc: object) -> list[InventoryProblem]:
    """The problems a schema cannot see; parts the schema rejects are skipped, not re-reported."""
    if not isinstance(doc, Mapping):
        return []
    node_ids = {
        ident
        for _, node in _entries(doc, "numaNodes")
        if (ident := _int(node.get("id"))) is not None
    }
    found = [
        *_duplicates(doc, "cpus", "CPU"),
        *_duplicates(doc, "numaNodes", "NUMA node"),
        *_node_references(doc, node_ids),
        *_hugepage_problems(doc),
    ]
    return sorted(found)


def inventory_problems(doc: object, schema: Mapping[str, Any]) -> list[InventoryProblem]:
    """Schema problems, then semantic problems; empty when the inventory is valid."""
    return [*schema_problems(doc, schema), *semantic_problems(doc)]


def validate_inventory(doc: object, schema: Mapping[str, Any]) -> None:
    """Raise InvalidInputError naming every problem of ``doc``, each at its JSON path."""
    problems = inventory_problems(doc, schema)
    if not problems:
        return
    count = f"{len(problems)} problem" + ("" if len(problems) == 1 else "s")
    listing = "; ".join(f"{p.path}: {p.message}" for p in problems)
    raise InvalidInputError(
        f"invalid inventory ({count}): {listing}",
        {"problems": [p.to_json() for p in problems]},
    )

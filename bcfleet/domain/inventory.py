"""An inventory's meaning: the checks a JSON Schema cannot express, and the one refusal.

The schema itself is run by ``bcfleet.schemas.inventory`` (jsonschema stays out of the
domain); it hands its problems to ``merged_problems`` and ``refuse``.

Semantic checks, each reported at the JSON path of the offending value:

- CPU ids are unique, and so are NUMA node ids and huge page sizes per node;
- while ``numaNodes`` lists nodes, every integer ``numaNode`` of a CPU or a GPU
  names one of them (null means unknown and is always allowed); an empty
  ``numaNodes`` means no topology is known, so node numbers cannot be checked;
- a huge page size never has more free pages than it has pages;
- GPU PCI addresses are unique (case aside), so one physical GPU is never two atoms;
- every number is finite and within the bounds of ``bcfleet.domain.bounds`` (JSON readers
  accept NaN and 1e308, and the schema's ``minimum`` cannot see a NaN).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bcfleet.domain.bounds import (
    HUGEPAGE_COUNT_MAX,
    HUGEPAGE_SIZE_MAX,
    SHAPE_MAX,
    characters_problem,
    number_problem,
    storable_problem,
    text_problem,
    whole_problem,
)
from bcfleet.domain.document_limits import MAX_PROBLEMS
from bcfleet.errors import InvalidInputError

# (section, field, low, high) of every number an inventory holds; GiB may be fractional.
_WHOLE_FIELDS: tuple[tuple[str, str, int, int], ...] = (
    ("cpus", "id", 0, SHAPE_MAX),
    ("cpus", "numaNode", 0, SHAPE_MAX),
    ("numaNodes", "id", 0, SHAPE_MAX),
    ("gpus", "numaNode", 0, SHAPE_MAX),
)
GPU_MODEL_MAX = 128
_LISTED = 16  # NUMA node ids a message lists
_MESSAGE_PROBLEMS = 50  # problems the error's message lists; details carry them all


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
    ordered = sorted(node_ids)
    listed = ", ".join(str(n) for n in ordered[:_LISTED]) + (
        ", …" if len(ordered) > _LISTED else ""
    )
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


def _gpu_duplicates(doc: Mapping[str, Any]) -> Iterator[InventoryProblem]:
    first_at: dict[str, int] = {}
    for index, gpu in _entries(doc, "gpus"):
        address = gpu.get("pciAddress")
        if not isinstance(address, str):
            continue
        key = address.lower()
        if key in first_at:
            where = json_path(["gpus", first_at[key]])
            yield InventoryProblem(
                json_path(["gpus", index, "pciAddress"]),
                f"duplicate GPU PCI address {address} (also at {where})",
            )
        else:
            first_at[key] = index


def _text_problems(value: object, path: list[str | int]) -> Iterator[InventoryProblem]:
    """Every key and text of the document that no database stores or no table can show."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str):
                yield from _bounded(
                    [*path, key], storable_problem(key) or characters_problem("key", key)
                )
            yield from _text_problems(item, [*path, key] if isinstance(key, str) else path)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _text_problems(item, [*path, index])
    elif isinstance(value, str):
        yield from _bounded(path, storable_problem(value) or characters_problem("text", value))


def _bounded(path: list[str | int], problem: str | None) -> Iterator[InventoryProblem]:
    if problem is not None:
        yield InventoryProblem(json_path(path), problem)


def _number_problems(doc: Mapping[str, Any]) -> Iterator[InventoryProblem]:
    """Every number out of bounds; None (an unknown NUMA node) and absent fields are skipped."""
    for key in ("memoryGiB", "diskGiB"):
        if key in doc:
            yield from _bounded([key], number_problem(key, doc[key], 0, SHAPE_MAX))
    for section, name, low, high in _WHOLE_FIELDS:
        for index, item in _entries(doc, section):
            if item.get(name) is not None:
                problem = whole_problem(name, item[name], low, high)
                yield from _bounded([section, index, name], problem)
    for node_index, node in _entries(doc, "numaNodes"):
        if "memoryGiB" in node:
            problem = number_problem("memoryGiB", node["memoryGiB"], 0, SHAPE_MAX)
            yield from _bounded(["numaNodes", node_index, "memoryGiB"], problem)
        for index, pages in _entries(node, "hugepages"):
            path: list[str | int] = ["numaNodes", node_index, "hugepages", index]
            limits = (("sizeBytes", 4096, HUGEPAGE_SIZE_MAX),
                      ("total", 0, HUGEPAGE_COUNT_MAX), ("free", 0, HUGEPAGE_COUNT_MAX))  # fmt: skip
            for name, low, high in limits:
                if name in pages:
                    problem = whole_problem(name, pages[name], low, high)
                    yield from _bounded([*path, name], problem)
    for index, gpu in _entries(doc, "gpus"):
        if "model" in gpu:
            problem = text_problem("model", gpu["model"], GPU_MODEL_MAX)
            yield from _bounded(["gpus", index, "model"], problem)


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
        *_gpu_duplicates(doc),
        *_number_problems(doc),
        *_text_problems(doc, []),
    ]
    first = {problem.path: problem for problem in reversed(found)}  # one problem per path
    return sorted(first.values())


def merged_problems(doc: object, schema_found: list[InventoryProblem]) -> list[InventoryProblem]:
    """The schema's problems, then the semantic ones at other paths; empty when the inventory is valid."""
    seen = {p.path for p in schema_found}
    found = [*schema_found, *(p for p in semantic_problems(doc) if p.path not in seen)]
    return found[: MAX_PROBLEMS + 1]


def refuse(problems: list[InventoryProblem]) -> None:
    """Raise InvalidInputError naming every problem, each at its JSON path; nothing when none."""
    if not problems:
        return
    details: dict[str, Any] = {"problems": [p.to_json() for p in problems[:MAX_PROBLEMS]]}
    if len(problems) > MAX_PROBLEMS:
        count = f"more than {MAX_PROBLEMS:,} problems"
        details["truncated"] = True
    else:
        count = f"{len(problems)} problem" + ("" if len(problems) == 1 else "s")
    listing = "; ".join(f"{p.path}: {p.message}" for p in problems[:_MESSAGE_PROBLEMS])
    if len(problems) > _MESSAGE_PROBLEMS:
        listing += "; …"
    raise InvalidInputError(f"invalid inventory ({count}): {listing}", details)

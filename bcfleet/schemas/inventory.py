"""Inventory validation against the shipped JSON Schema, then domain.inventory's semantic checks.

The API (hosts.report) and the host agent call it; jsonschema runs here, outside the domain.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import islice
from typing import Any

from bcfleet.domain.document_limits import MAX_PROBLEMS, cut
from bcfleet.domain.inventory import InventoryProblem, json_path, merged_problems, refuse
from bcfleet.schemas import load_schema


def schema_problems(doc: object, schema: Mapping[str, Any]) -> list[InventoryProblem]:
    """Every way ``doc`` breaks ``schema`` (up to one past MAX_PROBLEMS), sorted by path."""
    from jsonschema import Draft202012Validator  # only when a report is checked, not to list hosts

    validator = Draft202012Validator(schema)
    found = {
        InventoryProblem(json_path(list(error.absolute_path)), cut(error.message))
        for error in islice(validator.iter_errors(doc), MAX_PROBLEMS + 1)
    }
    return sorted(found)


def inventory_problems(
    doc: object, schema: Mapping[str, Any] | None = None
) -> list[InventoryProblem]:
    """Schema problems, then semantic problems (one per path); empty when the inventory is valid.

    ``schema``: the shipped inventory schema unless given.
    """
    shipped = load_schema("inventory") if schema is None else schema
    return merged_problems(doc, schema_problems(doc, shipped))


def validate_inventory(doc: object, schema: Mapping[str, Any] | None = None) -> None:
    """Raise InvalidInputError naming every problem of ``doc``, each at its JSON path."""
    refuse(inventory_problems(doc, schema))

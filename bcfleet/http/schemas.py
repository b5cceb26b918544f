"""Building blocks of the OpenAPI component schemas that the route modules declare."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from bcfleet.domain.bounds import (
    INT32_MAX,
    NAME_MAX,
    NAME_PATTERN,
    QUOTA_MAX,
    RATIO_MAX,
    RATIO_MIN,
    SHAPE_MAX,
)

Schema = dict[str, Any]

# The bounds of bcfleet.domain.bounds, which the API enforces whatever the schema says.
STRING: Schema = {"type": "string"}
NAME: Schema = {"type": "string", "maxLength": NAME_MAX, "pattern": NAME_PATTERN}
SHAPE_COUNT: Schema = {"type": "integer", "minimum": 0, "maximum": SHAPE_MAX}
QUOTA: Schema = {"type": "integer", "minimum": 0, "maximum": QUOTA_MAX}
RATIO: Schema = {
    "type": "number",
    "description": f"An overcommit ratio; outside {RATIO_MIN:g}..{RATIO_MAX:g} it is clamped into "
    "that range and the answer's notices say so.",
}
TEXT: Schema = {"type": "string", "maxLength": 4096}
BOOL: Schema = {"type": "boolean"}
INT: Schema = {"type": "integer"}
COUNT: Schema = {"type": "integer", "minimum": 0, "maximum": INT32_MAX}
NUMBER: Schema = {"type": "number"}
TIME: Schema = {"type": "string", "format": "date-time"}
ANY_OBJECT: Schema = {"type": "object"}
STRING_MAP: Schema = {"type": "object", "additionalProperties": {"type": "string"}}


def nullable(schema: Mapping[str, Any]) -> Schema:
    """The schema, or null."""
    return {"anyOf": [dict(schema), {"type": "null"}]}


def ref(name: str) -> Schema:
    return {"$ref": f"#/components/schemas/{name}"}


def array(items: Mapping[str, Any], max_items: int | None = None) -> Schema:
    body: Schema = {"type": "array", "items": dict(items)}
    if max_items is not None:
        body["maxItems"] = max_items
    return body


def obj(
    properties: Mapping[str, Mapping[str, Any]],
    required: Iterable[str] | None = None,
    *,
    strict: bool = True,
    description: str = "",
) -> Schema:
    """An object schema; every property is required unless ``required`` says which are."""
    body: Schema = {
        "type": "object",
        "properties": {k: dict(v) for k, v in properties.items()},
        "required": list(properties) if required is None else list(required),
    }
    if strict:
        body["additionalProperties"] = False
    if description:
        body["description"] = description
    return body


def page(item: str, *, cursor: bool = False) -> Schema:
    """A list answer: {items: [...]} (and a cursor for the event log)."""
    properties: dict[str, Schema] = {"items": array(ref(item))}
    if cursor:
        properties["cursor"] = nullable(INT)
    return obj(properties)

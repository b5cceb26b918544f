"""Validate FleetConfig data against fleetconfig.schema.json, in words an operator can act on.

When jsonschema-rs is installed, it answers first whether the data is valid at all (some
forty times faster on large documents); only data it does not accept goes through the
jsonschema validator, which explains each problem and has the last word.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from importlib.resources import files
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

try:
    import jsonschema_rs
except ImportError:  # the pure-Python validator alone is correct, only slower
    jsonschema_rs = None  # type: ignore[assignment]

from bcfleet.reconcile.yamldoc import PathKey, Problem, describe

_TYPE_WORDS = {
    "object": "an object",
    "array": "an array",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "a boolean",
    "null": "null",
}


@cache
def fleetconfig_schema() -> dict[str, Any]:
    """The FleetConfig JSON Schema shipped in the package."""
    text = files("bcfleet").joinpath("schemas", "fleetconfig.schema.json").read_text("utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@cache
def _validator() -> Draft202012Validator:
    """A validator of the schema with its local ``$ref``s inlined: the same rules, checked
    several times faster on large documents because no reference is resolved per value."""
    schema = fleetconfig_schema()
    return Draft202012Validator(_inline_refs(schema, schema.get("$defs", {})))


def _inline_refs(node: Any, defs: Mapping[str, Any]) -> Any:
    if isinstance(node, Mapping):
        if "$ref" in node:
            target = _inline_refs(defs[str(node["$ref"]).rsplit("/", 1)[-1]], defs)
            siblings = {k: _inline_refs(v, defs) for k, v in node.items() if k != "$ref"}
            return {**siblings, **target}
        return {k: _inline_refs(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [_inline_refs(item, defs) for item in node]
    return node


def suggest(word: str, candidates: Sequence[str]) -> str:
    """``; did you mean 'x'?`` for the nearest candidate, or nothing."""
    close = difflib.get_close_matches(word, list(candidates), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


@cache
def _fast_validator() -> Any:
    return None if jsonschema_rs is None else jsonschema_rs.validator_for(fleetconfig_schema())


def _surely_valid(data: Any) -> bool:
    fast = _fast_validator()
    if fast is None:
        return False
    try:
        return bool(fast.is_valid(data))
    except Exception:  # noqa: BLE001 - values JSON cannot hold (dates, NaN, huge ints): ask jsonschema
        return False


def schema_problems(data: Any) -> list[Problem]:
    """Every schema violation in ``data``; each unknown field is a Problem of its own."""
    if _surely_valid(data):
        return []
    problems: list[Problem] = []
    for error in _validator().iter_errors(data):
        problems.extend(_explain(error))
    return problems


def _subschema(error: ValidationError) -> Mapping[str, Any]:
    schema = error.schema
    return schema if isinstance(schema, Mapping) else {}


def _explain(error: ValidationError) -> Iterator[Problem]:
    path: PathKey = tuple(error.absolute_path)
    kind = error.validator
    value: Any = error.validator_value
    if "propertyNames" in error.absolute_schema_path:
        yield _bad_key(path, error)
    elif kind == "additionalProperties" and isinstance(error.instance, dict):
        known = sorted(_subschema(error).get("properties", {}))
        for key in error.instance:
            if key not in known:
                message = f"unknown field {key!r}{suggest(str(key), known)}"
                yield Problem((*path, key), message, at_key=True)
    elif kind == "required" and isinstance(error.instance, dict):
        for name in value:
            if name not in error.instance:
                yield Problem(path, f"missing required field {name!r}")
    elif kind == "uniqueItems" and isinstance(error.instance, list):
        yield from _duplicates(path, error.instance)
    else:
        yield Problem(path, _message(error))


def _bad_key(path: PathKey, error: ValidationError) -> Problem:
    key = str(error.instance)
    hint = _subschema(error).get("description")
    message = f"{key!r} is not a valid key" + (f": use {hint}" if hint else "")
    return Problem((*path, key), message, at_key=True)


def _duplicates(path: PathKey, items: list[Any]) -> Iterator[Problem]:
    seen: list[Any] = []
    for index, item in enumerate(items):
        if item in seen:
            yield Problem((*path, index), f"{item!r} is listed more than once")
        else:
            seen.append(item)


def _message(error: ValidationError) -> str:
    kind, instance = error.validator, error.instance
    value: Any = error.validator_value
    if kind == "type":
        wanted = [value] if isinstance(value, str) else list(value)
        expected = " or ".join(_TYPE_WORDS.get(str(name), str(name)) for name in wanted)
        return f"expected {expected}, got {describe(instance)}"
    if kind == "enum" and len(value) > 8 and (description := _subschema(error).get("description")):
        return f"{instance!r} is not {description}"  # a long list, such as huge page sizes
    if kind == "enum":
        choices = ", ".join(repr(choice) for choice in value)
        hint = suggest(instance, [str(c) for c in value]) if isinstance(instance, str) else ""
        return f"{instance!r} is not one of {choices}{hint}"
    if kind == "const":
        return f"expected {value!r}, got {describe(instance)}"
    if kind == "pattern":
        description = _subschema(error).get("description")
        return f"{instance!r} is not allowed here" + (f": use {description}" if description else "")
    return str(error.message)

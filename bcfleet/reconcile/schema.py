"""Validate FleetConfig data against fleetconfig.schema.json, in words an operator can act on.

When jsonschema-rs is installed, it answers first whether the data is valid at all (some
forty times faster on large documents); only data it does not accept goes through the
jsonschema validator, which explains each problem and has the last word. That validator
checks ``uniqueItems`` in linear time (jsonschema's own compares every pair of objects), and
at most MAX_PROBLEMS problems are explained; values are quoted cut short (``bounds.shown``).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Hashable, Iterator, Mapping, Sequence
from functools import cache
from importlib.resources import files
from itertools import islice
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator
from jsonschema.validators import extend

try:
    import jsonschema_rs
except ImportError:  # the pure-Python validator alone is correct, only slower
    jsonschema_rs = None  # type: ignore[assignment]

from bcfleet.domain.bounds import schema_whole_problem, shown
from bcfleet.domain.document_limits import MAX_PROBLEMS, cut
from bcfleet.reconcile.yamldoc import PathKey, Problem, describe

_BOUND_WORDS = {
    "maxLength": "at most",
    "minLength": "at least",
    "maximum": "at most",
    "minimum": "at least",
}

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


def _canonical(value: Any) -> Hashable:
    """A key equal for values JSON Schema calls equal: 1 and 1.0 alike, true and 1 not."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, int | float):
        return ("number", value)
    if isinstance(value, list):
        return ("array", tuple(_canonical(item) for item in value))
    if isinstance(value, dict):
        return ("object", frozenset((key, _canonical(item)) for key, item in value.items()))
    return ("other", repr(value))


def _repeated(items: list[Any]) -> Iterator[tuple[int, Any]]:
    """Each item equal to an earlier one, with its index: one pass over a dict."""
    seen: set[Hashable] = set()
    for index, item in enumerate(items):
        key = _canonical(item)
        if key in seen:
            yield index, item
        seen.add(key)


def _unique_items(
    _validator: Validator, unique: Any, instance: Any, _schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if unique and isinstance(instance, list) and next(_repeated(instance), None) is not None:
        yield ValidationError("has non-unique elements")


_LinearValidator = extend(  # type: ignore[no-untyped-call]
    Draft202012Validator, {"uniqueItems": _unique_items}
)


@cache
def _validator() -> Validator:
    """A validator of the schema with its local ``$ref``s inlined: the same rules, checked
    several times faster on large documents because no reference is resolved per value."""
    schema = fleetconfig_schema()
    validator: Validator = _LinearValidator(_inline_refs(schema, schema.get("$defs", {})))
    return validator


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
    """Every schema violation in ``data``, up to one past MAX_PROBLEMS (so the caller can tell
    that it stopped); each unknown field is a Problem of its own."""
    if _surely_valid(data):
        return []
    explained = (p for error in _validator().iter_errors(data) for p in _explain(error))
    return list(islice(explained, MAX_PROBLEMS + 1))


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
                message = f"unknown field {shown(key)}{suggest(str(key), known)}"
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
    message = f"{shown(key)} is not a valid key" + (f": use {hint}" if hint else "")
    return Problem((*path, key), message, at_key=True)


def _duplicates(path: PathKey, items: list[Any]) -> Iterator[Problem]:
    for index, item in _repeated(items):
        yield Problem((*path, index), f"{shown(item)} is listed more than once")


def _range(schema: Mapping[str, Any], kind: str, value: float) -> str:
    """A number's bounds as the API's messages say them: a whole number from 1 to 1,000,000."""
    what = "a whole number" if schema.get("type") == "integer" else "a number"
    low, high = schema.get("minimum"), schema.get("maximum")
    if isinstance(low, int | float) and isinstance(high, int | float):
        return f"{what} from {low:,} to {high:,}"
    return f"{_BOUND_WORDS[kind]} {value:,}"


def _message(error: ValidationError) -> str:
    kind, instance = error.validator, error.instance
    value: Any = error.validator_value
    fraction = schema_whole_problem(error)
    if fraction is not None:
        return fraction
    if kind == "type":
        wanted = [value] if isinstance(value, str) else list(value)
        expected = " or ".join(_TYPE_WORDS.get(str(name), str(name)) for name in wanted)
        return f"expected {expected}, got {describe(instance)}"
    if kind == "enum" and len(value) > 8 and (description := _subschema(error).get("description")):
        return f"{instance!r} is not {description}"  # a long list, such as huge page sizes
    if kind == "enum":
        choices = ", ".join(repr(choice) for choice in value)
        hint = suggest(instance, [str(c) for c in value]) if isinstance(instance, str) else ""
        return f"{shown(instance)} is not one of {choices}{hint}"
    if kind == "const":
        return f"expected {value!r}, got {describe(instance)}"
    if kind in _BOUND_WORDS and isinstance(instance, str):
        return f"expected {_BOUND_WORDS[kind]} {value:,} characters, got {len(instance):,}"
    if kind in _BOUND_WORDS and isinstance(value, int | float):
        return f"expected {_range(_subschema(error), kind, value)}, got {shown(instance)}"
    if kind == "pattern":
        description = _subschema(error).get("description")
        return f"{shown(instance)} is not allowed here" + (
            f": use {description}" if description else ""
        )
    return cut(str(error.message))

"""OpenAPI component schemas generated from the typed documents of bcfleet/api/documents.py."""

from __future__ import annotations

import types
from collections.abc import Mapping
from enum import Enum
from typing import (
    Annotated,
    Any,
    Literal,
    NotRequired,
    Required,
    Union,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from bcfleet.domain.json_types import Format, OneOf
from bcfleet.http.schemas import Schema, nullable, obj, ref

SCALARS: dict[type[Any], Schema] = {
    str: {"type": "string"},
    bool: {"type": "boolean"},
    int: {"type": "integer"},
    float: {"type": "number"},
}


def component_name(document: type[Any]) -> str:
    """The component a TypedDict documents: PoolJson is Pool."""
    return document.__name__.removesuffix("Json")


def type_schema(hint: Any) -> Schema:
    """The JSON schema of one field's type."""
    origin = get_origin(hint)
    if origin in (NotRequired, Required):
        return type_schema(get_args(hint)[0])
    if origin is Annotated:
        base, *extras = get_args(hint)
        body = type_schema(base)
        for extra in extras:
            if isinstance(extra, Format):
                body["format"] = extra.name
            elif isinstance(extra, OneOf):
                body["enum"] = [str(value) for value in extra.values]
        return body
    if origin in (Union, types.UnionType):
        members = [a for a in get_args(hint) if a is not type(None)]
        inner = (
            type_schema(members[0])
            if len(members) == 1
            else {"anyOf": [type_schema(m) for m in members]}
        )
        return nullable(inner) if len(members) < len(get_args(hint)) else inner
    if origin is Literal:
        return _enum(list(get_args(hint)))
    if origin is list:
        (item,) = get_args(hint)
        return {"type": "array", "items": type_schema(item)}
    if origin in (dict, Mapping):
        key, value = get_args(hint)
        if key is not str:
            raise TypeError(f"JSON object keys are strings, not {key!r}")
        return {"type": "object", "additionalProperties": type_schema(value)}
    if is_typeddict(hint):
        return ref(component_name(hint))
    if isinstance(hint, type) and issubclass(hint, Enum):
        return _enum([member.value for member in hint])
    if hint is Any:
        return {}
    if hint in SCALARS:
        return dict(SCALARS[hint])
    raise TypeError(f"no JSON schema for {hint!r}")


def _enum(values: list[Any]) -> Schema:
    kinds = {type(v) for v in values}
    if kinds == {str}:
        return {"type": "string", "enum": values}
    if kinds == {int}:
        return {"type": "integer", "enum": values}
    raise TypeError(f"an enum of strings or of integers, not {values!r}")


def document_schema(
    document: type[Any],
    constraints: Mapping[str, Mapping[str, Any]] | None = None,
    description: str = "",
) -> Schema:
    """The object schema of a TypedDict: its keys, its required keys, no others.

    ``constraints`` replace a field's generated schema with one that says more (an enum read
    from a rule, a pattern, a bound); each must name a field of the document.
    """
    hints = get_type_hints(document, include_extras=True)
    extra = set(constraints or {}) - set(hints)
    if extra:
        raise KeyError(f"{document.__name__} has no fields {sorted(extra)}")
    properties = {
        name: dict((constraints or {}).get(name) or type_schema(hint))
        for name, hint in hints.items()
    }
    required = [name for name in hints if name in document.__required_keys__]
    _check_required_keys(document)
    return obj(properties, required, description=description or _doc(document))


def _check_required_keys(document: type[Any]) -> None:
    """Python 3.11 counts a ``NotRequired`` key as required when the TypedDict's module has
    postponed annotations (``from __future__ import annotations``): refuse it, as the schema
    would then demand a key the API leaves out."""
    written = getattr(document, "__annotations__", {})
    wrong = sorted(
        name
        for name, hint in written.items()
        if name in document.__required_keys__
        # postponed, a hint is its text, or a ForwardRef holding it
        and str(getattr(hint, "__forward_arg__", hint)).startswith("NotRequired[")
    )
    if wrong:
        raise TypeError(
            f"{document.__name__}: {wrong} are NotRequired but counted as required; define it "
            "in a module without 'from __future__ import annotations'"
        )


def _doc(document: type[Any]) -> str:
    text = document.__doc__ or ""
    # a TypedDict without a docstring gets its signature as __doc__
    return "" if text.startswith(document.__name__ + "(") else text.strip()


_GENERATED: dict[str, type[Any]] = {}
"""Every document a schema was generated for, by component name (the routes' SCHEMAS fill it
when they are imported)."""


def generated_documents() -> tuple[type[Any], ...]:
    """The typed documents whose schemas the OpenAPI document holds, for its tests."""
    return tuple(_GENERATED.values())


def document_schemas(
    documents: tuple[type[Any], ...],
    constraints: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
) -> dict[str, Schema]:
    """The components of several documents, by name; constraints by component name.

    Two documents may not claim one component name."""
    schemas = {}
    for document in documents:
        name = component_name(document)
        known = _GENERATED.setdefault(name, document)
        if known is not document:
            raise TypeError(f"{document.__qualname__} and {known.__qualname__} are both {name}")
        schemas[name] = document_schema(document, (constraints or {}).get(name))
    return schemas

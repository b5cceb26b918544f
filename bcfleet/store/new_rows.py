"""New ORM objects without the model's constructor: for a hot path that writes the row itself with Core."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

from sqlalchemy.orm import class_mapper
from sqlmodel import SQLModel

M = TypeVar("M", bound=SQLModel)


@cache
def _defaults(model: type[SQLModel]) -> tuple[dict[str, Any], tuple[tuple[str, Any], ...]]:
    """The model's plain default values, and its fields made by a factory (name, factory)."""
    plain: dict[str, Any] = {}
    made: list[tuple[str, Any]] = []
    for name, info in model.model_fields.items():
        if info.default_factory is not None:
            made.append((name, info.default_factory))
        elif not info.is_required():
            plain[name] = info.default
    return plain, tuple(made)


def new_row(model: type[M], values: Mapping[str, Any]) -> M:
    """A transient object of a table model: its defaults, then `values`, as the constructor would set.

    Nothing is validated and no change is tracked for the values given (SQLModel's constructor
    sets every field through the ORM's instrumentation, which cost a placement more than
    its INSERT); attributes set afterwards are tracked as usual. The caller gives every
    required field.
    """
    # as the ORM makes an object it loads: SQLModel's __new__ sets pydantic's own attributes
    obj: M = class_mapper(model).class_manager.new_instance()
    plain, made = _defaults(model)
    fields = dict(plain)
    for name, factory in made:
        if name not in values:
            fields[name] = factory()
    fields.update(values)
    obj.__dict__.update(fields)
    return obj

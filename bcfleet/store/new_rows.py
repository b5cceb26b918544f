"""ORM objects without the model's constructor: new ones for a hot path that writes the row itself,
and loaded ones for a hot path that read the row itself."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any, TypeVar

from sqlalchemy.orm import class_mapper, make_transient_to_detached
from sqlalchemy.orm.util import identity_key
from sqlmodel import Session, SQLModel

M = TypeVar("M", bound=SQLModel)


@cache
def _new_instance(model: type[SQLModel]) -> Any:
    """The model's class manager's new_instance (looked up once: class_mapper is not cheap)."""
    return class_mapper(model).class_manager.new_instance


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


def new_values(model: type[SQLModel], values: Mapping[str, Any]) -> dict[str, Any]:
    """Every field of a new row of a table model: its defaults (a factory's made anew), then
    `values`, as the constructor would set them; the dict new_row gives its object."""
    plain, made = _defaults(model)
    fields = dict(plain)
    for name, factory in made:
        if name not in values:
            fields[name] = factory()
    fields.update(values)
    return fields


def new_row(model: type[M], values: Mapping[str, Any]) -> M:
    """A transient object of a table model: its defaults, then `values`, as the constructor would set.

    Nothing is validated and no change is tracked for the values given (SQLModel's constructor
    sets every field through the ORM's instrumentation, which cost a placement more than
    its INSERT); attributes set afterwards are tracked as usual. The caller gives every
    required field.
    """
    # as the ORM makes an object it loads: SQLModel's __new__ sets pydantic's own attributes
    obj: M = _new_instance(model)()
    obj.__dict__.update(new_values(model, values))
    return obj


@cache
def _primary_key(model: type[SQLModel]) -> tuple[str, ...]:
    mapper = class_mapper(model)
    return tuple(mapper.get_property_by_column(column).key for column in mapper.primary_key)


def _held(session: Session, model: type[M], values: Mapping[str, Any]) -> M | None:
    """The object the session holds for the row's primary key, if any."""
    if not session.identity_map:  # nothing held (a placement's session): no key to make
        return None
    ident = tuple(values[name] for name in _primary_key(model))
    held: M | None = session.identity_map.get(identity_key(model, ident))
    return held


def read_row(session: Session, model: type[M], values: Mapping[str, Any]) -> M:
    """A row read by hand for reading only: the session's object when it holds one (its
    pending changes included, as a query would answer), else a copy outside the session
    (new_row), whose changes are never saved."""
    held = _held(session, model, values)
    return held if held is not None else new_row(model, values)


def loaded_row(session: Session, model: type[M], values: Mapping[str, Any]) -> M:
    """The session's object for a row read by hand, as an ORM query would answer it.

    The object the session already holds for that primary key when there is one (a query
    does not overwrite it either); otherwise one made from `values` (every column) and added
    as loaded, so later changes to it are flushed as usual.
    """
    held = _held(session, model, values)
    if held is not None:
        return held
    return add_as_loaded(session, new_row(model, values))


def fresh_values(obj: SQLModel) -> dict[str, Any] | None:
    """The dict holding every column of an object no row was loaded into or flushed from yet
    (new_row's, or a constructor's): read and written there, nothing to load or track. None
    for any other object, whose attributes go through the ORM."""
    return obj.__dict__ if obj._sa_instance_state.key is None else None  # type: ignore[attr-defined]


def set_values(obj: SQLModel, values: Mapping[str, Any]) -> None:
    """Set attributes: in the dict of a fresh object (fresh_values: what its INSERT, or
    add_as_loaded, takes as it is), through the ORM otherwise, so the change is saved."""
    fresh = fresh_values(obj)
    if fresh is not None:
        fresh.update(values)
        return
    for name, value in values.items():
        setattr(obj, name, value)


def add_as_loaded(session: Session, obj: M) -> M:
    """Join an object whose row is in the database (written or read by hand) to the session as a loaded one."""
    make_transient_to_detached(obj)
    session.add(obj)
    return obj

"""The one guarded decoder of stored JSON documents: every job and listing reads them through it.

A JSON column holds what the code wrote, unless someone wrote the row by hand or it was
damaged: SQLite's text may not be JSON at all, and on either engine a document meant to
be an object may be a list, a string or a number. Such a row must fail alone.

Reading happens in two steps. ``load`` parses SQLite's text (the SQLite engine's JSON
deserializer, store/engine.py, so ORM reads never raise on it; ``from_driver`` does the same
for the driver's own tuples, api/raw_rows.py): text that is not JSON becomes an
``Unreadable`` value instead of an exception. PostgreSQL only ever holds valid JSON, parsed
by its driver. Then ``decode`` checks each document against the kind its column holds
(``OBJECT``, ``OPTIONAL_OBJECT``, ``OBJECT_LIST``) and returns the readable values with the
names of those that are not: a listing shows the row with those fields empty and names them
under ``unreadable``; a job records a fault on the row (``check`` raises
``UnreadableDocument``) and goes on with the others; `fleet doctor --invariants` reports it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


class Unreadable:
    """A stored text that is not JSON (SQLite only): what ``load`` returns instead of raising."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<unreadable JSON text>"


UNREADABLE = Unreadable()


def load(text: str | bytes) -> Any:
    """SQLite's stored text parsed, or UNREADABLE when it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return UNREADABLE


def from_driver(value: Any, *, parsed: bool) -> Any:
    """A JSON column's value as the driver returned it: parsed already (psycopg), or SQLite's text."""
    if parsed or value is None or not isinstance(value, str | bytes):
        return value
    return load(value)


@dataclass(frozen=True)
class Kind:
    """What a column's document must be, and what a listing shows in place of an unreadable one."""

    name: str
    nullable: bool = False

    def accepts(self, value: Any) -> bool:
        if value is None:
            return self.nullable
        if self.name == "object":
            return isinstance(value, dict)
        return isinstance(value, list) and all(isinstance(item, dict) for item in value)

    def empty(self) -> Any:
        if self.nullable:
            return None
        return {} if self.name == "object" else []


OBJECT = Kind("object")
OPTIONAL_OBJECT = Kind("object", nullable=True)
OBJECT_LIST = Kind("list of objects")


EVENT_DOCUMENTS = {"data": OBJECT}
DELIVERY_DOCUMENTS = {"payload": OBJECT}
INSTANCE_DOCUMENTS = {"shape": OBJECT, "host_placement": OPTIONAL_OBJECT, "conditions": OBJECT_LIST}
"""What each JSON column read by the jobs and listings holds, by table."""


class UnreadableDocument(ValueError):
    """A row whose stored document is not what its column holds (a job's fault on that row)."""

    def __init__(self, fields: Iterable[str]) -> None:
        self.fields = tuple(fields)
        super().__init__(problem(self.fields))


def problem(fields: Iterable[str]) -> str:
    """The one sentence every reader gives for an unreadable document."""
    names = ", ".join(fields)
    return f"the stored {names} is not valid JSON of the kind its column holds (written by hand or damaged)"


def decode(
    values: Mapping[str, Any], kinds: Mapping[str, Kind]
) -> tuple[dict[str, Any], list[str]]:
    """The documents of ``values`` that ``kinds`` names, each checked against its kind (an
    unreadable one replaced by its kind's empty value), and the names of the unreadable ones."""
    decoded: dict[str, Any] = {}
    bad = []
    for name, kind in kinds.items():
        if name not in values:
            continue
        value = values[name]
        if kind.accepts(value):
            decoded[name] = value
        else:
            decoded[name] = kind.empty()
            bad.append(name)
    return decoded, bad


def check(value: Any, kind: Kind, name: str) -> Any:
    """One document as its kind, for a job: UnreadableDocument when it is not."""
    if not kind.accepts(value):
        raise UnreadableDocument([name])
    return value

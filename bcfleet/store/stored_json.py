"""The one guarded decoder of stored JSON documents: every job and listing reads them through it.

A JSON column holds what the code wrote, unless someone wrote the row by hand or it was
damaged: SQLite's text may not be JSON at all, and on either engine a document meant to
be an object may be a list, a string or a number. Such a row must fail alone.

Reading happens in two steps. ``load`` parses SQLite's text (the SQLite engine's JSON
deserializer, store/engine.py, so ORM reads never raise on it; ``from_driver`` does the same
for the driver's own tuples, api/raw_rows.py): text that is not JSON becomes an
``Unreadable`` value instead of an exception. PostgreSQL only ever holds valid JSON, parsed
by its driver. Then ``decode`` checks each document against the kind its column holds
(``OBJECT``, ``OPTIONAL_OBJECT``, ``OBJECT_LIST``, ``TEXT_LIST``) and returns the readable values with the
names of those that are not: a listing shows the row with those fields empty and names them
under ``unreadable``; a job records a fault on the row (``check`` raises
``UnreadableDocument``) and goes on with the others; `fleet doctor --invariants` reports it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any


class Unreadable:
    """A stored text that is not JSON (SQLite only): what ``load`` returns instead of raising."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<unreadable JSON text>"


UNREADABLE = Unreadable()


_DEFAULTS = json.JSONEncoder()  # json.dumps' own settings: ", " and ": ", ASCII, NaN allowed
_MAKE_ENCODER: Any = getattr(json.encoder, "c_make_encoder", None)  # what json.dumps uses
_ENCODE: Callable[[Any, int], Iterable[str]] | None = (
    None
    if _MAKE_ENCODER is None  # an interpreter without the C encoder
    else _MAKE_ENCODER(
        None,  # no table of the containers being written: a document is a tree
        _DEFAULTS.default,  # TypeError for a value JSON cannot hold, as json.dumps raises
        json.encoder.encode_basestring_ascii,
        None,
        _DEFAULTS.key_separator,
        _DEFAULTS.item_separator,
        _DEFAULTS.sort_keys,
        _DEFAULTS.skipkeys,
        _DEFAULTS.allow_nan,
    )
)


class Written(str):
    """A document's JSON text, written by dump already: bound to a JSON column as it is."""

    __slots__ = ()


def dump(value: Any) -> str:
    """A document as json.dumps writes it (every JSON column's serializer, store/engine.py);
    a Written text as it is.

    json.dumps makes its C encoder anew for every call; this one is made once. It keeps no
    table of the containers it is inside, which only catches a document that contains
    itself: such a value (never one the code makes) fails with RecursionError, not ValueError.
    """
    if type(value) is Written:
        return str.__str__(value)  # a plain str: the driver binds a subclass slowly
    if value is None:  # a JSON column's None: its text, as json.dumps writes it
        return "null"
    if _ENCODE is None:
        return json.dumps(value)
    return "".join(_ENCODE(value, 0))


def written(value: Any) -> Written:
    """The document's text as dump writes it, to bind in its place (Written)."""
    return Written(dump(value))


def load(text: str | bytes) -> Any:
    """SQLite's stored text parsed, or UNREADABLE when it is not JSON."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return UNREADABLE


def from_driver(value: Any, *, parsed: bool) -> Any:
    """A JSON column's value as the driver returned it: parsed already (psycopg), or SQLite's text."""
    if parsed or not isinstance(value, str | bytes):
        return value
    return load(value)


def _object(value: Any) -> bool:
    return isinstance(value, dict)


def _object_or_null(value: Any) -> bool:
    return value is None or isinstance(value, dict)


def _object_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, dict) for item in value)


def _text_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


@dataclass(frozen=True)
class Kind:
    """What a column's document must be, and what a listing shows in place of an unreadable one."""

    name: str
    accepts: Callable[[Any], bool]
    empty: Callable[[], Any]


OBJECT = Kind("object", _object, dict)
OPTIONAL_OBJECT = Kind("object or null", _object_or_null, lambda: None)
OBJECT_LIST = Kind("list of objects", _object_list, list)
TEXT_LIST = Kind("list of texts", _text_list, list)
OPTIONAL_OBJECT_LIST = Kind("list of objects or null", lambda v: v is None or _object_list(v), list)


EVENT_DOCUMENTS = {"data": OBJECT}
DELIVERY_DOCUMENTS = {"payload": OBJECT}
WEBHOOK_DOCUMENTS = {"event_types": TEXT_LIST}
INSTANCE_DOCUMENTS = {
    "shape": OBJECT,
    "host_placement": OPTIONAL_OBJECT,
    "conditions": OBJECT_LIST,
    "agent_conditions": OPTIONAL_OBJECT_LIST,
}
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


def unreadable(values: Mapping[str, Any], kinds: Mapping[str, Kind]) -> list[str]:
    """The names of the documents of ``values`` that are not of the kind ``kinds`` gives them."""
    return [
        name for name, kind in kinds.items() if name in values and not kind.accepts(values[name])
    ]


def decode(
    values: Mapping[str, Any], kinds: Mapping[str, Kind]
) -> tuple[dict[str, Any], list[str]]:
    """The documents of ``values`` that ``kinds`` names, each checked against its kind (an
    unreadable one replaced by its kind's empty value), and the names of the unreadable ones."""
    bad = unreadable(values, kinds)
    decoded = {
        name: kinds[name].empty() if name in bad else values[name]
        for name in kinds
        if name in values
    }
    return decoded, bad


def check(value: Any, kinds: Mapping[str, Kind], name: str) -> Any:
    """One document (``name`` of a table's ``kinds``), for a job: UnreadableDocument when it is
    not of its kind."""
    if not kinds[name].accepts(value):
        raise UnreadableDocument([name])
    return value

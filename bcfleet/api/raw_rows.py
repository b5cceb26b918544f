"""Rows as the driver returns them, for listings that turn thousands of rows into JSON.

SQLAlchemy wraps every fetched row in a Row object and runs its result processing:
every stored time parsed into a datetime (which the JSON then formats back into
text), every JSON document parsed. For 5,000 hosts or 50,000 instances that was
most of a listing's time, and the Row objects alive while a listing is built are
what the garbage collector then has to walk. `plain_rows` executes a statement
through SQLAlchemy (bind parameters processed as usual) and fetches the driver's
own tuples; `time_text` and `json_value` finish the job from whichever form the
driver gives: SQLite's text and integers, or psycopg's datetimes, booleans and
parsed JSON.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, overload

from sqlalchemy import Connection, Executable

from bcfleet.clock import format_time

_STORED = 26
"""len('2026-11-30 10:00:00.000000'): how SQLite stores a time (SQLAlchemy's DATETIME format)."""


def plain_rows(connection: Connection, query: Executable) -> list[tuple[Any, ...]]:
    """Every row of the query as the driver's tuple, without Row objects or result processing."""
    result = connection.execute(query)
    try:
        return list(result.cursor.fetchall())
    finally:
        result.close()


@overload
def time_text(value: str | datetime) -> str: ...
@overload
def time_text(value: None) -> None: ...
@overload
def time_text(value: str | datetime | None) -> str | None: ...
def time_text(value: str | datetime | None) -> str | None:
    """format_time of a stored UTC time: SQLite's text or a (naive UTC) datetime."""
    if value is None:
        return None
    if isinstance(value, str):
        if len(value) == _STORED and value[10] == " " and value[19] == ".":
            if value.endswith("000000"):
                return f"{value[:10]}T{value[11:19]}Z"
            return f"{value[:10]}T{value[11:23]}Z"  # milliseconds, cut as isoformat cuts them
        value = datetime.fromisoformat(value)
    return format_time(value)


def json_value(value: Any) -> Any:
    """A stored JSON document: SQLite's text parsed; a driver's parsed value as it is."""
    if isinstance(value, str | bytes):
        return json.loads(value)
    return value

"""The bounds of a cursor (an event's seq, a usage window's id): the API, HTTP and CLI check with these."""

from __future__ import annotations

from bcfleet.errors import InvalidInputError

# Cursors are 64-bit columns on both engines (BIGINT on PostgreSQL, INTEGER on SQLite).
CURSOR_MIN = 0
CURSOR_MAX = 2**63 - 1


def check_cursor(value: int | None, field: str = "after") -> int | None:
    """The cursor itself, or INVALID_INPUT naming the bounds when it lies outside them."""
    if value is None:
        return None
    if not CURSOR_MIN <= value <= CURSOR_MAX:
        raise InvalidInputError(
            f"{field} must be between {CURSOR_MIN} and {CURSOR_MAX}, got {value}",
            {"field": field, "minimum": CURSOR_MIN, "maximum": CURSOR_MAX},
        )
    return value

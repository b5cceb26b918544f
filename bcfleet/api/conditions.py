"""Conditions stored as JSON lists: whether one is set, and the cheap SQL cut that finds candidates."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import String, cast


def condition_is_true(conditions: Iterable[Mapping[str, Any]] | None, kind: str) -> bool:
    """Whether a condition of that type is set with status True (a missing status counts as True)."""
    return any(
        c.get("type") == kind and c.get("status", "True") == "True" for c in conditions or ()
    )


def mentions(column: Any, word: str) -> Any:
    """The JSON column's text contains the word: a cheap first cut, checked exactly in Python."""
    return cast(column, String).like(f"%{word}%")

"""Counts the statements a fleet's engine sends, by kind: each kind named by how its SQL begins.

A listener on the engine sends a placement's statements through psycopg's own pipeline rather
than on libpq: the same statements, in the same round trips.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from sqlalchemy import event

from bcfleet.fleet import Fleet

CLAIM = "WITH wanted (resource, n, rank)"  # instance_placer's guarded claim on PostgreSQL
SEARCH = "SELECT h.id,"  # a page of candidates.feasible_candidates


class Statements:
    """The statements sent while it listens, counted by the kinds given (name: SQL prefix)."""

    def __init__(self, fleet: Fleet, kinds: Mapping[str, str]) -> None:
        self.fleet = fleet
        self.prefixes = dict(kinds)
        self.kinds: Counter[str] = Counter()
        event.listen(fleet.engine, "before_cursor_execute", self._before)

    def _before(self, _conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        for kind, prefix in self.prefixes.items():
            if statement.startswith(prefix):
                self.kinds[kind] += 1
                return

    def remove(self) -> None:
        event.remove(self.fleet.engine, "before_cursor_execute", self._before)

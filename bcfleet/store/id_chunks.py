"""Ids bound in chunks: a statement that chooses rows by a list of ids never binds one parameter per row of the fleet.

PostgreSQL refuses more than 65,535 bound parameters in one statement (SQLite's limit is
32,766). A list of ids that grows with the fleet (hosts, nodes, instances) is bound at most
CHUNK at a time, one statement per chunk.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

CHUNK = 500
"""Ids per IN list: well under SQLite's and PostgreSQL's bound parameter limits."""


def id_chunks(ids: Sequence[T]) -> Iterator[list[T]]:
    """The ids, CHUNK at a time, in their order (none for no ids)."""
    size = CHUNK  # read at each call: a test may set a smaller one
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])

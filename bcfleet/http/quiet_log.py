"""Logging that cannot flood: one line per kind of failure per interval, counting the rest.

`fleet serve` uses it where a failure can repeat without end: the metrics tally loop
(app.py) and failed accept() calls when file descriptors run out (edge.py).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class RateLimited:
    """Says whether a line of a given kind may be logged now, and how many were held back."""

    def __init__(self, every: float = 60.0, clock: Callable[[], float] = time.monotonic) -> None:
        self.every = every
        self.clock = clock
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._held: dict[str, int] = {}

    def admit(self, kind: str) -> int | None:
        """None while `kind` was logged less than `every` seconds ago (counted as held back);
        else the number held back since its last line, and the line is due now."""
        now = self.clock()
        with self._lock:
            last = self._last.get(kind)
            if last is not None and now - last < self.every:
                self._held[kind] = self._held.get(kind, 0) + 1
                return None
            self._last[kind] = now
            return self._held.pop(kind, 0)


def held_back(count: int) -> str:
    """The suffix of a line that stands for others: '' when it stands for none."""
    return f" ({count} more like it since the last line)" if count else ""

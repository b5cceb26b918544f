"""Pause Python's cyclic garbage collector while the loader, planner and apply build large graphs.

A 10,000-object document makes hundreds of thousands of container objects that all stay
alive until the plan is done; every generation-2 collection walks all of them again, which
costs more than the work itself. Reference counting still frees what is dropped; the
collector runs again when the block ends.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block (nested blocks leave it to the outermost)."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()

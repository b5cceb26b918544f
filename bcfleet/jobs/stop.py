"""A process-wide stop request: set on SIGTERM/SIGINT, read by long jobs between transactions."""

from __future__ import annotations

import threading

_requested = threading.Event()


def request_stop() -> None:
    """Ask running jobs to finish their current transaction and return early."""
    _requested.set()


def stop_requested() -> bool:
    return _requested.is_set()


def clear_stop() -> None:
    """Forget a stop request (a new daemon or tick in the same process)."""
    _requested.clear()


def wait_for_stop(timeout: float | None = None) -> bool:
    """Block until a stop is requested (or the timeout passes); True when requested."""
    return _requested.wait(timeout)

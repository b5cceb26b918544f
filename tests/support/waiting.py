"""Waiting in tests for something to happen: a condition checked until it holds or a deadline passes."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

POLL_SECONDS = 0.01
"""How often a condition is checked again."""


def first_value(produce: Callable[[], T | None], *, timeout: float = 20.0) -> T | None:
    """The first value `produce` returns other than None (or falsy), or None once `timeout` passed."""
    pause = threading.Event()  # never set: its wait is the interval between two checks
    deadline = time.monotonic() + timeout
    while True:
        value = produce()
        if value:
            return value
        if time.monotonic() >= deadline:
            return None
        pause.wait(POLL_SECONDS)


def holds_within(condition: Callable[[], object], *, timeout: float = 20.0) -> bool:
    """Whether `condition` came to hold before `timeout` seconds passed."""
    return first_value(lambda: bool(condition()) or None, timeout=timeout) is not None


def wait_until(condition: Callable[[], object], *, timeout: float = 20.0, what: str = "") -> None:
    """Return once `condition` holds; fail the test when it did not within `timeout` seconds."""
    if not holds_within(condition, timeout=timeout):
        raise AssertionError(f"timed out after {timeout:g} s waiting for {what or 'the condition'}")


def wait_for(produce: Callable[[], T | None], *, timeout: float = 20.0, what: str = "") -> T:
    """The first value `produce` gives (not None, not falsy); fail the test if none came in time."""
    value = first_value(produce, timeout=timeout)
    if value is None or not value:
        raise AssertionError(f"timed out after {timeout:g} s waiting for {what or 'a value'}")
    return value

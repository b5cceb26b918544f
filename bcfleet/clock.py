"""Injectable time: every reader of "now" goes through a Clock, never the wall clock directly."""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Protocol, overload

from bcfleet.errors import InvalidInputError


class Clock(Protocol):
    """Something that tells the current time as an aware UTC datetime."""

    def now(self) -> datetime: ...

    def sleep(self, seconds: float) -> None: ...

    def sleep_unless(self, seconds: float, stop: threading.Event) -> bool:
        """Sleep, ending early once stop is set; whether it was (a watcher that went)."""
        ...


class SystemClock:
    """The real clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def sleep_unless(self, seconds: float, stop: threading.Event) -> bool:
        return stop.wait(seconds)


class FakeClock:
    """A clock that moves only when told to; sleep() advances it instead of waiting."""

    def __init__(self, start: datetime) -> None:
        self._now = as_utc(start)
        self._lock = threading.Lock()

    def now(self) -> datetime:
        with self._lock:
            return self._now

    def advance(self, seconds: float = 0.0, **kwargs: float) -> datetime:
        with self._lock:
            self._now = self._now + timedelta(seconds=seconds, **kwargs)
            return self._now

    def set(self, when: datetime) -> None:
        with self._lock:
            self._now = as_utc(when)

    def sleep(self, seconds: float) -> None:
        self.advance(seconds)

    def sleep_unless(self, seconds: float, stop: threading.Event) -> bool:
        if stop.is_set():
            return True
        self.sleep(seconds)
        return False


class OffsetClock:
    """The real clock shifted so that it started at a given time (BCFLEET_NOW)."""

    def __init__(self, start: datetime) -> None:
        self._offset = as_utc(start) - datetime.now(UTC)

    def now(self) -> datetime:
        return datetime.now(UTC) + self._offset

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)

    def sleep_unless(self, seconds: float, stop: threading.Event) -> bool:
        return stop.wait(seconds)


def as_utc(value: datetime) -> datetime:
    """An aware UTC datetime; naive values are taken to be UTC already."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


EARLIEST = datetime(2000, 1, 1, tzinfo=UTC)
LATEST = datetime(2200, 1, 1, tzinfo=UTC)
"""Times from outside (options, bodies, BCFLEET_NOW) lie in [EARLIEST, LATEST): far enough for any
lease or replay, and far enough from datetime's year 9999 that adding the longest duration
(100 years) to one can never overflow."""


def parse_time(text: str) -> datetime:
    """Parse an RFC 3339 time ('2026-11-30T10:00:00Z') within [EARLIEST, LATEST); INVALID_INPUT
    otherwise."""
    candidate = text.strip()
    if candidate.endswith(("Z", "z")):
        candidate = candidate[:-1] + "+00:00"
    try:
        parsed = datetime.fromisoformat(candidate)
    except ValueError as exc:
        raise InvalidInputError(
            f"not an RFC 3339 time: {text!r}", {"value": text, "example": "2026-11-30T10:00:00Z"}
        ) from exc
    try:
        parsed = as_utc(parsed)
    except OverflowError:
        parsed = LATEST
    if not EARLIEST <= parsed < LATEST:
        raise InvalidInputError(
            f"{text!r} is out of range: times lie from {format_time(EARLIEST)} up to "
            f"{format_time(LATEST)}",
            {"value": text, "earliest": format_time(EARLIEST), "latest": format_time(LATEST)},
        )
    return parsed


@overload
def format_time(value: datetime) -> str: ...
@overload
def format_time(value: None) -> None: ...
@overload
def format_time(value: datetime | None) -> str | None: ...
def format_time(value: datetime | None) -> str | None:
    """RFC 3339 UTC with a Z, seconds precision unless there are fractions."""
    if value is None:
        return None
    return _formatted(value)


@lru_cache(maxsize=256)  # a batch's rows and their answer share one time: formatted once
def _formatted(value: datetime) -> str:
    utc = as_utc(value)
    text = utc.isoformat(timespec="milliseconds" if utc.microsecond else "seconds")
    return text.replace("+00:00", "Z")


def clock_from_env(environ: dict[str, str] | None = None) -> Clock:
    """BCFLEET_NOW makes the process take that time as now (for replays and scripted tests)."""
    env = os.environ if environ is None else environ
    pinned = env.get("BCFLEET_NOW")
    if pinned:
        try:
            return FakeClock(parse_time(pinned))
        except InvalidInputError as error:
            raise InvalidInputError(f"BCFLEET_NOW: {error.message}", error.details) from None
    return SystemClock()

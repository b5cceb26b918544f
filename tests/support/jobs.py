"""Job functions for runner and scheduler tests, loaded by dotted path like the real ones."""

from __future__ import annotations

import threading
import time
from datetime import datetime

from bcfleet.fleet import Fleet
from bcfleet.jobs.registry import JobSpec

started = threading.Event()
release = threading.Event()
calls: list[datetime] = []


def reset() -> None:
    started.clear()
    release.clear()
    calls.clear()


def quick_job(fleet: Fleet, now: datetime) -> dict[str, int]:
    calls.append(now)
    return {"calls": len(calls)}


def held_job(fleet: Fleet, now: datetime) -> dict[str, int]:
    """Runs until the test sets `release` (at most 10 s)."""
    started.set()
    release.wait(10)
    calls.append(now)
    return {"held": 1}


def slow_job(fleet: Fleet, now: datetime) -> dict[str, int]:
    started.set()
    time.sleep(0.6)
    calls.append(now)
    return {"slept": 1}


def failing_job(fleet: Fleet, now: datetime) -> dict[str, int]:
    raise RuntimeError("the provider said no")


def spec(function: str, name: str | None = None, interval: float = 30.0) -> JobSpec:
    """A JobSpec for one of the functions above."""
    return JobSpec(name or f"test.{function}", f"tests.support.jobs:{function}", interval, function)

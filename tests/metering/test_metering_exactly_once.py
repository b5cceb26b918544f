"""Every (subject, meter, window) exactly once: ticks killed at random points, overlapping ticks, downtime."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from sqlalchemy import event

from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.jobs.runner import run_job
from bcfleet.jobs.vps_usage import SETTLE, run_vps_usage, watermark
from bcfleet.reconcile import lock
from tests.support import metering as mb
from tests.support.builders import OP
from tests.support.fleet import T0, open_fleet
from tests.support.waiting import wait_until

Row = tuple[str, str, datetime, Decimal]


@dataclass
class Scenario:
    billed: list[mb.Placed]
    dead: list[mb.Placed]

    def expected(self, until: datetime) -> list[Row]:
        return mb.expected_rows(self.billed, until)

    def expected_dead(self, until: datetime) -> list[Row]:
        return mb.expected_rows(self.dead, until)


def build(fleet: Fleet, *, extra_instances: int = 0) -> Scenario:
    """Instances running, deleted, with GPUs and spare; reservations regular, spot (no meter), requeued."""
    mb.tenant(fleet, "acme")
    pool = mb.pool(fleet, gpu_model="L40S")
    node = mb.node(fleet, pool)
    mb.standard_meters(fleet)  # no spot meter: spot windows are dead-lettered
    t = T0
    billed = [
        mb.instance(fleet, pool, node, start=t + timedelta(seconds=67)),
        mb.instance(fleet, pool, node, start=t + timedelta(minutes=2.5), end=t + timedelta(minutes=71)),
        mb.instance(fleet, pool, node, start=t + timedelta(seconds=17), gpus=2, vcpu=16, memory_gib=64),
        mb.instance(fleet, pool, node, start=t, purpose="spare"),
        mb.instance(fleet, pool, node, start=t + timedelta(hours=2), end=t + timedelta(hours=2, minutes=3)),
        mb.reservation(
            fleet, pool, gpus=2, starts_at=t + timedelta(minutes=10),
            ends_at=t + timedelta(hours=2, minutes=10), activated_at=t + timedelta(minutes=10),
        ),
    ]  # fmt: skip
    for n in range(extra_instances):
        start = t + timedelta(seconds=n * 37 % 3600, microseconds=n)
        billed.append(mb.instance(fleet, pool, node, start=start, vcpu=1 + n % 8))
    dead = [
        mb.reservation(
            fleet, pool, spot=True, gpus=1, starts_at=t + timedelta(minutes=5),
            ends_at=t + timedelta(hours=5), activated_at=t + timedelta(minutes=5, seconds=3),
        )
    ]  # fmt: skip
    mb.reservation(  # a requeued spot victim: never activated, bills nothing
        fleet, pool, spot=True, gpus=4, starts_at=t + timedelta(minutes=30),
        ends_at=t + timedelta(hours=1), activated_at=None, state="pending",
    )  # fmt: skip
    return Scenario(billed, dead)


def dead_rows(fleet: Fleet) -> list[Row]:
    return sorted((d.subject_id, d.meter, d.window_start, d.quantity) for d in mb.dead_rows(fleet))


def batch_committed(
    fleet: Fleet, start: datetime | None, tick: subprocess.Popen[bytes] | subprocess.Popen[str]
) -> Callable[[], bool]:
    """Whether the tick moved the watermark past `start` (committed a batch) or has ended."""
    return lambda: watermark(fleet) not in (None, start) or tick.poll() is not None


def assert_exact_prefix(fleet: Fleet, scenario: Scenario) -> None:
    """Whatever happened, the windows before the watermark are all there, once; none after it."""
    mark = watermark(fleet)
    rows = mb.usage_rows(fleet)
    assert len(rows) == len({(r[0], r[1], r[2]) for r in rows})
    if mark is None:
        assert rows == []
        return
    assert rows == scenario.expected(mark)
    assert dead_rows(fleet) == scenario.expected_dead(mark)


class Crash(Exception):
    """Stands for the process dying: the open transaction is lost."""


@contextmanager
def crash_at_statement(fleet: Fleet, number: int) -> Iterator[None]:
    seen = {"count": 0}

    def before(*_args: Any) -> None:
        seen["count"] += 1
        if seen["count"] == number:
            raise Crash(f"killed at statement {number}")

    event.listen(fleet.engine, "before_cursor_execute", before)
    try:
        yield
    finally:
        event.remove(fleet.engine, "before_cursor_execute", before)


UNTIL = T0 + timedelta(hours=3)
NOW = UNTIL + SETTLE


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_tick_killed_at_random_points_and_run_again_writes_each_window_once(
    any_fleet: Fleet, seed: int
) -> None:
    scenario = build(any_fleet)
    rng = random.Random(seed)
    crashes = 0
    for _ in range(6):
        with crash_at_statement(any_fleet, rng.randint(1, 14)):
            try:
                run_vps_usage(any_fleet, NOW)
            except Exception as error:  # noqa: BLE001 - SQLAlchemy may wrap the crash
                assert "killed at statement" in repr(error) or isinstance(error, Crash)
                crashes += 1
        assert_exact_prefix(any_fleet, scenario)
    assert crashes >= 2
    run_vps_usage(any_fleet, NOW)
    assert watermark(any_fleet) == UNTIL
    assert mb.usage_rows(any_fleet) == scenario.expected(UNTIL)
    assert dead_rows(any_fleet) == scenario.expected_dead(UNTIL)


def test_four_ticks_at_once_in_threads_write_each_window_once(
    db_url: str, clock: FakeClock
) -> None:
    fleets = [open_fleet(db_url, clock) for _ in range(4)]
    scenario = build(fleets[0])
    barrier = threading.Barrier(len(fleets))
    errors: list[BaseException] = []

    def tick(fleet: Fleet) -> None:
        barrier.wait()
        try:
            run_vps_usage(fleet, NOW)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    threads = [threading.Thread(target=tick, args=(f,)) for f in fleets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert mb.usage_rows(fleets[0]) == scenario.expected(UNTIL)
    assert dead_rows(fleets[0]) == scenario.expected_dead(UNTIL)
    for fleet in fleets:
        fleet.close()


def _worker(db_url: str, now: datetime, start_at: float | None = None) -> subprocess.Popen[str]:
    args = [sys.executable, "-m", "tests.support.metering_worker", db_url, now.isoformat()]
    if start_at is not None:
        args.append(str(start_at))
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


@pytest.mark.slow
def test_two_processes_ticking_at_once_write_each_window_once(
    db_url: str, any_fleet: Fleet
) -> None:
    scenario = build(any_fleet, extra_instances=100)
    start_at = time.time() + 4.0  # both import and connect first, then start together
    workers = [_worker(db_url, NOW, start_at) for _ in range(2)]
    outputs = [w.communicate(timeout=120) for w in workers]
    assert [w.returncode for w in workers] == [0, 0], outputs
    written = sum(json.loads(out)["written"] for out, _ in outputs)
    expected = scenario.expected(UNTIL)
    assert written == len(expected)  # between them, every window once
    assert mb.usage_rows(any_fleet) == expected


@pytest.mark.slow
def test_a_tick_killed_with_sigkill_mid_catch_up_then_another_runner_finishes(
    db_url: str, any_fleet: Fleet
) -> None:
    scenario = build(any_fleet, extra_instances=100)
    until = T0 + timedelta(hours=8)
    command = [
        sys.executable,
        "-m",
        "bcfleet",
        "jobs",
        "tick",
        "--job",
        "vps.usage",
        "--db",
        db_url,
    ]
    rng = random.Random(os.getpid())
    for attempt in range(2):
        now = until + SETTLE + timedelta(seconds=61 * attempt)
        env = {**os.environ, "BCFLEET_NOW": now.isoformat(), "BCFLEET_LOCK_TTL_SECONDS": "60"}
        start = watermark(any_fleet)
        tick = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_until(batch_committed(any_fleet, start, tick), timeout=60, what="a committed batch")
        time.sleep(rng.uniform(0, 0.2))  # the kill lands at a random point of the catch-up
        tick.send_signal(
            signal.SIGKILL
        )  # mid-catch-up: committed batches stay, the open one is lost
        tick.wait(timeout=30)
        # killed mid-catch-up, or (on a quick run) already done: either way nothing is doubled
        assert tick.returncode in (0, -signal.SIGKILL), tick.stderr.read() if tick.stderr else ""
        assert_exact_prefix(any_fleet, scenario)
        # the killed holder's lease runs 60 s of real time (BCFLEET_NOW does not move it):
        # the operator removes it, as `fleet force-unlock LOCK` does
        killed = lock.current(any_fleet, "job:vps.usage")
        if killed is not None:
            lock.force_unlock(any_fleet, OP, killed.id)
    # Usually the kill lands mid-catch-up; on a quick run the tick may have finished first.
    # Either way the other runner must leave exactly one row per window.
    other = open_fleet(
        db_url, FakeClock(until + SETTLE + timedelta(seconds=122)), lock_ttl_seconds=60
    )
    result = run_job(other, "vps.usage")
    other.close()
    assert result.outcome == "ok", result.error
    assert watermark(any_fleet) == until
    assert mb.usage_rows(any_fleet) == scenario.expected(until)
    assert dead_rows(any_fleet) == scenario.expected_dead(until)


def test_a_scheduler_that_was_down_catches_up_every_missed_window(
    fleet: Fleet, clock: FakeClock
) -> None:
    scenario = build(fleet)
    first = run_vps_usage(fleet, T0 + timedelta(minutes=10) + SETTLE)
    assert first["windows"] == 2
    down_until = T0 + timedelta(days=1, minutes=10)  # a day without ticks
    caught_up = run_vps_usage(fleet, down_until + SETTLE)
    assert caught_up["windows"] == 288
    assert caught_up["batches"] == 24
    assert mb.usage_rows(fleet) == scenario.expected(down_until)
    assert dead_rows(fleet) == scenario.expected_dead(down_until)
    assert run_vps_usage(fleet, down_until + SETTLE)["windows"] == 0


@pytest.mark.slow
def test_sigterm_stops_a_catch_up_tick_at_a_batch_boundary_and_records_the_run(
    sqlite_url: str, fleet: Fleet
) -> None:
    scenario = build(fleet, extra_instances=100)
    until = T0 + timedelta(hours=8)
    env = {**os.environ, "BCFLEET_NOW": (until + SETTLE).isoformat()}
    command = [
        sys.executable, "-m", "bcfleet", "jobs", "tick", "--job", "vps.usage", "--json",
        "--db", sqlite_url,
    ]  # fmt: skip
    tick = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    wait_until(batch_committed(fleet, None, tick), timeout=60, what="a committed batch")
    tick.send_signal(signal.SIGTERM)
    out, err = tick.communicate(timeout=60)
    assert tick.returncode == 0, err
    (run,) = json.loads(out)["runs"]
    assert run["outcome"] == "ok"
    assert 0 < run["counts"]["windows"] < 96  # stopped early, between two batches
    assert watermark(fleet) == T0 + timedelta(minutes=5 * run["counts"]["windows"])
    assert_exact_prefix(fleet, scenario)

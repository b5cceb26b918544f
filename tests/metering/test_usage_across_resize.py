"""Usage across a resize (document 000): a window is split where the shape changed, and a
stopped instance is metered while it keeps its allocation.

The table states document 000's numbers in the domain's arithmetic; the end-to-end tests
create, stop and resize instances through the API on a fake clock and run vps.usage on SQLite
and PostgreSQL.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest

from bcfleet.clock import FakeClock
from bcfleet.domain.usage import (
    METER_MEMORY,
    METER_VCPU,
    MeterRate,
    ShapePeriod,
    period_usage_records,
)
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.store.models.jobs import JobState
from tests.support.builders import OP, flavor
from tests.support.capacity import create, pool_with_hosts
from tests.support.metering import meter_until, standard_meters, usage_rows


def at(clock: str) -> datetime:
    hour, minute, second = (int(part) for part in clock.split(":"))
    return datetime(2026, 11, 30, hour, minute, second, tzinfo=UTC)


def vcpu(count: int, gpus: int = 0) -> tuple[MeterRate, ...]:
    rates = [MeterRate(METER_VCPU, Fraction(count))]
    if gpus:
        rates.append(MeterRate("gpu.l40s.hours", Fraction(gpus)))
    return tuple(rates)


def billed(periods: list[tuple[str, tuple[MeterRate, ...]]], end: str | None, until: str) -> Any:
    shaped = tuple(ShapePeriod(at(start), rates) for start, rates in periods)
    records = period_usage_records("ins", shaped, at(end) if end else None, until=at(until))
    return [(r.meter, r.window_start.strftime("%H:%M"), str(r.quantity)) for r in records]


TABLE = [
    pytest.param(
        [("10:00:00", vcpu(2)), ("10:02:30", vcpu(8))],
        None,
        "10:05:00",
        # 2 × 2.5 min + 8 × 2.5 min = 25 vCPU-minutes, not 8 × 5 = 40
        [(METER_VCPU, "10:00", "0.416667")],
        id="2-vcpu-resized-to-8-mid-window-bills-0.4167",
    ),
    pytest.param(
        [("10:00:00", vcpu(2)), ("10:05:00", vcpu(8))],
        None,
        "10:10:00",
        # counted from 10:00: 1/6 h, then 5/6 h in all, each rounded once
        [(METER_VCPU, "10:00", "0.166667"), (METER_VCPU, "10:05", "0.666666")],
        id="resize-at-a-window-boundary-splits-nothing",
    ),
    pytest.param(
        [("10:00:00", vcpu(2)), ("10:01:00", vcpu(4)), ("10:03:00", vcpu(8))],
        None,
        "10:05:00",
        # 2 × 1 + 4 × 2 + 8 × 2 = 26 vCPU-minutes
        [(METER_VCPU, "10:00", "0.433333")],
        id="two-resizes-in-one-window",
    ),
    pytest.param(
        [("10:00:00", vcpu(2, gpus=1)), ("10:02:30", vcpu(8, gpus=1))],
        None,
        "10:05:00",
        [(METER_VCPU, "10:00", "0.416667"), ("gpu.l40s.hours", "10:00", "0.083333")],
        id="gpu-count-unchanged-bills-the-whole-window",
    ),
    pytest.param(
        [("10:00:00", vcpu(2)), ("10:02:30", vcpu(8))],
        "10:07:30",
        "10:15:00",
        # 25 vCPU-minutes, then 8 × 2.5 = 20 until the release
        [(METER_VCPU, "10:00", "0.416667"), (METER_VCPU, "10:05", "0.333333")],
        id="released-after-the-resize",
    ),
    pytest.param(
        [("10:00:00", vcpu(2)), ("10:02:30", vcpu(8))],
        None,
        "10:04:59",
        [],
        id="the-split-window-waits-until-it-closes",
    ),
]


@pytest.mark.parametrize(("periods", "end", "until", "expected"), TABLE)
def test_a_window_is_split_where_the_shape_changed(
    periods: list[tuple[str, tuple[MeterRate, ...]]],
    end: str | None,
    until: str,
    expected: list[tuple[str, str, str]],
) -> None:
    assert billed(periods, end, until) == expected


def test_periods_out_of_order_are_refused() -> None:
    with pytest.raises(InvalidInputError):
        billed([("10:02:30", vcpu(8)), ("10:00:00", vcpu(2))], None, "10:05:00")


# ---------------------------------------------------------------------------
# End to end: the API's resize, the vps.usage job, both engines


@pytest.fixture
def metered(any_fleet: Fleet) -> dict[str, Any]:
    pool = pool_with_hosts(any_fleet, cpus=18, memory_gib=72, disk_gib=600)
    flavor(any_fleet, pool["id"], "two", vcpu=2, memory_gib=4, disk_gib=40)
    flavor(any_fleet, pool["id"], "eight", vcpu=8, memory_gib=16, disk_gib=40)
    flavor(any_fleet, pool["id"], "four", vcpu=4, memory_gib=8, disk_gib=40)
    standard_meters(any_fleet)
    return pool


def _resized_at_10_02_30(fleet: Fleet, clock: FakeClock, pool: dict[str, Any]) -> str:
    clock.set(at("10:00:00"))
    made = create(fleet, pool, "two")
    fleet.api.instances.stop(OP, made["id"])
    clock.set(at("10:02:30"))
    fleet.api.instances.resize(OP, made["id"], flavor="eight")
    return str(made["id"])


def _window(fleet: Fleet, subject: str, meter: str, start: str) -> Decimal:
    found = [q for s, m, w, q in usage_rows(fleet, subject) if m == meter and w == at(start)]
    assert len(found) == 1, found
    return found[0]


def test_resize_mid_window_bills_each_shape_for_its_part(
    any_fleet: Fleet, clock: FakeClock, metered: dict[str, Any]
) -> None:
    subject = _resized_at_10_02_30(any_fleet, clock, metered)
    clock.set(at("10:10:40"))
    meter_until(any_fleet, at("10:10:00"))
    assert _window(any_fleet, subject, METER_VCPU, "10:00:00") == Decimal("0.416667")
    # 4 GiB × 2.5 min + 16 GiB × 2.5 min = 50 GiB-minutes
    assert _window(any_fleet, subject, METER_MEMORY, "10:00:00") == Decimal("0.833333")
    # counted from 10:00: 65 vCPU-minutes by 10:10, each end rounded once
    assert _window(any_fleet, subject, METER_VCPU, "10:05:00") == Decimal("0.666666")


def test_two_resizes_in_one_window_end_to_end(
    any_fleet: Fleet, clock: FakeClock, metered: dict[str, Any]
) -> None:
    subject = _resized_at_10_02_30(any_fleet, clock, metered)
    clock.set(at("10:04:00"))
    any_fleet.api.instances.resize(OP, subject, flavor="four")
    clock.set(at("10:05:40"))
    meter_until(any_fleet, at("10:05:00"))
    # 2 × 2.5 + 8 × 1.5 + 4 × 1 = 21 vCPU-minutes
    assert _window(any_fleet, subject, METER_VCPU, "10:00:00") == Decimal("0.35")


def test_a_window_is_written_once_when_the_job_runs_again_after_a_resize(
    any_fleet: Fleet, clock: FakeClock, metered: dict[str, Any]
) -> None:
    subject = _resized_at_10_02_30(any_fleet, clock, metered)
    clock.set(at("10:05:40"))
    first = meter_until(any_fleet, at("10:05:00"))
    rows = usage_rows(any_fleet, subject)
    # a rerun (after a kill, or an overlapping tick) starting from an old watermark
    with any_fleet.write(bump_revision=False) as session:
        state = session.get(JobState, "vps.usage")
        assert state is not None
        state.watermark = at("10:00:00")
        session.add(state)
    again = meter_until(any_fleet, at("10:05:00"))
    assert first["written"] == len(rows) > 0 and again["written"] == 0
    assert usage_rows(any_fleet, subject) == rows


def test_a_stopped_instance_is_metered_while_it_keeps_its_allocation(
    any_fleet: Fleet, clock: FakeClock, metered: dict[str, Any]
) -> None:
    clock.set(at("10:00:00"))
    made = create(any_fleet, metered, "two")
    clock.set(at("10:01:00"))
    any_fleet.api.instances.stop(OP, made["id"])
    clock.set(at("10:03:00"))
    any_fleet.api.instances.start(OP, made["id"])
    clock.set(at("10:05:40"))
    meter_until(any_fleet, at("10:05:00"))
    assert _window(any_fleet, made["id"], METER_VCPU, "10:00:00") == Decimal("0.166667")


def test_a_resize_after_the_window_was_written_leaves_it_as_written(
    any_fleet: Fleet, clock: FakeClock, metered: dict[str, Any]
) -> None:
    clock.set(at("10:00:00"))
    made = create(any_fleet, metered, "two")
    any_fleet.api.instances.stop(OP, made["id"])
    clock.set(at("10:05:40"))
    meter_until(any_fleet, at("10:05:00"))
    clock.set(at("10:07:30"))
    any_fleet.api.instances.resize(OP, made["id"], flavor="eight")
    clock.set(at("10:10:40"))
    meter_until(any_fleet, at("10:10:00"))
    assert _window(any_fleet, made["id"], METER_VCPU, "10:00:00") == Decimal("0.166667")
    # counted from 10:00: 2 × 7.5 + 8 × 2.5 = 35 vCPU-minutes by 10:10, minus 10 before
    assert _window(any_fleet, made["id"], METER_VCPU, "10:05:00") == Decimal("0.416666")

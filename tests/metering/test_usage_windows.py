"""Usage windows of documents 000, 003 and 004: aligned, closed-only, metered, exactly summed."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from bcfleet.domain.usage import (
    WINDOW,
    MeterRate,
    closed_pieces,
    closed_windows,
    meters_for_instance,
    meters_for_reservation,
    meters_for_spare,
    round_quantity,
    usage_records,
    window_pieces,
    window_start,
)
from bcfleet.errors import InvalidInputError


def at(hh: int, mm: int, ss: int = 0, us: int = 0) -> datetime:
    return datetime(2025, 6, 2, hh, mm, ss, us, tzinfo=UTC)


@dataclass(frozen=True)
class Shape:
    vcpu: int | float
    memory_gib: int | float
    gpus: int = 0


# ---------------------------------------------------------------------------
# Windows


@pytest.mark.parametrize(
    ("moment", "start"),
    [
        pytest.param(at(10, 0), at(10, 0), id="on-a-boundary"),
        pytest.param(at(10, 2, 30), at(10, 0), id="inside"),
        pytest.param(at(10, 4, 59, 999_999), at(10, 0), id="last-microsecond"),
        pytest.param(at(10, 5), at(10, 5), id="next-boundary"),
        pytest.param(
            datetime(2025, 6, 2, 12, 7, tzinfo=timezone(timedelta(hours=2))),
            at(10, 5),
            id="other-offset-converted-to-utc",
        ),
    ],
)
def test_window_start_floors_to_5_minutes_utc(moment: datetime, start: datetime) -> None:
    assert window_start(moment) == start
    assert window_start(moment).tzinfo == UTC


def test_naive_times_are_refused() -> None:
    with pytest.raises(InvalidInputError):
        window_start(datetime(2025, 6, 2, 10, 0))


def test_issue_case_placed_10_02_30_deleted_10_11_bills_2_5_plus_5_plus_1_minutes() -> None:
    pieces = window_pieces(at(10, 2, 30), at(10, 11))
    assert [p.window_start for p in pieces] == [at(10, 0), at(10, 5), at(10, 10)]
    assert [p.covered for p in pieces] == [
        timedelta(minutes=2.5),
        timedelta(minutes=5),
        timedelta(minutes=1),
    ]
    assert [p.fraction for p in pieces] == [Fraction(1, 2), Fraction(1), Fraction(1, 5)]


def test_issue_case_quantities_for_4_vcpu() -> None:
    rates = (MeterRate("vps.vcpu.hours", Fraction(4)),)
    records = usage_records("ins_1", rates, at(10, 2, 30), at(10, 11), until=at(10, 15))
    exact = [Fraction(4) * Fraction(m, 60) for m in (Fraction(5, 2), 5, 1)]
    assert [r.quantity for r in records] == [
        Decimal("0.166667"),  # 4 × 2.5/60 = 1/6
        Decimal("0.333333"),  # 4 × 5/60 = 1/3
        Decimal("0.066667"),  # 4 × 1/60 = 1/15
    ]
    assert sum(r.quantity for r in records) == round_quantity(sum(exact, Fraction(0)))


def test_an_empty_interval_has_no_windows() -> None:
    assert window_pieces(at(10, 1), at(10, 1)) == ()


def test_end_before_start_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        window_pieces(at(10, 5), at(10, 1))
    with pytest.raises(InvalidInputError):
        closed_pieces(at(10, 5), at(10, 1), until=at(11, 0))


# ---------------------------------------------------------------------------
# Closed windows only


def test_windows_not_yet_closed_are_not_emitted() -> None:
    pieces = closed_pieces(at(10, 2, 30), at(10, 11), until=at(10, 12))
    assert [p.window_start for p in pieces] == [at(10, 0), at(10, 5)]


def test_a_window_closes_exactly_at_its_end() -> None:
    pieces = closed_pieces(at(10, 2, 30), None, until=at(10, 10))
    assert [p.window_start for p in pieces] == [at(10, 0), at(10, 5)]
    assert pieces[-1].end == at(10, 10)


def test_still_running_is_metered_up_to_the_last_closed_window() -> None:
    pieces = closed_pieces(at(10, 2, 30), None, until=at(10, 13))
    assert [p.covered for p in pieces] == [timedelta(minutes=2.5), timedelta(minutes=5)]


def test_since_skips_windows_already_written() -> None:
    pieces = closed_pieces(at(10, 2, 30), at(10, 11), until=at(10, 20), since=at(10, 5))
    assert [p.window_start for p in pieces] == [at(10, 5), at(10, 10)]


def test_a_window_value_does_not_depend_on_when_it_is_computed() -> None:
    rates = (MeterRate("vps.vcpu.hours", Fraction(3)),)
    early = usage_records("ins_1", rates, at(10, 1, 7), None, until=at(10, 16))
    late = usage_records("ins_1", rates, at(10, 1, 7), at(10, 40), until=at(11, 0), since=at(10, 5))
    assert early[1:] == late[:2]


@pytest.mark.parametrize(
    ("watermark", "now", "starts"),
    [
        pytest.param(at(10, 0), at(10, 4), [], id="nothing-closed-yet"),
        pytest.param(at(10, 0), at(10, 5), [at(10, 0)], id="one-just-closed"),
        pytest.param(
            at(10, 0), at(10, 17), [at(10, 0), at(10, 5), at(10, 10)], id="catch-up-after-downtime"
        ),
        pytest.param(at(10, 20), at(10, 17), [], id="watermark-ahead-of-now"),
    ],
)
def test_closed_windows_between_watermark_and_now(
    watermark: datetime, now: datetime, starts: list[datetime]
) -> None:
    assert list(closed_windows(watermark, now)) == starts


def test_a_day_of_missed_windows_is_288_and_can_be_batched() -> None:
    day = closed_windows(at(0, 0), at(0, 0) + timedelta(days=1))
    assert len(day) == 288
    assert closed_windows(at(0, 0), at(0, 0) + timedelta(days=1), limit=100) == day[:100]


# ---------------------------------------------------------------------------
# Meters


def test_hosted_instance_meters_vcpu_and_memory() -> None:
    assert meters_for_instance(Shape(2, 4), None) == (
        MeterRate("vps.vcpu.hours", Fraction(2)),
        MeterRate("vps.memory.gib.hours", Fraction(4)),
    )


def test_gpu_flavor_adds_gpu_model_hours_lower_cased() -> None:
    rates = meters_for_instance(Shape(8, 32, gpus=1), "L40S")
    assert [r.meter for r in rates] == ["vps.vcpu.hours", "vps.memory.gib.hours", "gpu.l40s.hours"]
    assert rates[2].per_hour == 1


def test_fractional_memory_is_exact() -> None:
    assert meters_for_instance(Shape(1, 1.5), None)[1].per_hour == Fraction(3, 2)


def test_gpu_usage_without_a_model_is_refused() -> None:
    with pytest.raises(InvalidInputError):
        meters_for_instance(Shape(8, 32, gpus=1), None)


@pytest.mark.parametrize(
    ("spot", "meter"),
    [
        pytest.param(False, "gpu.h100.hours", id="regular"),
        pytest.param(True, "gpu.h100.spot.hours", id="spot-bills-the-spot-meter"),
    ],
)
def test_reservation_meters(spot: bool, meter: str) -> None:
    assert meters_for_reservation(4, "H100", spot) == (MeterRate(meter, Fraction(4)),)


def test_spares_bill_one_credit_per_instance_hour() -> None:
    (rate,) = meters_for_spare()
    assert (rate.meter, rate.per_hour) == ("credits", Fraction(1))
    records = usage_records("ins_spare", meters_for_spare(), at(10, 0), at(11, 0), until=at(12, 0))
    assert len(records) == 12
    assert sum(r.quantity for r in records) == Decimal("1.000000")


def test_an_hour_of_one_vcpu_is_exactly_one_vcpu_hour_despite_rounding() -> None:
    rates = (MeterRate("vps.vcpu.hours", Fraction(1)),)
    records = usage_records("ins_1", rates, at(10, 0), at(11, 0), until=at(11, 0))
    assert {r.quantity for r in records} == {Decimal("0.083333"), Decimal("0.083334")}
    assert sum(r.quantity for r in records) == Decimal("1.000000")


def test_records_are_keyed_by_subject_meter_and_window() -> None:
    records = usage_records(
        "ins_1", meters_for_instance(Shape(2, 4), None), at(10, 2), at(10, 9), until=at(10, 10)
    )
    keys = [r.key for r in records]
    assert len(keys) == len(set(keys)) == 4
    assert keys[0] == ("ins_1", "vps.vcpu.hours", at(10, 0))


def test_round_quantity_is_six_places_half_even() -> None:
    assert round_quantity(Fraction(1, 3)) == Decimal("0.333333")
    assert round_quantity(Fraction(5, 10**7)) == Decimal("0.000000")
    assert round_quantity(Fraction(15, 10**7)) == Decimal("0.000002")
    assert str(round_quantity(Fraction(1))) == "1.000000"


# ---------------------------------------------------------------------------
# Properties

moments = st.datetimes(
    min_value=datetime(2024, 1, 1), max_value=datetime(2026, 1, 1), timezones=st.just(UTC)
)
spans = st.timedeltas(min_value=timedelta(0), max_value=timedelta(hours=6))


@given(start=moments, span=spans)
def test_windows_tile_the_interval_exactly(start: datetime, span: timedelta) -> None:
    end = start + span
    pieces = window_pieces(start, end)
    assert sum((p.covered for p in pieces), timedelta(0)) == end - start
    if pieces:
        assert pieces[0].start == start and pieces[-1].end == end
    for left, right in zip(pieces, pieces[1:], strict=False):
        assert left.end == right.start


@given(start=moments, span=spans)
@example(start=at(10, 1), span=timedelta(0))
@example(start=at(10, 4, 59, 999_999), span=timedelta(microseconds=2))
def test_windows_are_aligned_unique_and_inside_their_window(
    start: datetime, span: timedelta
) -> None:
    pieces = window_pieces(start, start + span)
    starts = [p.window_start for p in pieces]
    assert starts == sorted(set(starts))
    for p in pieces:
        assert p.window_start.minute % 5 == 0
        assert (p.window_start.second, p.window_start.microsecond) == (0, 0)
        assert p.window_start <= p.start < p.end <= p.window_start + WINDOW
        assert 0 < p.fraction <= 1


@given(
    start=moments,
    span=spans,
    lag=st.timedeltas(min_value=timedelta(0), max_value=timedelta(hours=8)),
)
def test_closed_pieces_cover_up_to_the_last_closed_window(
    start: datetime, span: timedelta, lag: timedelta
) -> None:
    end = start + span
    until = start + lag
    pieces = closed_pieces(start, end, until=until)
    bound = min(end, max(start, window_start(until)))
    assert sum((p.covered for p in pieces), timedelta(0)) == bound - start
    assert all(p.window_end <= until for p in pieces)


@given(start=moments, span=spans, vcpu=st.integers(min_value=1, max_value=64))
def test_window_quantities_sum_to_the_exact_total_rounded_once(
    start: datetime, span: timedelta, vcpu: int
) -> None:
    end = start + span
    rates = (MeterRate("vps.vcpu.hours", Fraction(vcpu)),)
    records = usage_records("ins_1", rates, start, end, until=end + WINDOW)
    exact = Fraction(vcpu) * Fraction(span // timedelta(microseconds=1), 3_600_000_000)
    assert sum((r.quantity for r in records), Decimal(0)) == round_quantity(exact)
    assert all(r.quantity >= 0 for r in records)

"""Metering arithmetic: aligned 5-minute windows, meters and window quantities; vps.usage calls it.

Windows are [start, start + 5 min) with start aligned to 5 minutes of UTC
(10:00, 10:05, …). A subject (an instance, a reservation, a spare) is metered
over one interval [start, end), end None while it still runs; each window it
touches gets `rate per hour × hours covered`.

Only closed windows are emitted: a window whose end is after `until` (the
metering run's now) is left for a later run. So each (subject, meter, window
start) is written once, with its final value, and an upsert on that key makes
reruns and overlapping runs harmless. `closed_windows(watermark, now)` lists
every closed window not yet written, so a run after downtime catches up.

Arithmetic is exact (fractions.Fraction) until a quantity is stored. Stored
quantities are Decimals with 6 decimal places (ROUND_HALF_EVEN). Each
window's quantity is the difference between the rounded cumulative quantity
at the window's end and at its start, both counted from the interval's start,
so the windows of one interval always add up to its exact total rounded once:
an hour of 1 vCPU is 1.000000 vCPU-hours, not 12 × 0.083333. A window's value
depends only on the interval and the window, never on when it is computed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from fractions import Fraction
from typing import Protocol

from bcfleet.domain.sizes import CREDITS_PER_INSTANCE_HOUR
from bcfleet.errors import InvalidInputError

WINDOW = timedelta(minutes=5)
QUANTUM = Decimal("0.000001")
"""Stored quantities have 6 decimal places."""

METER_VCPU = "vps.vcpu.hours"
METER_MEMORY = "vps.memory.gib.hours"
METER_CREDITS = "credits"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_MICROSECONDS_PER_HOUR = 3_600_000_000

Number = int | float | Decimal | Fraction


def _utc(moment: datetime, name: str) -> datetime:
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise InvalidInputError(
            f"{name} must be an aware datetime, got {moment!r}", {"field": name}
        )
    return moment.astimezone(UTC)


def window_start(moment: datetime) -> datetime:
    """The start of the 5-minute UTC window holding `moment` (moment floored to 5 minutes)."""
    at = _utc(moment, "moment")
    return _EPOCH + (at - _EPOCH) // WINDOW * WINDOW


def hours(duration: timedelta) -> Fraction:
    """A duration in hours, exactly (to the microsecond)."""
    return Fraction(duration // _MICROSECOND, _MICROSECONDS_PER_HOUR)


@dataclass(frozen=True)
class WindowPiece:
    """The part [start, end) of the 5-minute window at window_start that an interval covers."""

    window_start: datetime
    start: datetime
    end: datetime

    @property
    def window_end(self) -> datetime:
        return self.window_start + WINDOW

    @property
    def covered(self) -> timedelta:
        return self.end - self.start

    @property
    def fraction(self) -> Fraction:
        """The share of the window covered, 0 < fraction <= 1."""
        return Fraction(self.covered // _MICROSECOND, WINDOW // _MICROSECOND)

    @property
    def hours(self) -> Fraction:
        return hours(self.covered)


def _bounds(start: datetime, end: datetime) -> tuple[datetime, datetime]:
    begin, finish = _utc(start, "start"), _utc(end, "end")
    if finish < begin:
        raise InvalidInputError(f"end {finish.isoformat()} is before start {begin.isoformat()}")
    return begin, finish


def window_pieces(start: datetime, end: datetime) -> tuple[WindowPiece, ...]:
    """Split [start, end) into per-window pieces that tile it exactly; empty when start == end."""
    begin, finish = _bounds(start, end)
    pieces: list[WindowPiece] = []
    if begin == finish:
        return ()
    window = window_start(begin)
    while window < finish:
        pieces.append(WindowPiece(window, max(begin, window), min(finish, window + WINDOW)))
        window += WINDOW
    return tuple(pieces)


def closed_pieces(
    start: datetime, end: datetime | None, *, until: datetime, since: datetime | None = None
) -> tuple[WindowPiece, ...]:
    """The pieces of [start, end or until) in windows closed by `until`, from `since` on.

    A window is closed when its end is at or before `until`; later windows are
    not yet final and are left out. `since` (a watermark) skips windows
    already written.
    """
    bound = window_start(until)
    begin = _utc(start, "start")
    finish = bound if end is None else min(_bounds(begin, end)[1], bound)
    if since is not None:
        begin = max(begin, window_start(since))
    if finish <= begin:
        return ()
    return window_pieces(begin, finish)


def closed_windows(
    watermark: datetime, now: datetime, *, limit: int | None = None
) -> tuple[datetime, ...]:
    """Starts of the closed windows from `watermark` (the first window not yet written) up to `now`.

    After downtime this is every missed window, oldest first; `limit` caps a
    catch-up batch. Empty when nothing has closed since the watermark.
    """
    first, last = window_start(watermark), window_start(now)
    count = (last - first) // WINDOW
    if limit is not None:
        count = min(count, max(0, limit))
    return tuple(first + WINDOW * i for i in range(max(0, count)))


# ---------------------------------------------------------------------------
# Meters


@dataclass(frozen=True)
class MeterRate:
    """A meter and how many of its units one hour of the subject counts."""

    meter: str
    per_hour: Fraction


class InstanceShape(Protocol):
    """What metering reads of an instance's shape (the copy it keeps of its flavor)."""

    @property
    def vcpu(self) -> Number: ...

    @property
    def memory_gib(self) -> Number: ...

    @property
    def gpus(self) -> int: ...


def _exact(value: Number) -> Fraction:
    # Floats go through their decimal text, so 1.5 GiB is 3/2 and not a binary approximation.
    return Fraction(str(value)) if isinstance(value, float) else Fraction(value)


def gpu_meter(gpu_model: str | None, *, spot: bool = False) -> str:
    """gpu.<model>.hours, or gpu.<model>.spot.hours, with the pool's GPU model in lower case."""
    model = (gpu_model or "").strip().lower()
    if not model:
        raise InvalidInputError(
            "GPU usage needs the pool's gpuModel to name its meter gpu.<model>.hours",
            {"field": "gpuModel"},
        )
    return f"gpu.{model}.spot.hours" if spot else f"gpu.{model}.hours"


def meters_for_instance(shape: InstanceShape, gpu_model: str | None) -> tuple[MeterRate, ...]:
    """A hosted instance: vCPU and memory per hour, and for GPU flavors its GPUs per hour."""
    rates = [
        MeterRate(METER_VCPU, _exact(shape.vcpu)),
        MeterRate(METER_MEMORY, _exact(shape.memory_gib)),
    ]
    if shape.gpus > 0:
        rates.append(MeterRate(gpu_meter(gpu_model), Fraction(shape.gpus)))
    return tuple(rates)


def meters_for_reservation(gpus: int, gpu_model: str | None, spot: bool) -> tuple[MeterRate, ...]:
    """A GPU reservation: its GPUs per hour, on the spot meter when it is spot."""
    if gpus <= 0:
        return ()
    return (MeterRate(gpu_meter(gpu_model, spot=spot), Fraction(gpus)),)


def meters_for_spare() -> tuple[MeterRate, ...]:
    """A spare instance of document 004: credits, 1 per instance-hour."""
    return (MeterRate(METER_CREDITS, Fraction(CREDITS_PER_INSTANCE_HOUR)),)


# ---------------------------------------------------------------------------
# Quantities


def round_quantity(value: Fraction) -> Decimal:
    """An exact quantity as stored: 6 decimal places, half to even."""
    steps = round(value / Fraction(QUANTUM))  # Fraction rounds half to even
    return Decimal(steps) * QUANTUM


@dataclass(frozen=True)
class UsageRecord:
    """One usage window as written: keyed by (subject, meter, window_start)."""

    subject: str
    meter: str
    window_start: datetime
    quantity: Decimal

    @property
    def key(self) -> tuple[str, str, datetime]:
        return (self.subject, self.meter, self.window_start)


@dataclass(frozen=True)
class ShapePeriod:
    """The rates a subject counts from `start` until the next period's start (a resize)."""

    start: datetime
    rates: tuple[MeterRate, ...]


def _meters(periods: tuple[ShapePeriod, ...]) -> tuple[str, ...]:
    seen: dict[str, None] = {}
    for period in periods:
        for rate in period.rates:
            seen.setdefault(rate.meter, None)
    return tuple(seen)


def _cumulative(periods: tuple[ShapePeriod, ...], meter: str, at: datetime) -> Fraction:
    """What `meter` counted exactly from the first period's start until `at`."""
    total = Fraction(0)
    for index, period in enumerate(periods):
        if at <= period.start:
            break
        following = periods[index + 1].start if index + 1 < len(periods) else at
        held = hours(min(following, at) - period.start)
        total += sum((r.per_hour * held for r in period.rates if r.meter == meter), Fraction(0))
    return total


def _ordered(periods: tuple[ShapePeriod, ...]) -> tuple[ShapePeriod, ...]:
    if not periods:
        raise InvalidInputError("a metered subject needs at least one shape period")
    ordered = tuple(ShapePeriod(_utc(p.start, "start"), p.rates) for p in periods)
    if any(
        later.start <= earlier.start for earlier, later in zip(ordered, ordered[1:], strict=False)
    ):
        raise InvalidInputError("shape periods must start in increasing order")
    return ordered


def period_usage_records(
    subject: str,
    periods: tuple[ShapePeriod, ...],
    end: datetime | None,
    *,
    until: datetime,
    since: datetime | None = None,
) -> tuple[UsageRecord, ...]:
    """The closed usage windows of a subject whose shape changed at each period's start.

    A window a change falls in is split there: each part counts at its own rates. Quantities
    are counted from the first period's start, so the windows add up to the exact total
    rounded once, and a window is the rounded count at its end minus that at its start.
    One record per closed window and meter, ordered by window, then by meter as first listed.
    """
    ordered = _ordered(periods)
    meters = _meters(ordered)
    pieces = closed_pieces(ordered[0].start, end, until=until, since=since)
    records = []
    for piece in pieces:
        for meter in meters:
            after = round_quantity(_cumulative(ordered, meter, piece.end))
            before = round_quantity(_cumulative(ordered, meter, piece.start))
            records.append(UsageRecord(subject, meter, piece.window_start, after - before))
    return tuple(records)


def usage_records(
    subject: str,
    rates: tuple[MeterRate, ...],
    start: datetime,
    end: datetime | None,
    *,
    until: datetime,
    since: datetime | None = None,
) -> tuple[UsageRecord, ...]:
    """The usage windows of one subject over [start, end) that `until` has closed, from `since` on.

    One record per closed window and meter, ordered by window then by meter
    as `rates` lists them.
    """
    return period_usage_records(
        subject, (ShapePeriod(start, rates),), end, until=until, since=since
    )

"""Retry-After of a NO_CAPACITY answer (doc 004): when a replacement spare is ready; for deploys.

When no spare of a size is free, the `spares` job starts a replacement at its
next tick and the instance is ready once its agent has booted it. So a client
should wait about `seconds to the next spares tick + boot seconds`. The wait is
jittered upwards only (up to `jitter` of it, 20 % by default) so that many
clients turned away at once do not all come back in the same second, and none
comes back before the replacement can be ready. The result is a whole number of
seconds, rounded up, and at least 1.

Every NO_CAPACITY answer carries Retry-After (PRODUCT.md §3). When no replacement
is coming (the size keeps 0 spares, is off, or the tenant names no serverless pool),
or a streaming deploy gave up waiting, the value is the spares job's interval
(`retry_after_without_spares`): the soonest a raised spare count is acted on, and
the cadence at which the jobs place what is pending.
"""

from __future__ import annotations

import math
import random
from datetime import datetime, timedelta

from bcfleet.domain.sizes import label, parse_size
from bcfleet.errors import NoCapacityError

DEFAULT_JITTER = 0.2


def seconds_until_next_tick(
    now: datetime, last_tick: datetime | None, interval_seconds: float
) -> float:
    """Seconds from `now` until a job last run at `last_tick` is due (0 if overdue or never run)."""
    if last_tick is None:
        return 0.0
    due = last_tick + timedelta(seconds=interval_seconds)
    return max(0.0, (due - now).total_seconds())


def replacement_ready_in(*, boot_seconds: float, seconds_to_next_tick: float) -> float:
    """About how long one replacement takes to be ready: the next spares tick, then its boot."""
    if boot_seconds < 0 or seconds_to_next_tick < 0:
        raise ValueError("boot_seconds and seconds_to_next_tick must not be negative")
    return boot_seconds + seconds_to_next_tick


def retry_after_seconds(
    *,
    boot_seconds: float,
    seconds_to_next_tick: float,
    rng: random.Random,
    jitter: float = DEFAULT_JITTER,
) -> int:
    """The Retry-After value: the replacement's ready time, jittered up, as a positive int."""
    if not 0 <= jitter <= 1:
        raise ValueError("jitter must be between 0 and 1")
    base = replacement_ready_in(
        boot_seconds=boot_seconds, seconds_to_next_tick=seconds_to_next_tick
    )
    jittered = base * (1 + rng.uniform(0, jitter))
    return max(1, math.ceil(jittered))


def retry_after_without_spares(interval_seconds: float) -> int:
    """Retry-After when no replacement spare is coming: the spares job's interval, rounded up."""
    if not interval_seconds >= 0:
        raise ValueError("interval_seconds must not be negative")
    return max(1, math.ceil(interval_seconds))


def no_capacity_error(size: str, retry_after: int) -> NoCapacityError:
    """The NO_CAPACITY error for a size that ran out, naming it and telling who can add capacity.

    `retry_after` is required: every NO_CAPACITY answer carries the Retry-After header.
    """
    name = parse_size(size)
    wait = f" Retry after {retry_after} seconds."
    message = (
        f"No free instance of size {label(name)}.{wait} If this keeps happening, ask your "
        f"admin to add capacity: raise the spare instances for {label(name)} on the Compute tab."
    )
    return NoCapacityError(message, instance_size=name, retry_after_seconds=retry_after)

"""Long-lived requests (event streams, streaming deploys): a bound per tenant, and threads of their own.

An ordinary call borrows a thread from Starlette's shared pool for the few
milliseconds its transaction takes. A stream lives for minutes; if its
blocking steps borrowed from the same pool, a few dozen streams would hold
every thread and every other call would queue behind them. So:

- each tenant may hold at most ``per_tenant`` streams open at once
  (``BCFLEET_STREAMS_PER_TENANT``, default 20); one more is TOO_MANY_REQUESTS
  (HTTP 429) with Retry-After, before anything is started;
- a stream's blocking steps run on a thread limiter of their own
  (``STREAM_THREADS``), never on the shared pool.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from typing import TypeVar

import anyio
import anyio.to_thread

from bcfleet.errors import TooManyRequestsError

T = TypeVar("T")

DEFAULT_PER_TENANT = 20
RETRY_AFTER_SECONDS = 5
STREAM_THREAD_COUNT = 256
_limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, anyio.CapacityLimiter] = (
    weakref.WeakKeyDictionary()
)


def stream_threads() -> anyio.CapacityLimiter:
    """The streams' own thread limiter, one per event loop (made on first use inside it)."""
    loop = asyncio.get_running_loop()
    limiter = _limiters.get(loop)
    if limiter is None:
        limiter = _limiters[loop] = anyio.CapacityLimiter(STREAM_THREAD_COUNT)
    return limiter


def per_tenant_from_env() -> int:
    raw = os.environ.get("BCFLEET_STREAMS_PER_TENANT", "")
    return int(raw) if raw.isdigit() and 0 < int(raw) <= 10_000 else DEFAULT_PER_TENANT


class StreamSlots:
    """How many streams each tenant holds open, within a bound."""

    def __init__(self, per_tenant: int | None = None) -> None:
        self.per_tenant = per_tenant or per_tenant_from_env()
        self._open: dict[str, int] = {}
        self._lock = threading.Lock()

    def take(self, tenant: str) -> None:
        """Count one more open stream for the tenant; TOO_MANY_REQUESTS at the bound."""
        with self._lock:
            held = self._open.get(tenant, 0)
            if held >= self.per_tenant:
                raise TooManyRequestsError(
                    f"this tenant already holds {held} streams open, the most it may; close one "
                    "or retry later",
                    {"limit": self.per_tenant},
                    retry_after_seconds=RETRY_AFTER_SECONDS,
                )
            self._open[tenant] = held + 1

    def give_back(self, tenant: str) -> None:
        with self._lock:
            left = self._open.get(tenant, 0) - 1
            if left > 0:
                self._open[tenant] = left
            else:
                self._open.pop(tenant, None)

    def open_count(self, tenant: str) -> int:
        with self._lock:
            return self._open.get(tenant, 0)


async def held_open(slots: StreamSlots, tenant: str, body: AsyncIterator[T]) -> AsyncIterator[T]:
    """The stream's body, giving its slot back however it ends (done, failed, client gone)."""
    try:
        async for item in body:
            yield item
    finally:
        slots.give_back(tenant)


_DONE = object()


async def iterate_in_stream_threads(iterator: Iterator[T]) -> AsyncIterator[T]:
    """Each next() of a blocking iterator on the streams' own threads."""
    while True:
        item = await anyio.to_thread.run_sync(next, iterator, _DONE, limiter=stream_threads())
        if item is _DONE:
            return
        yield item  # type: ignore[misc]

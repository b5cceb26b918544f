"""Long-lived requests (event streams, streaming deploys): bounds per tenant and in all, threads of
their own, and an end as soon as their client goes or the server stops.

The stream routes (routes/events.py, routes/compute.py) take a slot for each stream; the server
(server.py) ends them all when it stops. An ordinary call borrows a thread from Starlette's
shared pool for the few milliseconds its transaction takes. A stream lives for minutes; if its
blocking steps borrowed from the same pool, a few dozen streams would hold every thread and
every other call would queue behind them. So:

- each tenant may hold at most ``per_tenant`` streams open at once
  (``BCFLEET_STREAMS_PER_TENANT``, default 20), and the server at most ``total``
  (``BCFLEET_STREAMS_TOTAL``, default 128); one more is TOO_MANY_REQUESTS (HTTP 429) with
  Retry-After at once, before anything is started: a stream is never queued;
- a stream's blocking steps run on a thread limiter of their own with as many threads as
  streams may be open in all, never on the shared pool: no stream ever waits for a thread,
  whatever the other tenants hold;
- each open stream has a stop event, set when its client goes (Starlette cancels the
  response) or when the server stops (end_all()). Its waits end at once: the slot is free
  again as soon as the client is gone, and a stopping server's streams end cleanly.
"""

from __future__ import annotations

import asyncio
import os
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import anyio.to_thread

from bcfleet.errors import TooManyRequestsError

T = TypeVar("T")

DEFAULT_PER_TENANT = 20
DEFAULT_TOTAL = 128
BOUND_MAX = 10_000
RETRY_AFTER_SECONDS = 5


def bound_from_env(variable: str, default: int) -> int:
    """A positive bound from the environment (at most BOUND_MAX), else the default."""
    raw = os.environ.get(variable, "")
    return int(raw) if raw.isdigit() and 0 < int(raw) <= BOUND_MAX else default


@dataclass(eq=False)
class OpenStream:
    """One open stream: its tenant, and the events that end it (a thread waits on `stop`, the
    event loop on `_ended`; both are set together, in the event loop)."""

    tenant: str
    stop: threading.Event = field(default_factory=threading.Event)
    _ended: anyio.Event = field(default_factory=anyio.Event)

    def end(self) -> None:
        self.stop.set()
        self._ended.set()

    async def pause(self, seconds: float) -> bool:
        """Wait up to `seconds`; whether the stream is to end (the server stops)."""
        with anyio.move_on_after(seconds):
            await self._ended.wait()
        return self.stop.is_set()


class StreamSlots:
    """The streams open, by tenant, within a bound per tenant and a bound in all."""

    def __init__(self, per_tenant: int | None = None, total: int | None = None) -> None:
        self.per_tenant = per_tenant or bound_from_env(
            "BCFLEET_STREAMS_PER_TENANT", DEFAULT_PER_TENANT
        )
        self.total = total or bound_from_env("BCFLEET_STREAMS_TOTAL", DEFAULT_TOTAL)
        self._open: dict[str, set[OpenStream]] = {}
        self._stopping = False
        self._lock = threading.Lock()
        self._limiters: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, anyio.CapacityLimiter
        ] = weakref.WeakKeyDictionary()

    def take(self, tenant: str) -> OpenStream:
        """One more open stream for the tenant; TOO_MANY_REQUESTS at either bound."""
        with self._lock:
            held = len(self._open.get(tenant, ()))
            if held >= self.per_tenant:
                raise _too_many(
                    f"this tenant already holds {held} streams open, the most it may",
                    self.per_tenant,
                    "tenant",
                )
            if sum(len(streams) for streams in self._open.values()) >= self.total:
                raise _too_many(
                    "the server holds as many streams open as it may", self.total, "server"
                )
            stream = OpenStream(tenant)
            self._open.setdefault(tenant, set()).add(stream)
        if self._stopping:
            stream.end()
        return stream

    def give_back(self, stream: OpenStream) -> None:
        """The stream is over: its waits end and its slot is free."""
        stream.end()
        with self._lock:
            streams = self._open.get(stream.tenant, set())
            streams.discard(stream)
            if not streams:
                self._open.pop(stream.tenant, None)

    def end_all(self) -> None:
        """The server stops: every open stream ends (cleanly, at its next step), and any stream
        opened from now on ends at once. Called in the event loop."""
        with self._lock:
            self._stopping = True
            streams = [s for tenant in self._open.values() for s in tenant]
        for stream in streams:
            stream.end()

    def open_count(self, tenant: str | None = None) -> int:
        """The streams open: the tenant's, or all of them."""
        with self._lock:
            if tenant is not None:
                return len(self._open.get(tenant, ()))
            return sum(len(streams) for streams in self._open.values())

    def threads(self) -> anyio.CapacityLimiter:
        """The streams' own thread limiter, as many threads as streams may be open; one per event
        loop (made on first use inside it)."""
        loop = asyncio.get_running_loop()
        limiter = self._limiters.get(loop)
        if limiter is None:
            limiter = self._limiters[loop] = anyio.CapacityLimiter(self.total)
        return limiter


def _too_many(what: str, limit: int, scope: str) -> TooManyRequestsError:
    return TooManyRequestsError(
        f"{what}; close one or retry later",
        {"limit": limit, "scope": scope},
        retry_after_seconds=RETRY_AFTER_SECONDS,
    )


async def held_open(
    slots: StreamSlots, stream: OpenStream, body: AsyncIterator[T]
) -> AsyncIterator[T]:
    """The stream's body, giving its slot back however it ends (done, failed, client gone)."""
    try:
        async for item in body:
            yield item
    finally:
        slots.give_back(stream)


_DONE = object()


async def iterate_in_stream_threads(
    iterator: Iterator[T], threads: anyio.CapacityLimiter
) -> AsyncIterator[T]:
    """Each next() of a blocking iterator on the streams' own threads.

    A cancelled stream (its client went) does not wait for the step under way: the thread is
    left to finish it, which it does at once when the step is a wait on the stream's stop
    event (held_open() sets it as the stream ends), and the slot is free meanwhile.
    """
    while True:
        item = await anyio.to_thread.run_sync(
            next, iterator, _DONE, limiter=threads, abandon_on_cancel=True
        )
        if item is _DONE:
            return
        yield item  # type: ignore[misc]

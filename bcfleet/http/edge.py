"""The edge of `fleet serve`: what a connection may hold before it is a request.

server.py runs uvicorn with these limits. A connection has `header_timeout` seconds to send
a complete request head (from its first byte, or from being accepted); an idle keep-alive
connection is closed after `keepalive` seconds; at most `max_connections` are open, a
number held below the process's file-descriptor limit so accept() keeps a descriptor for
the database and the log; failed accepts, refused connections and uvicorn's warnings about
what a client sent are logged a line at a time, never a line or traceback per attempt.
What is left to a reverse proxy is in docs/security.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import resource
from dataclasses import dataclass
from typing import Any, cast

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from bcfleet.http.quiet_log import RateLimited, held_back
from bcfleet.settings import FleetSettings

log = logging.getLogger("bcfleet.http")

QUIET_SECONDS = 10.0  # seconds between two lines of one edge warning (refused, failed accept)

FD_RESERVE = 256  # descriptors kept for the database, the log and the listening sockets
OUT_OF_RESOURCES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


@dataclass(frozen=True)
class EdgeLimits:
    """Seconds to send a head, seconds an idle keep-alive connection lives, connections at most
    (the defaults are FleetSettings')."""

    header_timeout: float
    keepalive: int
    max_connections: int

    @classmethod
    def of(cls, settings: FleetSettings) -> EdgeLimits:
        return cls(
            header_timeout=settings.http_header_timeout_seconds,
            keepalive=settings.http_keepalive_seconds,
            max_connections=settings.http_max_connections,
        )

    def connections(self) -> int:
        """max_connections, held below this process's soft file-descriptor limit."""
        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        return connection_limit(self.max_connections, soft)


def connection_limit(wanted: int, fd_limit: int) -> int:
    """At most `wanted` connections, leaving FD_RESERVE descriptors (a quarter of a small limit)."""
    if fd_limit == resource.RLIM_INFINITY or fd_limit < 0:
        return wanted
    return max(1, min(wanted, fd_limit - min(FD_RESERVE, fd_limit // 4)))


def edge_protocol(header_timeout: float, quiet: RateLimited) -> type[H11Protocol]:
    """uvicorn's h11 protocol, closing a connection whose request head is late; `quiet`
    paces the warning that connections are refused at the limit."""

    class EdgeProtocol(_HeadTimeout):
        pass

    EdgeProtocol.header_timeout = header_timeout
    EdgeProtocol.quiet = quiet
    return EdgeProtocol


class _HeadTimeout(H11Protocol):
    header_timeout: float  # both set by edge_protocol
    quiet: RateLimited

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.logger = cast(
            logging.Logger, _PacedWarnings(self.logger, self.quiet)
        )  # as uvicorn uses it
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        limit = self.limit_concurrency
        if limit is not None and len(self.connections) > limit:
            held = self.quiet.admit("connection limit")
            if held is not None:
                log.warning(
                    "%d connections are open, the limit: closing new ones%s", limit, held_back(held)
                )
            transport.close()
            return
        self._watch_head()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._watch_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def _watch_head(self) -> None:
        """A timer runs while the connection waits for a head it has not completed."""
        waiting = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
        if not waiting:
            self._stop_head_timer()
        elif self._head_timer is None and self.timeout_keep_alive_task is None:
            self._head_timer = self.loop.call_later(self.header_timeout, self._head_too_late)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_late(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            with contextlib.suppress(h11.LocalProtocolError):
                self.conn.send(h11.ConnectionClosed())
            self.transport.close()


class _PacedWarnings(logging.LoggerAdapter[logging.Logger]):
    """uvicorn's logger of one connection, whose warnings (an invalid request, the limit
    reached, an unsupported upgrade: one per request a client sends) are paced; the rest
    passes as it is."""

    def __init__(self, logger: logging.Logger, quiet: RateLimited) -> None:
        super().__init__(logger, {})
        self.quiet = quiet

    @property
    def level(self) -> int:
        return self.logger.level

    def warning(self, msg: object, *args: Any, **kwargs: Any) -> None:
        held = self.quiet.admit(f"warning:{msg}")
        if held is not None:
            self.logger.warning(f"{msg}{held_back(held)}", *args, **kwargs)


def quiet_accept_errors(loop: asyncio.AbstractEventLoop, quiet: RateLimited) -> None:
    """accept() failing for want of descriptors or memory logs one line as `quiet` allows.
    asyncio retries a second later, once per failed attempt; a retry that finds the socket
    closed (the server stopped meanwhile) is no error. Other loop errors go where they went."""
    previous = loop.get_exception_handler()

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if isinstance(exc, OSError) and exc.errno in OUT_OF_RESOURCES:
            held = quiet.admit(f"accept:{exc.errno}")
            if held is not None:
                log.warning(
                    "accepting a connection failed: %s (%s); retrying%s",
                    exc.strerror,
                    errno.errorcode.get(exc.errno or 0, "?"),
                    held_back(held),
                )
            return
        if "_start_serving" in repr(context.get("handle")):  # a retry after the socket closed
            if quiet.admit("accept retry") is not None:
                log.debug("a retried accept() found its socket closed: %s", exc)
            return
        if previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handle)

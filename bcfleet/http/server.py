"""Serving the application with uvicorn: in the foreground (`fleet serve`) or in a thread (tests)."""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn

from bcfleet.errors import FleetError
from bcfleet.http.edge import QUIET_SECONDS, EdgeLimits, edge_protocol, quiet_accept_errors
from bcfleet.http.quiet_log import RateLimited
from bcfleet.settings import FleetSettings


class FleetServer(uvicorn.Server):
    """uvicorn, logging failed accepts quietly (edge.py) and ending the application's open
    streams as it stops (before it waits for its connections to close): each ends cleanly,
    never cancelled with a traceback."""

    def __init__(self, config: uvicorn.Config, quiet: RateLimited) -> None:
        super().__init__(config)
        self.quiet = quiet

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        quiet_accept_errors(asyncio.get_running_loop(), self.quiet)
        await super().startup(sockets)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        served = getattr(getattr(self.config.app, "state", None), "served", None)
        if served is not None:
            served.streams.end_all()
        await super().shutdown(sockets)


def edge_server(app: Any, limits: EdgeLimits, **options: Any) -> FleetServer:
    """A uvicorn server of `app` within the edge's limits; options go to uvicorn.Config."""
    quiet = RateLimited(QUIET_SECONDS)
    config = uvicorn.Config(
        app,
        http=edge_protocol(limits.header_timeout, quiet),
        timeout_keep_alive=limits.keepalive,
        limit_concurrency=limits.connections(),
        proxy_headers=False,
        **options,
    )
    return FleetServer(config, quiet)


def serve_forever(
    app: Any, *, host: str, port: int, limits: EdgeLimits, log_level: str = "info"
) -> None:
    """Serve until interrupted; open streams end at once, others get 5 seconds to finish."""
    server = edge_server(
        app, limits, host=host, port=port, log_level=log_level, timeout_graceful_shutdown=5
    )
    with contextlib.suppress(KeyboardInterrupt):  # uvicorn raises the signal it caught again
        server.run()
    if not server.started:
        raise FleetError(f"the HTTP server could not listen on {host}:{port}")


class BackgroundServer:
    """uvicorn in a daemon thread on 127.0.0.1; port 0 picks a free port. A context manager."""

    def __init__(
        self,
        app: Any,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        limits: EdgeLimits | None = None,
    ) -> None:
        self.server = edge_server(
            app,
            limits or EdgeLimits.of(FleetSettings()),
            host=host,
            port=port,
            log_level="warning",
            timeout_graceful_shutdown=2,
        )
        self.thread = threading.Thread(target=self.server.run, name="bcfleet-http", daemon=True)
        self.host = host
        self.port = port

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self, timeout: float = 10.0) -> BackgroundServer:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise FleetError("the HTTP server did not start")
            time.sleep(0.01)
        sockets = [s for server in self.server.servers for s in server.sockets]
        self.port = int(sockets[0].getsockname()[1])
        return self

    def stop(self, timeout: float = 10.0) -> None:
        self.server.should_exit = True
        self.thread.join(timeout)

    def __enter__(self) -> BackgroundServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

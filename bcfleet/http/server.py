"""Serving the application with uvicorn: in the foreground (`fleet serve`) or in a thread (tests)."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from types import TracebackType
from typing import Any

import uvicorn

from bcfleet.errors import FleetError


class FleetServer(uvicorn.Server):
    """uvicorn, ending the application's open streams as it stops (before it waits for its
    connections to close): each ends cleanly, never cancelled with a traceback."""

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        served = getattr(getattr(self.config.app, "state", None), "served", None)
        if served is not None:
            served.streams.end_all()
        await super().shutdown(sockets)


def serve_forever(app: Any, *, host: str, port: int, log_level: str = "info") -> None:
    """Serve until interrupted; open streams end at once, others get 5 seconds to finish."""
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        timeout_graceful_shutdown=5,
        proxy_headers=False,
    )
    server = FleetServer(config)
    with contextlib.suppress(KeyboardInterrupt):  # a second Ctrl-C: stop without waiting
        server.run()
    if not server.started:
        raise FleetError("the HTTP server did not start")


class BackgroundServer:
    """uvicorn in a daemon thread on 127.0.0.1; port 0 picks a free port. A context manager."""

    def __init__(self, app: Any, *, host: str = "127.0.0.1", port: int = 0) -> None:
        config = uvicorn.Config(
            app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=2
        )
        self.server = FleetServer(config)
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

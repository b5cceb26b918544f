"""A capturing HTTP server on 127.0.0.1 for the secrets and egress tests: it records every request."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from bcfleet.domain.egress import parse_ranges
from bcfleet.fleet import Fleet

LOOPBACK = "127.0.0.0/8"


@dataclass
class Capture:
    """What the server saw, and what it answers (the same to every request)."""

    url: str = ""
    status: int = 200
    body: Any = field(default_factory=lambda: {"server_types": [], "datacenters": []})
    headers: dict[str, str] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def host(self) -> str:
        return self.url.split("//", 1)[1].split("/", 1)[0]


@contextmanager
def capturing_server() -> Iterator[Capture]:
    state = Capture()

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length", "0") or 0)
            body = self.rfile.read(length) if length else b""
            with state.lock:
                state.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body,
                    }
                )
            payload = state.body if isinstance(state.body, bytes) else json.dumps(state.body)
            data = payload if isinstance(payload, bytes) else payload.encode()
            self.send_response(state.status)
            for key, value in state.headers.items():
                self.send_header(key, value)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _answer  # noqa: N815 - the stdlib's names

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def allow_egress(fleet: Fleet, ranges: str = LOOPBACK) -> None:
    """What BCFLEET_EGRESS_ALLOW=<ranges> does, on a fleet already open."""
    fleet.settings = replace(fleet.settings, egress_allow=parse_ranges(ranges))


def set_secret_key(fleet: Fleet, key: str | None) -> None:
    """What BCFLEET_SECRET_KEY=<key> does, on a fleet already open."""
    fleet.settings = replace(fleet.settings, secret_key=key)

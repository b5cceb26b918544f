"""A real local Hetzner-compatible HTTP server for tests, ``fleet demo``, ``fleet provider-fake``.

The API lives under ``/v1`` (so a provider account's endpoint is
``http://127.0.0.1:PORT/v1``) and speaks Hetzner Cloud's JSON; the project
itself is :class:`~bcfleet.providers.fake_state.FakeState`. Faults are turned
through :class:`FakeHetzner` in Python or, for scripts, through the unauthenticated
admin API on loopback::

    POST /__fake__/faults   {"rateLimited": {"times": 3, "resetIn": 2},
                             "unavailableCreates": 1, "soldOut": [["cx23", "fsn1"]],
                             "delaySeconds": 0.5, "hangAfterCreate": {"times": 1, "seconds": 5},
                             "fail": {"times": 2, "status": 503, "code": "unavailable",
                                      "method": "GET", "path": "/servers"},
                             "rateLimit": 3600, "rateLimitRemaining": 10,
                             "failActions": {"command": "create_server", "times": 1,
                                             "code": "placement_error", "message": "…"}}
    POST /__fake__/reset    {"keepServers": false}
    GET  /__fake__/state    servers, request count and faults

Tests start it with ``FakeHetzner().start()`` (127.0.0.1, a free port, uvicorn
in a daemon thread) and may ``restart(keep_state=…)`` it on the same port.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import socket
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from bcfleet.clock import Clock
from bcfleet.providers.fake_actions import ActionFailure
from bcfleet.providers.fake_state import FakeState, RequestRecord

START_TIMEOUT_SECONDS = 10.0
STOP_TIMEOUT_SECONDS = 10.0


class _BadJson:
    """Stands for a request body that is not JSON, so the state answers json_error."""


def create_app(state_of: Callable[[], FakeState], stopping: threading.Event) -> Starlette:
    """The Starlette app; ``state_of()`` returns the current FakeState (it changes on restart)."""
    handlers = _Handlers(state_of, stopping)
    return Starlette(
        routes=[
            Route("/v1/{path:path}", handlers.api, methods=["GET", "POST", "PUT", "DELETE"]),
            Route("/__fake__/faults", handlers.faults, methods=["POST"]),
            Route("/__fake__/reset", handlers.reset, methods=["POST"]),
            Route("/__fake__/state", handlers.inspect, methods=["GET"]),
        ]
    )


class _Handlers:
    """The HTTP endpoints: the Hetzner API under /v1 and the admin API under /__fake__."""

    def __init__(self, state_of: Callable[[], FakeState], stopping: threading.Event) -> None:
        self.state_of = state_of
        self.stopping = stopping

    async def api(self, request: Request) -> Response:
        state = self.state_of()
        with state.lock:
            delay = state.faults.delay_seconds
        if delay > 0:
            await _pause(delay, self.stopping)
        reply = state.handle(
            request.method,
            "/" + request.path_params["path"].strip("/"),
            dict(request.query_params),
            await _body(request),
            request.headers.get("authorization"),
        )
        if reply.hang_seconds > 0:
            await _pause(reply.hang_seconds, self.stopping)
        headers = dict(reply.headers)
        if reply.links:
            headers["Link"] = link_header(str(request.url), reply.links)
        return JSONResponse(reply.body, status_code=reply.status, headers=headers)

    async def faults(self, request: Request) -> Response:
        document = await _body(request)
        if not isinstance(document, dict):
            return JSONResponse({"error": "expected a JSON object"}, status_code=400)
        apply_faults(self.state_of(), document)
        return JSONResponse(_faults_json(self.state_of()))

    async def reset(self, request: Request) -> Response:
        document = await _body(request)
        keep = bool(document.get("keepServers")) if isinstance(document, dict) else False
        self.state_of().reset(keep_servers=keep)
        return JSONResponse({"reset": True, "keptServers": keep})

    async def inspect(self, _: Request) -> Response:
        state = self.state_of()
        return JSONResponse(
            {
                "servers": state.server_json(),
                "requests": len(state.requests),
                "faults": _faults_json(state),
            }
        )


def apply_faults(state: FakeState, document: dict[str, Any]) -> None:
    """Turn the knobs named in an admin ``faults`` document (keys as in the module docstring)."""
    with state.lock:
        faults = state.faults
        if "rateLimited" in document:
            faults.rate_limited = int(document["rateLimited"].get("times", 1))
            faults.rate_limit_reset_in = float(document["rateLimited"].get("resetIn", 1.0))
        if "unavailableCreates" in document:
            faults.unavailable_creates = int(document["unavailableCreates"])
        if "soldOut" in document:
            faults.sold_out = {(str(t), str(loc)) for t, loc in document["soldOut"]}
        if "delaySeconds" in document:
            faults.delay_seconds = float(document["delaySeconds"])
        if "hangAfterCreate" in document:
            faults.hang_after_create = int(document["hangAfterCreate"].get("times", 1))
            faults.hang_seconds = float(document["hangAfterCreate"].get("seconds", 30.0))
        if "fail" in document:
            _set_failure(state, document["fail"])
        if "rateLimit" in document:
            remaining = document.get("rateLimitRemaining")
            state.set_rate_limit(int(document["rateLimit"]), remaining)
        if "failActions" in document:
            failure = document["failActions"]
            state.actions.fail_next(
                ActionFailure(
                    command=str(failure.get("command", "create_server")),
                    times=int(failure.get("times", 1)),
                    code=str(failure.get("code", "action_failed")),
                    message=str(failure.get("message", "action failed")),
                )
            )


def link_header(url: str, links: dict[str, int]) -> str:
    """RFC 8288 ``Link`` for the pages of a list: the request's URL with another ``page``."""
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "page"]
    entries = []
    for rel in ("prev", "next", "last"):
        if rel in links:
            target = urlunsplit(parts._replace(query=urlencode([*query, ("page", links[rel])])))
            entries.append(f'<{target}>; rel="{rel}"')
    return ", ".join(entries)


def _set_failure(state: FakeState, fail: dict[str, Any]) -> None:
    faults = state.faults
    faults.fail_times = int(fail.get("times", 1))
    faults.fail_status = int(fail.get("status", 503))
    faults.fail_code = str(fail.get("code", "unavailable"))
    faults.fail_method = fail.get("method")
    faults.fail_path = fail.get("path")


def _faults_json(state: FakeState) -> dict[str, Any]:
    with state.lock:
        raw = dataclasses.asdict(state.faults)
        raw["sold_out"] = sorted([list(pair) for pair in state.faults.sold_out])
        raw["fail_actions"] = [dataclasses.asdict(f) for f in state.actions.failures]
    return raw


async def _body(request: Request) -> Any:
    raw = await request.body()
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return _BadJson()


async def _pause(seconds: float, stopping: threading.Event) -> None:
    """Sleep without holding the event loop, cut short when the server stops."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not stopping.is_set():
        remaining = deadline - loop.time()
        if remaining <= 0:
            return
        await asyncio.sleep(min(remaining, 0.05))


class FakeHetzner:
    """The fake provider in a background thread, with knobs for tests.

    ``token=None`` accepts any bearer token; a string accepts only that one.
    """

    def __init__(
        self,
        *,
        token: str | None = "fake-hcloud-token",
        clock: Clock | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        rate_limit: int = 3600,
        boot_seconds: float = 5.0,
    ) -> None:
        self._token = token
        self._clock = clock
        self._rate_limit = rate_limit
        self._boot_seconds = boot_seconds
        self.state = self._fresh_state()
        self.host = host
        self.port = port
        self._stopping = threading.Event()
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"FakeHetzner(url={self.url!r})"

    def __enter__(self) -> FakeHetzner:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """The API base URL, to use as a provider account's endpoint."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def admin_url(self) -> str:
        return f"http://{self.host}:{self.port}/__fake__"

    def start(self) -> FakeHetzner:
        """Listen on the host and port (a free one the first time) and serve in a thread."""
        if self._thread is not None:
            return self
        sock = _listening_socket(self.host, self.port)
        self.port = sock.getsockname()[1]
        self._stopping.clear()
        config = uvicorn.Config(
            create_app(lambda: self.state, self._stopping),
            loop="asyncio",
            lifespan="off",
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="fake-hetzner", daemon=True
        )
        self._thread.start()
        _wait_until(lambda: self._server is not None and self._server.started, "start")
        return self

    def stop(self) -> None:
        """Stop serving; hanging and slow answers are cut short."""
        if self._server is None or self._thread is None:
            return
        self._stopping.set()
        self._server.should_exit = True
        self._thread.join(timeout=STOP_TIMEOUT_SECONDS)
        if self._thread.is_alive():
            self._server.force_exit = True
            self._thread.join(timeout=STOP_TIMEOUT_SECONDS)
        self._server = None
        self._thread = None

    def restart(self, keep_state: bool = True) -> None:
        """Stop and start again on the same port, keeping the project or starting empty."""
        self.stop()
        if not keep_state:
            self.state = self._fresh_state()
        self.start()

    # ----- knobs -------------------------------------------------------------------------

    def rate_limit_next(self, times: int, reset_in: float = 1.0) -> None:
        """Answer the next ``times`` API requests with 429 and a reset ``reset_in`` seconds away."""
        apply_faults(self.state, {"rateLimited": {"times": times, "resetIn": reset_in}})

    def unavailable_next_creates(self, times: int = 1) -> None:
        """Answer the next ``times`` server creates with 412 resource_unavailable."""
        apply_faults(self.state, {"unavailableCreates": times})

    def sell_out(self, offer_id: str, location: str) -> None:
        """Make one server type unavailable in one location (offers and creates)."""
        with self.state.lock:
            self.state.faults.sold_out.add((offer_id, location))

    def slow_down(self, seconds: float) -> None:
        """Wait this long before answering every API request (0 to stop)."""
        apply_faults(self.state, {"delaySeconds": seconds})

    def hang_after_create(self, times: int = 1, seconds: float = 30.0) -> None:
        """Create the server, then hold the answer ``seconds`` (the client times out)."""
        apply_faults(self.state, {"hangAfterCreate": {"times": times, "seconds": seconds}})

    def fail_next(
        self,
        code: str,
        status: int,
        times: int = 1,
        method: str | None = None,
        path: str | None = None,
    ) -> None:
        """Answer matching requests with this Hetzner error ``times`` times."""
        failure = {"times": times, "status": status, "code": code, "method": method, "path": path}
        apply_faults(self.state, {"fail": failure})

    def fail_next_actions(
        self, command: str, code: str, message: str = "action failed", times: int = 1
    ) -> None:
        """Make the next ``times`` actions of ``command`` (e.g. create_server) end in this error."""
        failure = {"command": command, "times": times, "code": code, "message": message}
        apply_faults(self.state, {"failActions": failure})

    # ----- inspection --------------------------------------------------------------------

    def add_server(
        self, name: str, offer_id: str, location: str, labels: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """Put a server into the project directly (as if made elsewhere)."""
        body = {"name": name, "server_type": offer_id, "image": "ubuntu-24.04"}
        return self.state.seed_server(dict(body, location=location, labels=labels or {}))

    def servers(self) -> list[dict[str, Any]]:
        return self.state.server_json()

    def server_names(self) -> list[str]:
        return self.state.server_names()

    @property
    def requests(self) -> list[RequestRecord]:
        with self.state.lock:
            return list(self.state.requests)

    def count(self, method: str, path: str) -> int:
        return self.state.count(method, path)

    def _fresh_state(self) -> FakeState:
        return FakeState(
            token=self._token,
            clock=self._clock,
            rate_limit=self._rate_limit,
            boot_seconds=self._boot_seconds,
        )


def serve(host: str = "127.0.0.1", port: int = 8787, token: str | None = None) -> None:
    """Run the fake in the foreground until interrupted (``fleet provider-fake``)."""
    state = FakeState(token=token)
    app = create_app(lambda: state, threading.Event())
    uvicorn.run(app, host=host, port=port, log_level="info", lifespan="off")


def _listening_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def _wait_until(ready: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.01)
    raise RuntimeError(f"the fake Hetzner server did not {what} in time")

"""The Starlette application of `fleet serve`: the /v1 operations, /healthz, /metrics, OpenAPI."""

from __future__ import annotations

import contextlib
import hmac
import logging
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from functools import partial
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bcfleet import __version__
from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.api.documents import EventPageJson
from bcfleet.clock import format_time
from bcfleet.domain.job_documents import JobRunJson
from bcfleet.domain.pages import EVENTS
from bcfleet.errors import FleetError, NotFoundError, UnauthenticatedError
from bcfleet.fleet import Fleet
from bcfleet.http.metrics import UNMATCHED_ROUTE, EventTally, JobRunTally
from bcfleet.http.openapi import build_document, match_path
from bcfleet.http.operations import Operation
from bcfleet.http.quiet_log import RateLimited, held_back
from bcfleet.http.routes import (
    compute,
    console,
    events,
    flavors,
    hosts,
    instances,
    jobs,
    pools,
    providers,
    reservations,
    tenants,
    usage,
    webhooks,
)
from bcfleet.http.serving import (
    DEFAULT_MAX_BODY_BYTES,
    MethodNotAllowedError,
    Served,
    bearer_token,
    body_validator,
    endpoint_for,
    error_response,
    log_unexpected,
    unexpected_error_response,
)
from bcfleet.http.serving import served as served_by
from bcfleet.http.streams import StreamSlots

log = logging.getLogger("bcfleet.http")

AREAS: tuple[Any, ...] = (
    tenants, pools, providers, flavors, hosts, instances, reservations, compute, usage, events,
    webhooks, jobs, console,
)  # fmt: skip


def all_operations(areas: Iterable[Any] = AREAS) -> list[Operation]:
    """Every /v1 operation, area by area, plus the meta routes."""
    ops: list[Operation] = [*META]
    for area in areas:
        ops.extend(area.OPERATIONS)
    return ops


def all_schemas(areas: Iterable[Any] = AREAS) -> dict[str, Any]:
    schemas: dict[str, Any] = {"Health": HEALTH_SCHEMA, "Metrics": {"type": "string"}}
    schemas["OpenAPI"] = {"type": "object"}
    for area in areas:
        schemas.update(area.SCHEMAS)
    return schemas


def openapi_document() -> dict[str, Any]:
    """The OpenAPI 3.1 document of everything the application serves."""
    return build_document(all_operations(), all_schemas())


async def healthz(request: Request) -> Response:
    """Liveness, with the fleet's time (BCFLEET_NOW shifts it): remote dashboards age things by it."""
    ctx: Served = request.app.state.served
    return JSONResponse(
        {"status": "ok", "version": __version__, "now": format_time(ctx.fleet.now())}
    )


async def metrics(request: Request) -> Response:
    """Prometheus' text format; with BCFLEET_METRICS_TOKEN set, only for that bearer token. The
    series name route templates, event types and jobs, never a tenant's objects, and their
    number is bounded whatever callers send (metrics.py)."""
    ctx: Served = request.app.state.served
    required = ctx.fleet.settings.metrics_token
    if required is not None:
        given = bearer_token(request, required=True) or ""
        if not hmac.compare_digest(given.encode(), required.encode()):
            raise UnauthenticatedError("/metrics needs the metrics bearer token")
    text = await run_in_threadpool(ctx.metrics.render)  # never on the event loop
    return PlainTextResponse(text, media_type="text/plain; version=0.0.4")


async def openapi(request: Request) -> Response:
    return JSONResponse(request.app.state.openapi)


HEALTH_SCHEMA = {
    "type": "object",
    "required": ["status", "version", "now"],
    "additionalProperties": False,
    "properties": {
        "status": {"const": "ok"},
        "version": {"type": "string"},
        "now": {"type": "string", "format": "date-time"},
    },
}

META = [
    Operation("GET", "/healthz", "meta.healthz", "Liveness", "meta", endpoint=healthz,
              response="Health", auth=False),
    Operation("GET", "/metrics", "meta.metrics", "Prometheus metrics", "meta", endpoint=metrics,
              response="Metrics", response_media="text/plain", auth=False),
    Operation("GET", "/v1/openapi.json", "meta.openapi", "This OpenAPI 3.1 document", "meta",
              endpoint=openapi, response="OpenAPI", auth=False),
]  # fmt: skip


class MetricsMiddleware:
    """Times every HTTP request and counts it by method, route template and status."""

    def __init__(self, app: ASGIApp, served: Served) -> None:
        self.app = app
        self.served = served

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = [500]

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            route = scope.get("bcfleet.route", UNMATCHED_ROUTE)
            elapsed = time.perf_counter() - started
            self.served.metrics.observe(scope["method"], route, status[0], elapsed)


async def http_exception(request: Request, exc: Exception) -> Response:
    """Starlette's own 404 and 405 in the error JSON."""
    assert isinstance(exc, HTTPException)
    error: FleetError
    if exc.status_code == 404:
        error = NotFoundError("no such route", {"reason": "no_route"})
    else:
        error = MethodNotAllowedError(
            f"{request.method} is not allowed here", {"reason": "method_not_allowed"}
        )
    response = error_response(error)
    response.headers.update(exc.headers or {})
    if exc.status_code == 405:  # every method the document declares for the path, not one route's
        document = request.app.state.openapi
        template = match_path(document, request.url.path)
        if template is not None:
            methods = sorted(m.upper() for m in document["paths"][template] if m != "parameters")
            response.headers["Allow"] = ", ".join(methods)
    return response


async def server_error(request: Request, exc: Exception) -> Response:
    log_unexpected(f"{request.method} {request.url.path}", exc, debug=served_by(request).debug)
    return unexpected_error_response(exc)


def _routes(ops: Sequence[Operation], schemas: dict[str, Any]) -> list[Route]:
    routes = []
    for op in ops:
        validator = body_validator(schemas, op.request) if op.request else None
        routes.append(Route(op.path, endpoint_for(op, validator), methods=[op.method]))
    return routes


def _tallies(fleet: Fleet, served: Served) -> tuple[EventTally, JobRunTally]:
    """The server's own reads for the fleet's counters (events as root, the jobs' run records)."""

    def read_page(after: int | None) -> EventPageJson:
        return fleet.api.events.list(LOCAL_OPERATOR, after=after, limit=EVENTS.maximum)

    def read_runs(limit: int) -> list[JobRunJson]:
        return fleet.api.jobs.runs(LOCAL_OPERATOR, limit=limit)

    return EventTally(served.metrics, read_page), JobRunTally(served.metrics, read_runs)


def create_app(
    fleet: Fleet,
    *,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    poll_seconds: float = 1.0,
    heartbeat_seconds: float = 15.0,
    tally_seconds: float = 10.0,
    streams_per_tenant: int | None = None,
    streams_total: int | None = None,
    debug: bool = False,
) -> Starlette:
    """The application over one fleet; tally_seconds paces the event-log counters (0: never);
    streams_per_tenant bounds each tenant's open streams (default BCFLEET_STREAMS_PER_TENANT),
    streams_total all of them (default BCFLEET_STREAMS_TOTAL)."""
    fleet.map_all_tables()
    served = Served(
        fleet,
        max_body_bytes=max_body_bytes,
        poll_seconds=poll_seconds,
        heartbeat_seconds=heartbeat_seconds,
        streams=StreamSlots(streams_per_tenant, streams_total),
        debug=debug,
    )
    tallies = _tallies(fleet, served)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            if tally_seconds > 0:
                group.start_soon(partial(_tally_loop, tallies, tally_seconds, debug=debug))
            yield
            group.cancel_scope.cancel()

    ops, schemas = all_operations(), all_schemas()
    app = Starlette(
        routes=_routes(ops, schemas),
        exception_handlers={HTTPException: http_exception, Exception: server_error},
        lifespan=lifespan,
    )
    app.state.served = served
    app.state.tallies = tallies
    app.state.openapi = build_document(ops, schemas)
    app.add_middleware(MetricsMiddleware, served=served)
    return app


async def _tally_loop(
    tallies: tuple[EventTally, JobRunTally], every: float, *, debug: bool
) -> None:
    """Tallies every `every` seconds; a failing tally is logged (one line, at most once a
    minute for each tally and error) and tried again next round while the others go on."""
    quiet = RateLimited(60.0)
    while True:
        for tally in tallies:
            try:
                await run_in_threadpool(tally.collect)
            except Exception as exc:  # the next round tries again; the server keeps serving
                name = type(tally).__name__
                held = quiet.admit(f"{name}:{type(exc).__name__}")
                if held is not None:
                    what = f"tallying the fleet's counters ({name})"
                    log_unexpected(what, exc, debug=debug, note=held_back(held))
        await anyio.sleep(every)

"""Routes of the event log: a page by cursor, and a server-sent stream that resumes from one."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from bcfleet.api.documents import EventPageJson
from bcfleet.domain.cursors import CURSOR_MAX, CURSOR_MIN, check_cursor
from bcfleet.domain.event_document import EventJson
from bcfleet.domain.pages import EVENTS
from bcfleet.errors import FleetError, InvalidInputError
from bcfleet.http.operations import TENANT, Call, Operation, Param, page_limit
from bcfleet.http.schemas import ref
from bcfleet.http.serving import Served, bearer_token, served
from bcfleet.http.streams import OpenStream, held_open
from bcfleet.http.typed_schemas import document_schemas

TAG = "events"
PAGE = 100

SCHEMAS = {
    **document_schemas((EventJson, EventPageJson)),
}

AFTER = Param(
    "after",
    "integer",
    "Only events after this cursor (an event's seq).",
    minimum=CURSOR_MIN,
    maximum=CURSOR_MAX,
)
TYPES = Param("type", "strings", "Only events of these types (repeatable).")
LIMIT = page_limit(EVENTS, "At most this many events.")
STREAM_LIMIT = Param(
    "limit", "integer", "Close the stream after this many events.", minimum=1, maximum=100000
)


def list_events(call: Call) -> Any:
    return call.api.events.list(
        call.token,
        tenant_id=call.tenant,
        after=call.query.get("after"),
        types=call.query.get("type", ()),
        limit=call.query["limit"],
    )


def _resume_cursor(request: Request, after: int | None) -> int | None:
    """Last-Event-ID (a reconnecting EventSource sends it) wins over ?after=."""
    header = request.headers.get("last-event-id")
    if header is None or header == "":
        return after
    try:
        value = int(header)
    except ValueError:
        raise InvalidInputError(
            "Last-Event-ID must be an event's seq", {"lastEventId": header}
        ) from None
    return check_cursor(value, "Last-Event-ID")


def sse_frame(item: EventJson) -> str:
    """One server-sent event: its seq as the id, its type as the event name, JSON as data."""
    data = json.dumps(item, separators=(",", ":"))
    return f"id: {item['seq']}\nevent: {item['type']}\ndata: {data}\n\n"


async def _frames(
    ctx: Served, stream: OpenStream, token: str, query: dict[str, Any], first: EventPageJson
) -> AsyncIterator[str]:
    limit: int | None = query.get("limit")
    sent, idle, current = 0, 0.0, first
    yield f"retry: {int(ctx.poll_seconds * 2000)}\n\n"
    while True:
        for item in current["items"]:
            yield sse_frame(item)
            sent += 1
            if limit is not None and sent >= limit:
                return
        if len(current["items"]) < PAGE:
            if await stream.pause(ctx.poll_seconds):
                return  # the server stops: a reconnecting client resumes from Last-Event-ID
            idle += ctx.poll_seconds
            if idle >= ctx.heartbeat_seconds:
                idle = 0.0
                yield ": keep-alive\n\n"
        try:
            current = await run_in_threadpool(_page, ctx, token, query, current["cursor"])
        except FleetError as error:  # e.g. the token was revoked while watching
            yield f"event: error\ndata: {json.dumps(error.to_json())}\n\n"
            return


def _page(ctx: Served, token: str, query: dict[str, Any], after: int | None) -> EventPageJson:
    return ctx.fleet.api.events.list(
        token, tenant_id=query.get("tenant"), after=after, types=query["type"], limit=PAGE
    )


async def stream_events(request: Request) -> Response:
    """GET /v1/events/stream: text/event-stream of the caller's events, from a cursor on."""
    ctx = served(request)
    token = bearer_token(request, required=True)
    assert token is not None
    query = {p.name: p.parse(request) for p in STREAM_QUERY}
    after = _resume_cursor(request, query["after"])
    first = await run_in_threadpool(_page, ctx, token, query, after)  # errors answer as JSON
    tenant = await run_in_threadpool(ctx.tenants.tenant_of, token)
    stream = ctx.streams.take(tenant)
    return StreamingResponse(
        held_open(ctx.streams, stream, _frames(ctx, stream, token, query, first)),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


STREAM_QUERY = (TENANT, AFTER, TYPES, STREAM_LIMIT)
OPERATIONS = [
    Operation(
        "GET",
        "/v1/events",
        "events.list",
        "A page of the caller's events after a cursor",
        TAG,
        list_events,
        response="EventPage",
        query=(TENANT, AFTER, TYPES, LIMIT),
    ),
    Operation(
        "GET",
        "/v1/events/stream",
        "events.stream",
        "Server-sent events of the caller's log, resuming after Last-Event-ID or ?after=",
        TAG,
        endpoint=stream_events,
        response="EventStream",
        response_media="text/event-stream",
        query=STREAM_QUERY,
        headers=(
            Param(
                "Last-Event-ID",
                "integer",
                "The seq of the last event seen; wins over ?after=.",
                minimum=CURSOR_MIN,
                maximum=CURSOR_MAX,
            ),
        ),  # fmt: skip
        description="Each event is `id: <seq>`, `event: <type>`, `data: <Event JSON>`. "
        "Send the last seq seen as Last-Event-ID (or ?after=) to resume without gaps.",
    ),
]
SCHEMAS["EventStream"] = {
    "type": "object",
    "description": "One server-sent event: the stream opens with a retry hint; then each event "
    "has its seq as id, its type as event and the Event as JSON data; an error ends the stream "
    "as event error with the error document as data.",
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$"},
        "event": {"type": "string"},
        "retry": {"type": "integer", "minimum": 0},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "contentSchema": {"anyOf": [ref("Event"), ref("Error")]},
        },
    },
}

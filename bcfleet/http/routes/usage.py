"""Routes of metered usage: a page of windows by cursor, a streamed export (NDJSON or CSV),
dead letters of unknown meters and their replay."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.concurrency import iterate_in_threadpool, run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from bcfleet.api.documents import (
    DeadLetterPageJson,
    ReplayedJson,
    UsagePageJson,
    UsageWindowJson,
)
from bcfleet.clock import parse_time
from bcfleet.domain.cursors import CURSOR_MAX, CURSOR_MIN
from bcfleet.domain.pages import USAGE, USAGE_DEAD_LETTERS
from bcfleet.domain.usage_csv import csv_lines
from bcfleet.http.operations import TENANT, Call, Operation, Param, page_limit
from bcfleet.http.rules import reference, time
from bcfleet.http.serving import bearer_token, served
from bcfleet.http.typed_schemas import document_schemas

TAG = "usage"

QUANTITY = {"type": "string", "description": "Decimal with 6 places, exact."}

SCHEMAS = {
    **document_schemas(
        (UsageWindowJson, UsagePageJson, DeadLetterPageJson, ReplayedJson),
        {"UsageWindow": {"quantity": QUANTITY}},
    ),
    "UsageExport": {"type": "string", "description": "NDJSON (one window a line) or CSV."},
}

FILTERS = (
    TENANT,
    Param("meter", text=reference("Only this meter.")),
    Param("subject", text=reference("Only this subject (an instance or reservation id).")),
    Param("since", text=time("Windows starting at or after this RFC 3339 time")),
    Param("until", text=time("Windows starting before this RFC 3339 time")),
)


def _filters(query: dict[str, Any]) -> dict[str, Any]:
    since, until = query.get("since"), query.get("until")
    return {
        "tenant_id": query.get("tenant"),
        "meter": query.get("meter"),
        "subject": query.get("subject"),
        "since": parse_time(since) if since else None,
        "until": parse_time(until) if until else None,
    }


def list_usage(call: Call) -> Any:
    return call.api.usage.list(
        call.token,
        after=call.query.get("after"),
        limit=call.query["limit"],
        **_filters(dict(call.query)),
    )


def dead_letters(call: Call) -> Any:
    return call.api.usage.dead_letters(
        call.token,
        tenant_id=call.tenant,
        pending_only=bool(call.query.get("pendingOnly")),
        limit=call.query["limit"],
    )


def replay(call: Call) -> Any:
    return call.api.usage.replay(call.token)


async def export_usage(request: Request) -> Response:
    """Every matching window, streamed from one read transaction."""
    ctx = served(request)
    token = bearer_token(request, required=True)
    query = {p.name: p.parse(request) for p in EXPORT_QUERY}
    filters = _filters(query)
    # A first look answers bad filters and tokens as JSON errors, not as a broken stream.
    await run_in_threadpool(ctx.fleet.api.usage.list, token, limit=1, **filters)
    rows = ctx.fleet.api.usage.export(token, **filters)
    as_csv = query["format"] == "csv"
    lines = csv_lines(rows) if as_csv else (json.dumps(r) + "\n" for r in rows)

    async def body() -> AsyncIterator[str]:
        async for line in iterate_in_threadpool(lines):
            yield line

    media = "text/csv" if as_csv else "application/x-ndjson"
    return StreamingResponse(body(), media_type=media)


LIMIT = page_limit(USAGE)
DEAD_LETTER_LIMIT = page_limit(USAGE_DEAD_LETTERS)
AFTER = Param("after", "integer", "Windows after this id.", minimum=CURSOR_MIN, maximum=CURSOR_MAX)
EXPORT_QUERY = (*FILTERS, Param("format", description="json (NDJSON) or csv.", default="json",
                                enum=("json", "csv")))  # fmt: skip
OPERATIONS = [
    Operation("GET", "/v1/usage", "usage.list", "A page of metered windows after a cursor", TAG,
              list_usage, response="UsagePage",
              query=(*FILTERS, AFTER, LIMIT)),
    Operation("GET", "/v1/usage/export", "usage.export",
              "Every matching window, streamed as NDJSON or CSV", TAG, endpoint=export_usage,
              response="UsageExport", response_media="application/x-ndjson",
              other_media=("text/csv",),
              query=EXPORT_QUERY),
    Operation("GET", "/v1/usage/dead-letters", "usage.deadLetters",
              "Windows of meters missing from the catalogue", TAG, dead_letters,
              response="DeadLetterPage",
              query=(TENANT, Param("pendingOnly", "boolean", "Not yet replayed.", default=False),
                     DEAD_LETTER_LIMIT)),
    Operation("POST", "/v1/usage/replay", "usage.replay",
              "Bill every dead letter whose meter exists now (root's admin)", TAG, replay,
              response="Replayed"),
]  # fmt: skip

"""Serving one operation: bearer token (checked first), bounded JSON body, validation, call, errors.

app.py wraps every Operation with endpoint_for(). The API methods are synchronous and do
I/O, so the handler runs in a worker thread (run_in_threadpool). Errors become the
error JSON of PRODUCT.md §3 with their code's status; NO_CAPACITY and DATABASE_UNAVAILABLE
add Retry-After. A lost database connection or a statement the database cancelled that
escaped the API's own handling still answers 503 DATABASE_UNAVAILABLE, never 500.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from jsonschema import Draft202012Validator, ValidationError, validators
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from bcfleet.api.escaped import escaped_fault
from bcfleet.domain.bounds import check_storable, schema_whole_problem, shown
from bcfleet.domain.document_limits import json_problem
from bcfleet.errors import FleetError, InvalidInputError, UnauthenticatedError
from bcfleet.fleet import Fleet
from bcfleet.http.metrics import Metrics
from bcfleet.http.operations import Call, Endpoint, Operation, TenantResolver
from bcfleet.http.rules import matches
from bcfleet.http.streams import StreamSlots

log = logging.getLogger("bcfleet.http")

MESSAGE_MAX = 300
"""The longest schema message a problem quotes (each value in it is cut by bounds.shown first)."""
DEFAULT_MAX_BODY_BYTES = 1 << 20  # 1 MiB: an inventory of a large host is a few hundred KiB


class PayloadTooLargeError(InvalidInputError):
    """A request body over the server's limit: 413."""

    http_status = 413


class MethodNotAllowedError(InvalidInputError):
    """A method the route does not serve: 405."""

    http_status = 405


@dataclass
class Served:
    """What every endpoint of one application shares."""

    fleet: Fleet
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    poll_seconds: float = 1.0
    heartbeat_seconds: float = 15.0
    metrics: Metrics = field(default_factory=Metrics)
    debug: bool = False  # log tracebacks of unexpected errors
    streams: StreamSlots = field(default_factory=StreamSlots)
    tenants: TenantResolver = field(init=False)

    def __post_init__(self) -> None:
        self.tenants = TenantResolver(self.fleet)


def served(request: Request) -> Served:
    ctx: Served = request.app.state.served
    return ctx


def bearer_token(request: Request, *, required: bool) -> str | None:
    """The token of `Authorization: Bearer bcf_…`; UNAUTHENTICATED when missing or malformed."""
    header = request.headers.get("authorization")
    if header is None:
        if required:
            raise UnauthenticatedError("a bearer token is required (Authorization: Bearer bcf_…)")
        return None
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise UnauthenticatedError("the Authorization header must be 'Bearer <token>'")
    return token


def error_response(error: FleetError) -> JSONResponse:
    """The error document with its status; Retry-After when the error advises one, WWW-Authenticate for 401."""
    headers: dict[str, str] = {}
    if error.retry_after_seconds is not None:
        headers["Retry-After"] = str(error.retry_after_seconds)
    if isinstance(error, UnauthenticatedError):
        headers["WWW-Authenticate"] = 'Bearer realm="bcfleet"'
    return JSONResponse(error.to_json(), status_code=error.http_status, headers=headers)


def log_unexpected(what: str, exc: BaseException, *, debug: bool, note: str = "") -> None:
    """One line for an error bcfleet did not expect; its traceback only under `fleet serve --debug`."""
    if debug:
        log.error("%s failed%s", what, note, exc_info=exc)
    else:
        log.error(
            "%s failed: %s (fleet serve --debug shows the traceback)%s",
            what,
            type(exc).__name__,
            note,
        )


def unexpected_error_response(exc: BaseException) -> JSONResponse:
    """503 DATABASE_UNAVAILABLE for a lost database connection or a cancelled statement, else 500
    INTERNAL (logged by the caller)."""
    fault = escaped_fault(exc)  # outside a unit of work: whether anything was saved is unknown
    return internal_error_response() if fault is None else error_response(fault)


def internal_error_response() -> JSONResponse:
    body = {"error": {"code": "INTERNAL", "message": "internal server error", "details": {}}}
    return JSONResponse(body, status_code=500)


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 past the limit (by Content-Length, else while reading)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


def _too_large(limit: int) -> PayloadTooLargeError:
    return PayloadTooLargeError(
        f"the request body is larger than {limit} bytes",
        {"reason": "body_too_large", "limitBytes": limit},
    )


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _number(literal: str) -> float | int:
    """A JSON number with a fraction or exponent: a whole one (6285.0, 1e3) is the integer it
    equals, as JSON Schema counts it, so the document's integers accept it."""
    value = float(literal)
    return int(value) if value.is_integer() else value


def parse_json(raw: bytes) -> Any:
    """Strict JSON (no NaN or Infinity); INVALID_INPUT naming where it broke."""
    if not raw.strip():
        raise InvalidInputError("a JSON body is required", {"reason": "empty_body"})
    limit = json_problem(raw.decode("utf-8", "replace"))
    if limit is not None:
        where = {"line": limit.line, "column": limit.column}
        raise InvalidInputError(
            f"the body is refused at line {limit.line}, column {limit.column}: {limit.message}",
            {"reason": "bad_json", **where},
        )
    try:
        value = json.loads(raw, parse_constant=_no_constant, parse_float=_number)
    except (ValueError, RecursionError) as exc:
        raise InvalidInputError(f"the body is not JSON: {exc}", {"reason": "bad_json"}) from None
    check_storable(value, "$")
    return value


def _message(error: ValidationError) -> str:
    """The validator's words, except for a writeOnly value (a token): its rule, never the value."""
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    branches = [schema, *schema.get("anyOf", []), *schema.get("oneOf", [])]
    if any(isinstance(b, Mapping) and b.get("writeOnly") for b in branches):
        return f"does not satisfy its {error.validator} rule"
    return schema_whole_problem(error) or _clipped(error)


def _clipped(error: ValidationError) -> str:
    """The validator's words with the value they quote as bounds.shown quotes it: a 1e308 that
    JSON made a whole number, or a long text, is never echoed in full."""
    try:
        quoted = repr(error.instance)
    except ValueError:  # a whole number with more digits than Python writes out
        quoted = ""
    message = error.message
    if quoted and quoted in message:
        message = message.replace(quoted, shown(error.instance))
    return message if len(message) <= MESSAGE_MAX else message[: MESSAGE_MAX - 1] + "…"


def validate_body(validator: Draft202012Validator, body: Any) -> None:
    """INVALID_INPUT listing every way the body breaks the operation's schema."""
    problems = sorted(
        {
            ("$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in e.absolute_path))
            + ": "
            + _message(e)
            for e in validator.iter_errors(body)
        }
    )
    if problems:
        raise InvalidInputError(
            "invalid request body: " + "; ".join(problems[:10]), {"problems": problems[:50]}
        )


def _pattern(
    _validator: Any, pattern: str, instance: Any, _schema: Any
) -> Iterator[ValidationError]:
    if isinstance(instance, str) and not matches(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


# Patterns read as the document's readers (ECMA-262) read them: a final $ is the end of the text.
BodyValidator: Any = validators.extend(  # type: ignore[no-untyped-call]
    Draft202012Validator, {"pattern": _pattern}
)


def body_validator(schemas: Mapping[str, Any], name: str) -> Draft202012Validator:
    """A validator of one component schema, its references resolved within the components."""
    root = {"$ref": f"#/components/schemas/{name}", "components": {"schemas": dict(schemas)}}
    validator: Draft202012Validator = BodyValidator(root)
    return validator


async def require_live_token(request: Request, token: str | None) -> None:
    """UNAUTHENTICATED unless the bearer token is live (known, not revoked, not expired).

    Runs before anything of the request is parsed or validated, so an anonymous caller
    never learns the schema's verdict; the API call checks the token again in its own
    transaction.
    """
    await run_in_threadpool(served(request).fleet.api.iam.check_token, token)


async def _call_for(
    op: Operation, request: Request, validator: Draft202012Validator | None
) -> Call:
    ctx = served(request)
    token = bearer_token(request, required=op.auth)
    if op.auth:
        await require_live_token(request, token)
    path = dict(request.path_params)
    check_storable(path, "path")
    problems = op.path_problems(path)
    if problems:
        raise InvalidInputError("; ".join(problems), {"problems": problems})
    query = {p.name: p.parse(request) for p in op.query}
    check_storable([v for v in query.values() if isinstance(v, str)], "query")
    body: Any = None
    if op.request is not None:
        body = parse_json(await read_body(request, ctx.max_body_bytes))
        if validator is not None:
            validate_body(validator, body)
    return Call(ctx.fleet, token, path, query, body, ctx.tenants)


def endpoint_for(op: Operation, validator: Draft202012Validator | None) -> Endpoint:
    """The Starlette endpoint of an operation (raw endpoints keep only the error rendering)."""

    async def endpoint(request: Request) -> Response:
        request.scope["bcfleet.route"] = op.path
        try:
            if op.endpoint is not None:
                if op.auth:
                    await require_live_token(request, bearer_token(request, required=True))
                return await op.endpoint(request)
            call = await _call_for(op, request, validator)
            assert op.handler is not None
            result = await run_in_threadpool(op.handler, call)
        except FleetError as error:
            return error_response(error)
        except Exception as exc:
            log_unexpected(f"{op.method} {op.path}", exc, debug=served(request).debug)
            return unexpected_error_response(exc)
        if op.response_media != "application/json":
            return Response(str(result), media_type=op.response_media, status_code=op.status)
        return JSONResponse(result, status_code=op.status)

    return endpoint

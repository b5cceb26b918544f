"""Operations: one documented route each; app.py serves them and openapi.py describes them.

An Operation names its method, path, body and response schemas, query parameters and a
synchronous handler. The handler gets a Call (the bearer token, path and query values,
the validated JSON body) and calls ``fleet.api``; app.py runs it in a worker thread.
Serving and documenting the same list is how the OpenAPI document stays true.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from threading import Lock
from typing import Any

from starlette.requests import Request
from starlette.responses import Response

from bcfleet.domain.bounds import (
    INTEGER_DIGITS_MAX,
    INTEGER_TEXT_WORDS,
    integer_form,
    parse_integer,
    shown,
)
from bcfleet.domain.pages import Page
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.http.rules import STORABLE_PATTERN, matches

TENANT_CACHE_SECONDS = 60.0


@dataclass(frozen=True)
class Param:
    """A query parameter or header: integer (always bounded, both ends), string, boolean or a
    repeatable string. A string's ``text`` is its JSON Schema (rules.py); parse() holds the raw
    value to exactly that schema, so the document and the server cannot disagree."""

    name: str
    kind: str = "string"  # string | integer | boolean | strings
    description: str = ""
    minimum: int | None = None
    maximum: int | None = None
    default: Any = None
    enum: tuple[str, ...] = ()
    text: Mapping[str, Any] | None = None  # the schema of a string (or of each of strings)

    def __post_init__(self) -> None:
        if self.kind == "integer" and (self.minimum is None or self.maximum is None):
            raise ValueError(f"integer query parameter {self.name} needs a minimum and a maximum")

    def _string_schema(self) -> dict[str, Any]:
        if self.enum:
            return {"type": "string", "enum": list(self.enum)}
        return dict(self.text) if self.text is not None else {**PATH_REFERENCE, "minLength": 0}

    def schema(self) -> dict[str, Any]:
        """The parameter's JSON Schema."""
        if self.kind == "strings":
            return {"type": "array", "items": self._string_schema()}
        body: dict[str, Any] = (
            self._string_schema() if self.kind == "string" else {"type": self.kind}
        )
        if self.minimum is not None:
            body["minimum"] = self.minimum
        if self.maximum is not None:
            body["maximum"] = self.maximum
        if self.default is not None:
            body["default"] = self.default
        return body

    def parse(self, request: Request) -> Any:
        """The parameter's value from the query string; INVALID_INPUT when it is malformed."""
        if self.kind == "strings":
            return tuple(self._string(raw) for raw in request.query_params.getlist(self.name))
        raw = request.query_params.get(self.name)
        if raw is None:
            return self.default
        if self.kind == "integer":
            return self._integer(raw)
        if self.kind == "boolean":
            if raw.lower() not in ("true", "false"):
                raise self._bad(raw, "true or false")
            return raw.lower() == "true"
        return self._string(raw)

    def _string(self, raw: str) -> str:
        if self.enum and raw not in self.enum:
            raise self._bad(raw, "one of " + ", ".join(self.enum))
        schema = self._string_schema()
        problem = string_problem(schema, raw)
        if problem is not None:
            raise self._bad(raw, problem)
        return raw

    def _integer(self, raw: str) -> int:
        """bounds.parse_integer: what OpenAPI's integer writes (ASCII digits, an optional '-',
        an optional fraction of zeros)."""
        value = parse_integer(raw)
        if value is None and integer_form(raw) and self.maximum is not None:
            raise self._bad(raw, f"between {self.minimum} and {self.maximum}")  # too many digits
        if value is None:
            raise self._bad(
                raw,
                f"a whole number written in ASCII digits, at most {INTEGER_DIGITS_MAX} of them "
                f"({INTEGER_TEXT_WORDS})",
            )
        if (self.minimum is not None and value < self.minimum) or (
            self.maximum is not None and value > self.maximum
        ):
            raise self._bad(raw, f"between {self.minimum} and {self.maximum}")
        return value

    def _bad(self, raw: str, wanted: str) -> InvalidInputError:
        return InvalidInputError(
            f"query parameter {self.name} must be {wanted}, got {shown(raw)}",
            {"parameter": self.name, "value": shown(raw)},
        )


PATH_REFERENCE = {"type": "string", "minLength": 1, "pattern": STORABLE_PATTERN}


def page_limit(page: Page, description: str = "At most this many.") -> Param:
    """The `limit` query parameter of a list: its default and maximum from domain.pages."""
    return Param(
        "limit", "integer", description, minimum=1, maximum=page.maximum, default=page.default
    )


def string_problem(schema: Mapping[str, Any], raw: str) -> str | None:
    """What a string breaks of a string schema's length and pattern (and its wording), or None."""
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    if len(raw) < low or (high is not None and len(raw) > high):
        return f"{low} to {high} characters" if high is not None else f"at least {low} characters"
    pattern = schema.get("pattern")
    if pattern is not None and not matches(pattern, raw):
        return f"text matching {pattern}"
    return None


TENANT = Param("tenant", description="Act as (and see as) this tenant; root's admin only.")


class TenantResolver:
    """The tenant of a token, remembered briefly: principals never change tenants."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self._cache: dict[str, tuple[float, str]] = {}
        self._lock = Lock()

    def tenant_of(self, token: str) -> str:
        """The tenant the token belongs to (the API re-checks the token on every call)."""
        now = time.monotonic()
        with self._lock:
            hit = self._cache.get(token)
        if hit is not None and hit[0] > now:
            return hit[1]
        ids = [t["id"] for t in self.fleet.api.tenants.list(token)["items"]]
        tenant = ROOT_TENANT if ROOT_TENANT in ids else ids[0]
        with self._lock:
            if len(self._cache) > 10_000:
                self._cache.clear()
            self._cache[token] = (now + TENANT_CACHE_SECONDS, tenant)
        return tenant


@dataclass
class Call:
    """One request as a handler sees it: never a LOCAL_OPERATOR, only the bearer token."""

    fleet: Fleet
    token: str | None
    path: Mapping[str, str]
    query: Mapping[str, Any]
    body: Any
    tenants: TenantResolver

    @property
    def api(self) -> Any:
        return self.fleet.api

    @property
    def tenant(self) -> str | None:
        """The ?tenant= the caller asked to act as, if any."""
        value = self.query.get("tenant")
        return str(value) if value is not None else None

    def acting_tenant(self) -> str:
        """?tenant=, else the token's own tenant: for calls that need a tenant id."""
        if self.tenant is not None:
            return self.tenant
        if not self.token:
            return ""  # the API answers UNAUTHENTICATED
        return self.tenants.tenant_of(self.token)

    def field(self, name: str, default: Any = None) -> Any:
        """A field of the JSON body (bodies are objects once validated)."""
        if isinstance(self.body, Mapping):
            return self.body.get(name, default)
        return default


Handler = Callable[[Call], Any]
Endpoint = Callable[[Request], Awaitable[Response]]


@dataclass(frozen=True)
class Operation:
    """One route: how it is served and how it is documented."""

    method: str
    path: str
    operation_id: str
    summary: str
    tag: str
    handler: Handler | None = None
    endpoint: Endpoint | None = None  # a raw endpoint (streams), still documented
    status: int = 200
    request: str | None = None  # component schema of the JSON body
    response: str | None = None  # component schema of the success body
    response_media: str = "application/json"
    other_media: tuple[str, ...] = ()  # further media types of the success answer (CSV, say)
    query: tuple[Param, ...] = ()
    headers: tuple[Param, ...] = ()  # request headers the operation reads (Last-Event-ID, say)
    auth: bool = True
    response_headers: Mapping[str, str] = field(default_factory=dict)
    description: str = ""
    path_text: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # by path parameter

    @property
    def path_params(self) -> list[str]:
        return [part[1:-1] for part in self.path.split("/") if part.startswith("{")]

    def path_schema(self, name: str) -> dict[str, Any]:
        """A path parameter's JSON Schema: an id or name to look up unless path_text says more."""
        given = self.path_text.get(name)
        return dict(given) if given is not None else dict(PATH_REFERENCE)

    def path_problems(self, values: Mapping[str, str]) -> list[str]:
        """How the path's values break their schemas (served operations check them first)."""
        found = []
        for name in self.path_params:
            problem = string_problem(self.path_schema(name), values.get(name, ""))
            if problem is not None:
                found.append(f"path parameter {name} must be {problem}")
        return found

"""The fake Hetzner's in-memory project and fault knobs; fake_server.py puts it behind real HTTP.

Everything here is synchronous and guarded by one lock: :meth:`FakeState.handle`
takes a request (method, path, query, JSON body, Authorization header) and
returns a :class:`Reply`. The HTTP layer only adds the slow-response and
hang-after-create waits, which must not hold the lock.

It keeps Hetzner's rules that matter to bcfleet: bearer tokens, pages
(``page``/``per_page``, ``meta.pagination``), unique server names
(409 ``uniqueness_error``), label selectors, a token bucket of
``RateLimit-Limit`` requests refilled one per ``3600 / limit`` seconds with
``RateLimit-*`` headers on every answer, and Hetzner's error documents.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bcfleet.clock import Clock, SystemClock, format_time, parse_time
from bcfleet.providers import fake_catalog
from bcfleet.providers.fake_labels import LabelError, matches_selector, validate_labels

DEFAULT_PER_PAGE = 25
MAX_PER_PAGE = 50
MAX_LOG = 10_000
_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9-]{1,63})*$"
)
_SERVER_PATH = re.compile(r"^/servers/(\d+)$")


@dataclass
class Reply:
    """One answer: status, JSON body, extra headers, and how long to wait before sending it."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    hang_seconds: float = 0.0


@dataclass(frozen=True)
class RequestRecord:
    """What the fake was asked, for tests to count and inspect."""

    method: str
    path: str
    query: dict[str, str]


@dataclass
class Faults:
    """Knobs tests turn; counters go down by one per request they affect."""

    rate_limited: int = 0
    rate_limit_reset_in: float = 1.0
    unavailable_creates: int = 0
    sold_out: set[tuple[str, str]] = field(default_factory=set)
    delay_seconds: float = 0.0
    hang_after_create: int = 0
    hang_seconds: float = 30.0
    fail_times: int = 0
    fail_status: int = 503
    fail_code: str = "unavailable"
    fail_method: str | None = None
    fail_path: str | None = None


class HetznerError(Exception):
    """Raised inside handlers; becomes Hetzner's error document."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details if details is not None else {}


class FakeState:
    """One Hetzner Cloud project: servers, catalogue, rate-limit bucket, faults, request log."""

    def __init__(
        self,
        token: str | None = None,
        clock: Clock | None = None,
        rate_limit: int = 3600,
        boot_seconds: float = 5.0,
    ) -> None:
        self.lock = threading.RLock()
        self.token = token
        self.clock = clock or SystemClock()
        self.boot_seconds = boot_seconds
        self.faults = Faults()
        self.requests: list[RequestRecord] = []
        self.servers: dict[int, dict[str, Any]] = {}
        self.set_rate_limit(rate_limit)
        self._next_server_id = 4_000_001
        self._next_action_id = 9_000_001

    # ----- knobs -------------------------------------------------------------------------

    def set_rate_limit(self, limit: int, remaining: int | None = None) -> None:
        """A bucket of ``limit`` requests per hour, full or holding ``remaining`` of them."""
        with self.lock:
            self.rate_limit = max(1, int(limit))
            level = self.rate_limit if remaining is None else min(remaining, self.rate_limit)
            self._tokens = float(max(0, level))
            self._refilled_at = self._now_ts()

    def reset(self, keep_servers: bool = False) -> None:
        """Clear faults, the request log and (unless kept) the servers."""
        with self.lock:
            self.faults = Faults()
            self.requests.clear()
            if not keep_servers:
                self.servers.clear()
            self.set_rate_limit(self.rate_limit)

    def seed_server(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create a server as POST /servers would, bypassing auth, faults and the log."""
        with self.lock:
            reply = self._create_server(body, with_faults=False)
            server: dict[str, Any] = reply.body["server"]
            return server

    def server_json(self) -> list[dict[str, Any]]:
        """Every server as GET /servers shows it, by id."""
        with self.lock:
            return [self._server_json(self.servers[i]) for i in sorted(self.servers)]

    def server_names(self) -> list[str]:
        """The names of every server, sorted."""
        with self.lock:
            return sorted(server["name"] for server in self.servers.values())

    def count(self, method: str, path: str) -> int:
        """How many requests with this method and path the fake has seen."""
        with self.lock:
            return sum(1 for r in self.requests if r.method == method and r.path == path)

    # ----- the request path --------------------------------------------------------------

    def handle(
        self,
        method: str,
        path: str,
        query: dict[str, str],
        body: Any,
        authorization: str | None,
    ) -> Reply:
        """Answer one API request (path without the ``/v1`` prefix)."""
        with self.lock:
            if len(self.requests) < MAX_LOG:
                self.requests.append(RequestRecord(method, path, dict(query)))
            headers = self._take_budget()
            try:
                self._authenticate(authorization)
                self._forced_faults(method, path)
                reply = self._route(method, path, query, body)
            except HetznerError as exc:
                reply = Reply(exc.status, _error_body(exc))
            reply.headers.update(headers)
            if reply.status == 429:
                reply.headers.update(self._exhausted_headers())
            return reply

    def _authenticate(self, authorization: str | None) -> None:
        scheme, _, presented = (authorization or "").partition(" ")
        valid = scheme.lower() == "bearer" and bool(presented.strip())
        if valid and self.token is not None:
            valid = presented.strip() == self.token
        if not valid:
            raise HetznerError(401, "unauthorized", "unable to authenticate")

    def _forced_faults(self, method: str, path: str) -> None:
        faults = self.faults
        if faults.rate_limited > 0:
            faults.rate_limited -= 1
            raise HetznerError(429, "rate_limit_exceeded", "limit of requests per hour reached")
        if faults.fail_times > 0 and _fault_matches(faults, method, path):
            faults.fail_times -= 1
            raise HetznerError(faults.fail_status, faults.fail_code, f"forced {faults.fail_code}")
        if self._tokens < 1.0:
            raise HetznerError(429, "rate_limit_exceeded", "limit of requests per hour reached")
        self._tokens -= 1.0

    def _route(self, method: str, path: str, query: dict[str, str], body: Any) -> Reply:
        if method == "GET" and path == "/server_types":
            return Reply(200, _page(fake_catalog.server_types(), "server_types", query))
        if method == "GET" and path == "/datacenters":
            datacenters = fake_catalog.datacenters(self.faults.sold_out)
            return Reply(200, _page(datacenters, "datacenters", query))
        if method == "GET" and path == "/locations":
            names = list(fake_catalog.LOCATIONS)
            return Reply(
                200, _page([fake_catalog.location_json(n) for n in names], "locations", query)
            )
        if path == "/servers":
            if method == "GET":
                return Reply(200, _page(self._list_servers(query), "servers", query))
            if method == "POST":
                return self._create_server(body)
        match = _SERVER_PATH.match(path)
        if match and method in ("GET", "DELETE"):
            return self._one_server(method, int(match.group(1)))
        raise HetznerError(404, "not_found", f"no route {method} {path}")

    # ----- servers -----------------------------------------------------------------------

    def _list_servers(self, query: dict[str, str]) -> list[dict[str, Any]]:
        name = query.get("name")
        selector = query.get("label_selector")
        result = []
        for server_id in sorted(self.servers):
            server = self.servers[server_id]
            if name is not None and server["name"] != name:
                continue
            if selector and not _selected(server["labels"], selector):
                continue
            result.append(self._server_json(server))
        return result

    def _one_server(self, method: str, server_id: int) -> Reply:
        server = self.servers.get(server_id)
        if server is None:
            raise HetznerError(404, "not_found", f"server with ID '{server_id}' not found")
        if method == "GET":
            return Reply(200, {"server": self._server_json(server)})
        del self.servers[server_id]
        return Reply(200, {"action": self._action("delete_server", server_id)})

    def _create_server(self, body: Any, with_faults: bool = True) -> Reply:
        request = _create_request(body)
        server_type = _server_type(request["server_type"])
        location = request["location"] or server_type["prices"][0]["location"]
        self._check_orderable(server_type, location, with_faults)
        if any(s["name"] == request["name"] for s in self.servers.values()):
            raise HetznerError(
                409,
                "uniqueness_error",
                "server name is already used",
                {"fields": [{"name": "name"}]},
            )
        server_id = self._next_server_id
        self._next_server_id += 1
        self.servers[server_id] = {
            "id": server_id,
            "name": request["name"],
            "labels": request["labels"],
            "server_type": server_type["name"],
            "location": location,
            "image": request["image"],
            "created": self.clock.now(),
        }
        answer = {
            "server": self._server_json(self.servers[server_id]),
            "action": self._action("create_server", server_id),
            "next_actions": [self._action("start_server", server_id)],
            "root_password": None,
        }
        return Reply(201, answer, hang_seconds=self._hang_after_create() if with_faults else 0.0)

    def _check_orderable(self, server_type: dict[str, Any], location: str, faults: bool) -> None:
        name = server_type["name"]
        if location not in {p["location"] for p in server_type["prices"]}:
            raise HetznerError(
                400, "invalid_input", f"server type {name} is not available in {location}"
            )
        deprecation = server_type.get("deprecation") or {}
        end_of_sale = deprecation.get("unavailable_after")
        ended = bool(end_of_sale) and parse_time(str(end_of_sale)) <= self.clock.now()
        if faults and self.faults.unavailable_creates > 0:
            self.faults.unavailable_creates -= 1
            ended = True
        if ended or (faults and (name, location) in self.faults.sold_out):
            raise HetznerError(
                412,
                "resource_unavailable",
                f"server type {name} is currently unavailable in {location}",
                {"server_type": name, "location": location},
            )

    def _hang_after_create(self) -> float:
        if self.faults.hang_after_create <= 0:
            return 0.0
        self.faults.hang_after_create -= 1
        return self.faults.hang_seconds

    def _server_json(self, server: dict[str, Any]) -> dict[str, Any]:
        created: datetime = server["created"]
        booted = (self.clock.now() - created).total_seconds() >= self.boot_seconds
        datacenter = next(
            dc
            for dc in fake_catalog.datacenters(self.faults.sold_out)
            if dc["location"]["name"] == server["location"]
        )
        return {
            "id": server["id"],
            "name": server["name"],
            "status": "running" if booted else "initializing",
            "created": format_time(created),
            "labels": dict(server["labels"]),
            "server_type": _server_type(server["server_type"]),
            "datacenter": datacenter,
            "location": datacenter["location"],
            "image": {"id": 161547269, "type": "system", "name": server["image"]},
            "public_net": {
                "ipv4": {"ip": f"198.51.100.{server['id'] % 250 + 1}", "blocked": False},
                "ipv6": {"ip": f"2001:db8:{server['id'] % 65535:x}::/64", "blocked": False},
            },
            "private_net": [],
            "protection": {"delete": False, "rebuild": False},
            "locked": False,
        }

    def _action(self, command: str, server_id: int) -> dict[str, Any]:
        action_id = self._next_action_id
        self._next_action_id += 1
        return {
            "id": action_id,
            "command": command,
            "status": "running",
            "progress": 0,
            "started": format_time(self.clock.now()),
            "finished": None,
            "resources": [{"id": server_id, "type": "server"}],
            "error": None,
        }

    # ----- rate limit bucket -------------------------------------------------------------

    def _now_ts(self) -> float:
        return self.clock.now().timestamp()

    def _take_budget(self) -> dict[str, str]:
        """Refill the bucket for the time passed; the headers describe it before this request."""
        now = self._now_ts()
        rate = self.rate_limit / 3600.0
        self._tokens = min(float(self.rate_limit), self._tokens + (now - self._refilled_at) * rate)
        self._refilled_at = now
        remaining = max(0, math.floor(self._tokens) - 1)
        full_at = now + (self.rate_limit - remaining) / rate
        return {
            "RateLimit-Limit": str(self.rate_limit),
            "RateLimit-Remaining": str(remaining),
            "RateLimit-Reset": str(math.ceil(full_at)),
        }

    def _exhausted_headers(self) -> dict[str, str]:
        reset = self._now_ts() + max(self.faults.rate_limit_reset_in, 0.0)
        if self._tokens < 1.0:
            reset = max(reset, self._now_ts() + (1.0 - self._tokens) * 3600.0 / self.rate_limit)
        return {"RateLimit-Remaining": "0", "RateLimit-Reset": str(math.ceil(reset))}


def _error_body(exc: HetznerError) -> dict[str, Any]:
    return {"error": {"code": exc.code, "message": exc.message, "details": exc.details}}


def _fault_matches(faults: Faults, method: str, path: str) -> bool:
    if faults.fail_method is not None and faults.fail_method != method:
        return False
    return faults.fail_path is None or path.startswith(faults.fail_path)


def _selected(labels: dict[str, str], selector: str) -> bool:
    try:
        return matches_selector(labels, selector)
    except LabelError as exc:
        raise HetznerError(400, "invalid_input", str(exc)) from exc


def _page(items: list[dict[str, Any]], key: str, query: dict[str, str]) -> dict[str, Any]:
    """One page of ``items`` with Hetzner's meta.pagination."""
    page = _positive(query.get("page"), 1, "page")
    per_page = min(_positive(query.get("per_page"), DEFAULT_PER_PAGE, "per_page"), MAX_PER_PAGE)
    last_page = max(1, math.ceil(len(items) / per_page))
    start = (page - 1) * per_page
    return {
        key: items[start : start + per_page],
        "meta": {
            "pagination": {
                "page": page,
                "per_page": per_page,
                "previous_page": page - 1 if page > 1 else None,
                "next_page": page + 1 if page < last_page else None,
                "last_page": last_page,
                "total_entries": len(items),
            }
        },
    }


def _positive(raw: str | None, default: int, name: str) -> int:
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise HetznerError(400, "invalid_input", f"invalid {name}: {raw!r}")
    return int(raw)


def _server_type(name_or_id: Any) -> dict[str, Any]:
    for server_type in fake_catalog.server_types():
        if name_or_id in (server_type["name"], server_type["id"], str(server_type["id"])):
            return server_type
    raise HetznerError(400, "invalid_input", f"server type {name_or_id!r} not found")


def _create_request(body: Any) -> dict[str, Any]:
    """The validated fields of POST /servers."""
    if not isinstance(body, dict):
        raise HetznerError(400, "json_error", "request body must be a JSON object")
    name = body.get("name")
    if not isinstance(name, str) or not _HOSTNAME.match(name):
        raise _field_error("name", "must be a valid hostname")
    if body.get("server_type") in (None, ""):
        raise _field_error("server_type", "is required")
    if body.get("image") not in fake_catalog.IMAGES:
        raise _field_error("image", f"unknown image {body.get('image')!r}")
    location = body.get("location")
    if location is not None and location not in fake_catalog.LOCATIONS:
        raise _field_error("location", f"unknown location {location!r}")
    labels = body.get("labels") or {}
    try:
        validate_labels(labels)
    except LabelError as exc:
        raise _field_error("labels", str(exc)) from exc
    return {
        "name": name,
        "server_type": body["server_type"],
        "image": body["image"],
        "location": location,
        "labels": dict(labels),
    }


def _field_error(name: str, message: str) -> HetznerError:
    return HetznerError(
        400,
        "invalid_input",
        f"invalid input in field '{name}'",
        {"fields": [{"name": name, "messages": [message]}]},
    )

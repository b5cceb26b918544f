"""The fake Hetzner's in-memory project and fault knobs; fake_server.py puts it behind real HTTP.

Everything here is synchronous and guarded by one lock: :meth:`FakeState.handle`
takes a request (method, path, query, JSON body, Authorization header) and
returns a :class:`Reply`. The HTTP layer only adds the slow-response and
hang-after-create waits, which must not hold the lock.

It keeps Hetzner's rules as the API is today and as its clients (bcfleet and
the official hcloud-python) meet them: bearer tokens, pages (``page``/
``per_page``, ``meta.pagination`` and ``Link``), unique server names
(409 ``uniqueness_error``), label selectors, actions that a create, delete or
power-off starts and ``GET /actions/{id}`` follows (bcfleet/providers/
fake_actions.py), ``GET /datacenters`` answering 410
``deprecated_api_endpoint`` (removed by Hetzner), a token bucket of
``RateLimit-Limit`` requests refilled one per ``3600 / limit`` seconds with
``RateLimit-*`` headers on every answer (``RateLimit-Reset`` is the UNIX time
at which the bucket is full again), and Hetzner's error documents.
"""

from __future__ import annotations

import math
import re
import threading
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bcfleet.clock import Clock, SystemClock, parse_time
from bcfleet.providers import fake_catalog
from bcfleet.providers.fake_actions import ActionBook
from bcfleet.providers.fake_labels import LabelError, matches_selector, validate_labels
from bcfleet.providers.fake_shapes import HetznerError, Reply, error_body, page, server_json

MAX_LOG = 10_000
DELETE_SECONDS = 1.0
_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9-]{1,63})*$"
)
_POWER = {"poweroff": ("stop_server", "off"), "poweron": ("start_server", "on")}


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
        self.actions = ActionBook()
        self.set_rate_limit(rate_limit)
        self._next_server_id = 4_000_001

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
            self.actions.failures.clear()
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
                reply = Reply(exc.status, error_body(exc))
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
        parts = path.strip("/").split("/")
        if parts[0] == "datacenters":
            raise HetznerError(
                410, "deprecated_api_endpoint", "the datacenters endpoints have been removed"
            )
        if method == "GET" and len(parts) <= 2:
            listed = self._catalogue(parts, query)
            if listed is not None:
                return listed
        if parts[0] == "servers":
            return self._servers(method, parts[1:], query, body)
        raise HetznerError(404, "not_found", f"no route {method} {path}")

    def _catalogue(self, parts: list[str], query: dict[str, str]) -> Reply | None:
        """GET on the read-only collections (and one item of each), or None for other paths."""
        collections = {
            "server_types": lambda: fake_catalog.server_types(self.faults.sold_out, self._ended()),
            "locations": fake_catalog.locations,
            "images": fake_catalog.images,
        }
        singular = {"server_types": "server_type", "locations": "location", "images": "image"}
        if parts[0] == "actions" and len(parts) == 2:
            return self._one_action(_number(parts[1]))
        if parts[0] not in collections:
            return None
        items = collections[parts[0]]()
        if len(parts) == 1:
            return page(_filtered(items, query), parts[0], query)
        wanted = _number(parts[1])
        for item in items:
            if item["id"] == wanted:
                return Reply(200, {singular[parts[0]]: item})
        raise HetznerError(404, "not_found", f"{singular[parts[0]]} with ID '{wanted}' not found")

    def _servers(self, method: str, rest: list[str], query: dict[str, str], body: Any) -> Reply:
        if not rest:
            if method == "GET":
                return page(self._list_servers(query), "servers", query)
            if method == "POST":
                return self._create_server(body)
        elif len(rest) == 1 and method in ("GET", "DELETE"):
            return self._one_server(method, _number(rest[0]))
        elif len(rest) >= 2 and rest[1] == "actions":
            return self._server_actions(method, _number(rest[0]), rest[2:], query)
        raise HetznerError(404, "not_found", f"no route {method} /servers/{'/'.join(rest)}")

    def _server_actions(
        self, method: str, server_id: int, rest: list[str], query: dict[str, str]
    ) -> Reply:
        now = self.clock.now()
        if method == "GET" and not rest:
            self._server(server_id)
            return page(self.actions.of_server(server_id, now), "actions", query)
        if method == "GET" and len(rest) == 1:
            found = self.actions.get(_number(rest[0]), now)
            if found is None or all(r["id"] != server_id for r in found["resources"]):
                raise HetznerError(404, "not_found", f"action with ID '{rest[0]}' not found")
            return Reply(200, {"action": found})
        if method == "POST" and len(rest) == 1 and rest[0] in _POWER:
            server = self._server(server_id)
            command, power = _POWER[rest[0]]
            server["power"] = power
            return Reply(201, {"action": self.actions.start(command, server_id, now, 0.0)})
        raise HetznerError(404, "not_found", f"no route {method} /servers/{server_id}/actions")

    def _one_action(self, action_id: int) -> Reply:
        found = self.actions.get(action_id, self.clock.now())
        if found is None:
            raise HetznerError(404, "not_found", f"action with ID '{action_id}' not found")
        return Reply(200, {"action": found})

    def _ended(self) -> set[str]:
        """The server types past their end of sale now."""
        now = self.clock.now()
        ended = set()
        for server_type in fake_catalog.server_types():
            end = fake_catalog.end_of_sale(server_type)
            if end is not None and parse_time(end) <= now:
                ended.add(str(server_type["name"]))
        return ended

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

    def _server(self, server_id: int) -> dict[str, Any]:
        server = self.servers.get(server_id)
        if server is None:
            raise HetznerError(404, "not_found", f"server with ID '{server_id}' not found")
        return server

    def _one_server(self, method: str, server_id: int) -> Reply:
        server = self._server(server_id)
        if method == "GET":
            return Reply(200, {"server": self._server_json(server)})
        del self.servers[server_id]
        action = self.actions.start("delete_server", server_id, self.clock.now(), DELETE_SECONDS)
        return Reply(200, {"action": action})

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
        now = self.clock.now()
        self.servers[server_id] = {
            "id": server_id,
            "name": request["name"],
            "labels": request["labels"],
            "server_type": server_type["name"],
            "location": location,
            "image": request["image"],
            "created": now,
            "power": "on",
        }
        action = self.actions.start("create_server", server_id, now, self.boot_seconds)
        if self.actions.fails(action):
            self.servers[server_id]["power"] = "off"
        answer = {
            "server": self._server_json(self.servers[server_id]),
            "action": action,
            "next_actions": [self.actions.start("start_server", server_id, now, self.boot_seconds)],
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
        if not booted:
            status = "initializing"
        else:
            status = "running" if server.get("power", "on") == "on" else "off"
        types = fake_catalog.server_types(self.faults.sold_out, self._ended())
        server_type = next(t for t in types if t["name"] == server["server_type"])
        return server_json(server, server_type, status)

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
        """A 429's headers: the bucket is full again at the reset (or when a knob says)."""
        reset = self._now_ts() + max(self.faults.rate_limit_reset_in, 0.0)
        if self._tokens < 1.0:
            refill = (self.rate_limit - self._tokens) * 3600.0 / self.rate_limit
            reset = max(reset, self._now_ts() + refill)
        return {"RateLimit-Remaining": "0", "RateLimit-Reset": str(math.ceil(reset))}


def _fault_matches(faults: Faults, method: str, path: str) -> bool:
    if faults.fail_method is not None and faults.fail_method != method:
        return False
    return faults.fail_path is None or path.startswith(faults.fail_path)


def _selected(labels: dict[str, str], selector: str) -> bool:
    try:
        return matches_selector(labels, selector)
    except LabelError as exc:
        raise HetznerError(400, "invalid_input", str(exc)) from exc


def _number(raw: str) -> int:
    if not raw.isdigit():
        raise HetznerError(400, "invalid_input", f"invalid ID: {raw!r}")
    return int(raw)


def _filtered(items: list[dict[str, Any]], query: dict[str, str]) -> list[dict[str, Any]]:
    """Items matching the query's ``name``, ``type`` and ``architecture`` filters."""
    kept = items
    for key in ("name", "type", "architecture"):
        if key in query:
            kept = [item for item in kept if str(item.get(key)) == query[key]]
    return kept


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
    image = _named(body.get("image"), fake_catalog.images())
    if image is None:
        raise _field_error("image", f"unknown image {body.get('image')!r}")
    location = body.get("location")
    if location is not None:
        location = _named(location, fake_catalog.locations())
        if location is None:
            raise _field_error("location", f"unknown location {body.get('location')!r}")
    labels = body.get("labels") or {}
    try:
        validate_labels(labels)
    except LabelError as exc:
        raise _field_error("labels", str(exc)) from exc
    return {
        "name": name,
        "server_type": body["server_type"],
        "image": image,
        "location": location,
        "labels": dict(labels),
    }


def _named(id_or_name: Any, items: list[dict[str, Any]]) -> str | None:
    """The name of the item a request names by id or by name (as hcloud sends either)."""
    for item in items:
        if id_or_name in (item["name"], item["id"], str(item["id"])):
            return str(item["name"])
    return None


def _field_error(name: str, message: str) -> HetznerError:
    return HetznerError(
        400,
        "invalid_input",
        f"invalid input in field '{name}'",
        {"fields": [{"name": name, "messages": [message]}]},
    )

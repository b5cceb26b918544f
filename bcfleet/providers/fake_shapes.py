"""JSON the fake Hetzner answers with: pages, servers and errors, as hcloud-python reads them.

Every field the official client's ``from_dict`` and bound models read is here
(a server's ``public_net.ipv4.dns_ptr``, ``iso``, ``rescue_enabled``,
``primary_disk_size``, …), and nothing Hetzner removed (no ``datacenter``:
a server's place is its ``location``). fake_state.py calls these under its lock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bcfleet.clock import format_time
from bcfleet.providers import fake_catalog

DEFAULT_PER_PAGE = 25
MAX_PER_PAGE = 50


class HetznerError(Exception):
    """Raised inside handlers; becomes Hetzner's error document."""

    def __init__(self, status: int, code: str, message: str, details: Any = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.details = details if details is not None else {}


@dataclass
class Reply:
    """One answer: status, JSON body, extra headers, pages to link, and a wait before sending.

    ``links`` maps a relation (``prev``, ``next``, ``last``) to a page number; the
    HTTP layer turns it into a ``Link`` header on the request's own URL.
    """

    status: int
    body: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    hang_seconds: float = 0.0
    links: dict[str, int] = field(default_factory=dict)


def error_body(exc: HetznerError) -> dict[str, Any]:
    """Hetzner's error document."""
    return {"error": {"code": exc.code, "message": exc.message, "details": exc.details}}


def page(items: list[dict[str, Any]], key: str, query: dict[str, str]) -> Reply:
    """One page of ``items`` with Hetzner's ``meta.pagination`` and the pages to link."""
    number = _positive(query.get("page"), 1, "page")
    per_page = min(_positive(query.get("per_page"), DEFAULT_PER_PAGE, "per_page"), MAX_PER_PAGE)
    last_page = max(1, math.ceil(len(items) / per_page))
    start = (number - 1) * per_page
    following = number + 1 if number < last_page else None
    previous = number - 1 if number > 1 else None
    links = {"last": last_page}
    if following is not None:
        links["next"] = following
    if previous is not None:
        links["prev"] = previous
    body = {
        key: items[start : start + per_page],
        "meta": {
            "pagination": {
                "page": number,
                "per_page": per_page,
                "previous_page": previous,
                "next_page": following,
                "last_page": last_page,
                "total_entries": len(items),
            }
        },
    }
    return Reply(200, body, links=links)


def _positive(raw: str | None, default: int, name: str) -> int:
    if raw is None:
        return default
    if not raw.isdigit() or int(raw) < 1:
        raise HetznerError(400, "invalid_input", f"invalid {name}: {raw!r}")
    return int(raw)


def server_json(server: dict[str, Any], server_type: dict[str, Any], status: str) -> dict[str, Any]:
    """A server as GET /servers/{id} shows it today."""
    created: datetime = server["created"]
    server_id = int(server["id"])
    ipv4 = f"198.51.100.{server_id % 250 + 1}"
    ipv6 = f"2001:db8:{server_id % 65535:x}::"
    return {
        "id": server_id,
        "name": server["name"],
        "status": status,
        "created": format_time(created),
        "labels": dict(server["labels"]),
        "server_type": server_type,
        "location": fake_catalog.location_json(server["location"]),
        "image": fake_catalog.image_json(server["image"]),
        "iso": None,
        "rescue_enabled": False,
        "locked": False,
        "backup_window": None,
        "outgoing_traffic": 0,
        "ingoing_traffic": 0,
        "included_traffic": server_type.get("included_traffic", 0),
        "primary_disk_size": server_type["disk"],
        "protection": {"delete": False, "rebuild": False},
        "public_net": {
            "ipv4": {
                "id": 10 * server_id + 1,
                "ip": ipv4,
                "blocked": False,
                "dns_ptr": f"static.{ipv4}.clients.your-server.de",
            },
            "ipv6": {
                "id": 10 * server_id + 2,
                "ip": f"{ipv6}/64",
                "blocked": False,
                "dns_ptr": [],
            },
            "floating_ips": [],
            "firewalls": [],
        },
        "private_net": [],
        "volumes": [],
        "load_balancers": [],
        "placement_group": None,
    }

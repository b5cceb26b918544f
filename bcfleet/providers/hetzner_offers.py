"""Hetzner server types → document 000's offers; pure, called by HetznerProvider.offers.

Everything comes from ``GET /server_types`` as Hetzner serves it today (the
datacenters endpoint is gone): one offer per server type and priced location,
``region`` being the location name. ``pricePerHour`` is the gross
``price_hourly`` (VAT included, as the project is billed; document 000's
0.0071 EUR for cx22 is that figure). Per location, the type's ``locations[]``
entry says whether it can be ordered now (``available``) and whether its end is
announced (``deprecation``); the type-wide ``deprecation``/``deprecated``
fields, which Hetzner is phasing out, count only where no per-location entry
says anything. An offer is unavailable when the entry says so, when the
location has no entry, or after the deprecation's ``unavailable_after``.
Hetzner Cloud only sells virtual servers, so every offer has kind ``vps``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bcfleet.clock import parse_time
from bcfleet.providers.base import Offer

KIND = "vps"


def offers_of(server_type: dict[str, Any], now: datetime, currency: str) -> list[Offer]:
    """The offers of one server type, one per priced location (KeyError/ValueError if malformed)."""
    per_location = _location_entries(server_type)
    offers = []
    for price in server_type.get("prices") or []:
        region = str(price["location"])
        entry = per_location.get(region) if per_location is not None else None
        deprecation = _deprecation(server_type, entry)
        sold_here = per_location is None or (entry is not None and entry.get("available", True))
        offers.append(
            Offer(
                id=str(server_type["name"]),
                kind=KIND,
                region=region,
                vcpu=int(server_type["cores"]),
                memory_gib=float(server_type["memory"]),
                disk_gib=int(server_type["disk"]),
                price_per_hour=float(price["price_hourly"]["gross"]),
                currency=currency,
                available=bool(sold_here) and not _past(deprecation, now),
                deprecated=deprecation is not None or _flagged(server_type, entry),
            )
        )
    return offers


def _location_entries(server_type: dict[str, Any]) -> dict[str, dict[str, Any]] | None:
    """The per-location entries (name → entry), or None when the answer has no ``locations``."""
    entries = server_type.get("locations")
    if entries is None:
        return None
    return {str(entry["name"]): entry for entry in entries}


def _deprecation(
    server_type: dict[str, Any], entry: dict[str, Any] | None
) -> dict[str, Any] | None:
    if entry is not None and "deprecation" in entry:
        found = entry.get("deprecation")
    else:
        found = server_type.get("deprecation")
    return found if isinstance(found, dict) and found else None


def _flagged(server_type: dict[str, Any], entry: dict[str, Any] | None) -> bool:
    """The phased-out boolean ``deprecated``, only where no per-location entry answers."""
    return entry is None and bool(server_type.get("deprecated"))


def _past(deprecation: dict[str, Any] | None, now: datetime) -> bool:
    if not deprecation or not deprecation.get("unavailable_after"):
        return False
    return parse_time(str(deprecation["unavailable_after"])) <= now

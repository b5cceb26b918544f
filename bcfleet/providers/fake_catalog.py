"""The fake Hetzner's catalogue: locations, datacenters, images and server types with prices.

Shapes follow the Hetzner Cloud API (``/server_types`` with per-location
``prices`` and ``locations``, ``/datacenters`` with ``server_types.available``).
Figures are close to Hetzner's public list prices (net EUR; gross with 19 %
VAT, rounded to four places as document 000 shows them). ``cx22`` and ``cx32``
are deprecated, as Hetzner announced in 2025; the fake keeps them orderable
until the ``unavailable_after`` below so both states can be exercised.
"""

from __future__ import annotations

import copy
from typing import Any

VAT = 1.19
DEPRECATION_CX_GEN2 = {
    "announced": "2025-10-16T06:00:00+00:00",
    "unavailable_after": "2027-01-01T00:00:00+00:00",
}

# name → (id, city, country, network zone)
LOCATIONS: dict[str, tuple[int, str, str, str]] = {
    "fsn1": (1, "Falkenstein", "DE", "eu-central"),
    "nbg1": (2, "Nuremberg", "DE", "eu-central"),
    "hel1": (3, "Helsinki", "FI", "eu-central"),
    "ash": (4, "Ashburn, VA", "US", "us-east"),
    "hil": (5, "Hillsboro, OR", "US", "us-west"),
    "sin": (6, "Singapore", "SG", "ap-southeast"),
}
DATACENTERS: dict[str, tuple[int, str]] = {
    "fsn1-dc14": (4, "fsn1"),
    "nbg1-dc3": (2, "nbg1"),
    "hel1-dc2": (3, "hel1"),
    "ash-dc1": (5, "ash"),
    "hil-dc1": (6, "hil"),
    "sin-dc1": (7, "sin"),
}
IMAGES = ("ubuntu-24.04", "ubuntu-22.04", "debian-12", "debian-13", "rocky-9", "fedora-42")
EU = ("fsn1", "nbg1", "hel1")
EVERYWHERE = tuple(LOCATIONS)
US_SG_MARKUP = 1.2

# name: (id, cores, memory GB, disk GB, cpu_type, architecture, category, net EUR/h,
#        net EUR/month, locations, deprecated)
_TYPES: dict[str, tuple[Any, ...]] = {
    "cx22": (104, 2, 4.0, 40, "shared", "x86", "cost_optimized", 0.0060, 3.79, EU, True),
    "cx32": (105, 4, 8.0, 80, "shared", "x86", "cost_optimized", 0.0109, 6.80, EU, True),
    "cx23": (114, 2, 4.0, 40, "shared", "x86", "cost_optimized", 0.0048, 2.99, EU, False),
    "cx33": (115, 4, 8.0, 80, "shared", "x86", "cost_optimized", 0.0080, 4.99, EU, False),
    "cx43": (116, 8, 16.0, 160, "shared", "x86", "cost_optimized", 0.0152, 9.49, EU, False),
    "cax11": (45, 2, 4.0, 40, "shared", "arm", "cost_optimized", 0.0062, 3.79, EU, False),
    "cpx22": (117, 2, 4.0, 80, "shared", "x86", "regular_purpose", 0.0096, 5.99, EVERYWHERE, False),
    "cpx32": (
        118,
        4,
        8.0,
        160,
        "shared",
        "x86",
        "regular_purpose",
        0.0168,
        10.49,
        EVERYWHERE,
        False,
    ),
    "ccx13": (
        96,
        2,
        8.0,
        80,
        "dedicated",
        "x86",
        "general_purpose",
        0.0200,
        12.49,
        EVERYWHERE,
        False,
    ),
}


def _money(net: float) -> dict[str, str]:
    return {"net": f"{net:.10f}", "gross": f"{round(net * VAT, 4):.10f}"}


def _price(location: str, hourly: float, monthly: float) -> dict[str, Any]:
    markup = 1.0 if location in EU else US_SG_MARKUP
    return {
        "location": location,
        "price_hourly": _money(round(hourly * markup, 4)),
        "price_monthly": _money(round(monthly * markup, 2)),
        "included_traffic": 20 * 1024**4 if location in EU else 1024**4,
        "price_per_tb_traffic": _money(1.0 if location in EU else 7.4),
    }


def location_json(name: str) -> dict[str, Any]:
    """One location as GET /locations would show it."""
    location_id, city, country, zone = LOCATIONS[name]
    return {
        "id": location_id,
        "name": name,
        "description": f"{city} DC Park 1" if country == "DE" else city,
        "country": country,
        "city": city,
        "network_zone": zone,
    }


def server_types() -> list[dict[str, Any]]:
    """Every server type, sorted by id like the API."""
    result = []
    for name, (
        type_id,
        cores,
        memory,
        disk,
        cpu,
        arch,
        category,
        hourly,
        monthly,
        where,
        old,
    ) in _TYPES.items():
        deprecation = copy.deepcopy(DEPRECATION_CX_GEN2) if old else None
        result.append(
            {
                "id": type_id,
                "name": name,
                "description": name.upper(),
                "category": category,
                "cores": cores,
                "memory": memory,
                "disk": disk,
                "deprecated": old,
                "deprecation": deprecation,
                "prices": [_price(loc, hourly, monthly) for loc in where],
                "storage_type": "local",
                "cpu_type": cpu,
                "architecture": arch,
                "locations": [
                    {"id": LOCATIONS[loc][0], "name": loc, "deprecation": deprecation}
                    for loc in where
                ],
            }
        )
    return sorted(result, key=lambda item: int(item["id"]))


def datacenters(sold_out: set[tuple[str, str]]) -> list[dict[str, Any]]:
    """Every datacenter; a (type, location) in ``sold_out`` is supported but not available."""
    types = server_types()
    result = []
    for name, (dc_id, location) in DATACENTERS.items():
        supported = [t["id"] for t in types if any(p["location"] == location for p in t["prices"])]
        names = {t["id"]: t["name"] for t in types}
        available = [i for i in supported if (names[i], location) not in sold_out]
        result.append(
            {
                "id": dc_id,
                "name": name,
                "description": f"{name} virtual DC",
                "location": location_json(location),
                "server_types": {
                    "supported": supported,
                    "available": available,
                    "available_for_migration": available,
                },
            }
        )
    return sorted(result, key=lambda item: int(item["id"]))

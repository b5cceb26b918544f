"""The fake Hetzner's catalogue: locations, images and server types with prices, as JSON.

Shapes follow the Hetzner Cloud API as it is today and as the official client
(hcloud-python) reads it: ``/server_types`` with per-location ``prices`` and
``locations[]`` entries carrying ``available``, ``recommended`` and
``deprecation``; no datacenters (Hetzner removed them). Figures are close to
Hetzner's public list prices (net EUR; gross with 19 % VAT, rounded to four
places as document 000 shows them). ``cx22`` and ``cx32``
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
# name → (id, os flavor, os version)
_IMAGES: dict[str, tuple[int, str, str]] = {
    "ubuntu-24.04": (161547269, "ubuntu", "24.04"),
    "ubuntu-22.04": (67794396, "ubuntu", "22.04"),
    "debian-12": (114690387, "debian", "12"),
    "debian-13": (246379261, "debian", "13"),
    "rocky-9": (76766499, "rocky", "9"),
    "fedora-42": (232895286, "fedora", "42"),
}
IMAGES = tuple(_IMAGES)
_IMAGE_CREATED = "2024-04-25T09:00:00+00:00"
# Latitude and longitude of each location's city, as GET /locations shows them.
_COORDINATES: dict[str, tuple[float, float]] = {
    "fsn1": (50.47612, 12.370071),
    "nbg1": (49.452102, 11.076665),
    "hel1": (60.169855, 24.938379),
    "ash": (39.045821, -77.487073),
    "hil": (45.54222, -122.951924),
    "sin": (1.283333, 103.833333),
}
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
    latitude, longitude = _COORDINATES[name]
    return {
        "id": location_id,
        "name": name,
        "description": f"{city} DC Park 1" if country == "DE" else city,
        "country": country,
        "city": city,
        "latitude": latitude,
        "longitude": longitude,
        "network_zone": zone,
    }


def locations() -> list[dict[str, Any]]:
    """Every location, sorted by id like the API."""
    return sorted((location_json(name) for name in LOCATIONS), key=lambda item: int(item["id"]))


def image_json(name: str) -> dict[str, Any]:
    """One system image as GET /images shows it."""
    image_id, flavor, version = _IMAGES[name]
    return {
        "id": image_id,
        "type": "system",
        "status": "available",
        "name": name,
        "description": f"{flavor.capitalize()} {version}",
        "image_size": None,
        "disk_size": 5,
        "created": _IMAGE_CREATED,
        "created_from": None,
        "bound_to": None,
        "os_flavor": flavor,
        "os_version": version,
        "rapid_deploy": True,
        "protection": {"delete": False},
        "deprecated": None,
        "deprecation": None,
        "labels": {},
        "deleted": None,
        "architecture": "x86",
    }


def images() -> list[dict[str, Any]]:
    """Every system image, sorted by id like the API."""
    return sorted((image_json(name) for name in IMAGES), key=lambda item: int(item["id"]))


def server_types(
    sold_out: frozenset[tuple[str, str]] | set[tuple[str, str]] = frozenset(),
    ended: frozenset[str] | set[str] = frozenset(),
) -> list[dict[str, Any]]:
    """Every server type, sorted by id like the API.

    A (type, location) in ``sold_out`` and a type in ``ended`` (past its end of
    sale) are listed with ``available: false`` there.
    """
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
                "included_traffic": 20 * 1024**4,
                "locations": [
                    _type_location(name, loc, deprecation, sold_out, ended) for loc in where
                ],
            }
        )
    return sorted(result, key=lambda item: int(item["id"]))


def _type_location(
    name: str,
    location: str,
    deprecation: dict[str, Any] | None,
    sold_out: frozenset[tuple[str, str]] | set[tuple[str, str]],
    ended: frozenset[str] | set[str],
) -> dict[str, Any]:
    available = (name, location) not in sold_out and name not in ended
    return {
        "id": LOCATIONS[location][0],
        "name": location,
        "deprecation": copy.deepcopy(deprecation),
        "available": available,
        "recommended": available and deprecation is None,
    }


def end_of_sale(server_type: dict[str, Any]) -> str | None:
    """The ``unavailable_after`` of a type's deprecation, if any."""
    deprecation = server_type.get("deprecation") or {}
    found = deprecation.get("unavailable_after")
    return str(found) if found else None

"""What a host's agent learns about its guests: what to run, under an opaque id, never whose it is.

The host views (``instances.specs_for_host``, ``reservations.for_host``) and the agent's
state reports (``instances.report_state``) go through these functions for every caller but
root's admin (``auth.sees_guests``): a pool's owner, or its agent's token, learns each
guest's shape, placement, devices and state, and an id that is the same on every pull and
resolves when the agent reports on it, but never another tenant's instance names, tenant
ids or reservation ids (document 003: "Nothing a tenant can read reveals another tenant's
reservation").

The opaque id is a SHA-256 of (host id, object id), cut to 128 bits: the agent can tell
guests apart and act on them consistently, and nobody can turn it back into the id it
hides (object ids carry 80 random bits). Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import Any

GUEST_PREFIX = "gst_"

SPEC_FIELDS = ("state", "shape", "placement", "balloon", "gpus")
"""What an InstanceSpec keeps in the guest view: what the host needs to run the guest."""

BOOKING_FIELDS = ("state", "spot", "gpus", "start", "end")
"""What a GPU booking keeps: its devices and window, not whose reservation it is."""


def opaque_guest_id(host_id: str, object_id: str) -> str:
    """The id a host's agent knows a guest (an instance or a reservation) by."""
    digest = hashlib.sha256(f"bcfleet.guest\0{host_id}\0{object_id}".encode()).hexdigest()
    return GUEST_PREFIX + digest[:32]


def guest_spec(host_id: str, spec: Mapping[str, Any]) -> dict[str, Any]:
    """An InstanceSpec without its name, under its opaque id."""
    body: dict[str, Any] = {"id": opaque_guest_id(host_id, str(spec["id"]))}
    body.update((key, spec[key]) for key in SPEC_FIELDS if key in spec)
    return body


def guest_booking(host_id: str, item: Mapping[str, Any]) -> dict[str, Any]:
    """A reservation's bookings on a host without its id or tenant, under an opaque id."""
    body: dict[str, Any] = {"id": opaque_guest_id(host_id, str(item["reservationId"]))}
    body.update((key, item[key]) for key in BOOKING_FIELDS if key in item)
    return body


def find_guest(host_id: str, guest_id: str, object_ids: Iterable[str]) -> str | None:
    """The object id behind an opaque guest id among a host's guests, or None."""
    return next((o for o in object_ids if opaque_guest_id(host_id, o) == guest_id), None)

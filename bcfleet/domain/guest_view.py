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

import hashlib
import re
from collections.abc import Iterable
from typing import Annotated, NotRequired, TypedDict

from bcfleet.domain.instance_spec import InstanceSpecJson
from bcfleet.domain.json_types import OneOf, Time
from bcfleet.domain.states import ReservationState

GUEST_PREFIX = "gst_"
GUEST_ID = re.compile(GUEST_PREFIX + "[0-9a-f]{32}")
"""An opaque guest id as opaque_guest_id makes it."""


class HostBookingJson(TypedDict):
    """A reservation's GPUs on a node and their window. Root's admin gets the reservation's id
    and tenant; anyone else gets an opaque id (gst_…) instead."""

    id: NotRequired[str]
    reservationId: NotRequired[str]
    tenantId: NotRequired[str]
    state: Annotated[str, OneOf(tuple(ReservationState))]
    spot: bool
    gpus: list[str]
    start: Time
    end: Time


def opaque_guest_id(host_id: str, object_id: str) -> str:
    """The id a host's agent knows a guest (an instance or a reservation) by."""
    digest = hashlib.sha256(f"bcfleet.guest\0{host_id}\0{object_id}".encode()).hexdigest()
    return GUEST_PREFIX + digest[:32]


def is_guest_id(value: object) -> bool:
    """Whether a value is an opaque guest id (gst_ and 32 lower-case hex digits)."""
    return isinstance(value, str) and GUEST_ID.fullmatch(value) is not None


def guest_spec(host_id: str, spec: InstanceSpecJson) -> InstanceSpecJson:
    """An InstanceSpec without its name, under its opaque id: what the host needs to run it."""
    return {
        "id": opaque_guest_id(host_id, spec["id"]),
        "state": spec["state"],
        "shape": spec["shape"],
        "placement": spec["placement"],
        "balloon": spec["balloon"],
        "gpus": spec["gpus"],
    }


def guest_booking(host_id: str, item: HostBookingJson) -> HostBookingJson:
    """A reservation's bookings on a host without its id or tenant, under an opaque id: its
    devices and window, not whose reservation it is."""
    return {
        "id": opaque_guest_id(host_id, item["reservationId"]),
        "state": item["state"],
        "spot": item["spot"],
        "gpus": item["gpus"],
        "start": item["start"],
        "end": item["end"],
    }


def find_guest(host_id: str, guest_id: str, object_ids: Iterable[str]) -> str | None:
    """The object id behind an opaque guest id among a host's guests, or None."""
    return next((o for o in object_ids if opaque_guest_id(host_id, o) == guest_id), None)

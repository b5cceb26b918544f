"""Routes of GPU reservations (document 003): create, batch, list, get, cancel; capacity preview."""

from __future__ import annotations

from typing import Any

from bcfleet.api.documents import (
    HostReservationsJson,
    ReservationDeviceJson,
    ReservationJson,
    ReservationPageJson,
    ReservationWindowJson,
)
from bcfleet.api.reservations import (
    BINDINGS,
    MAX_BATCH,
    MAX_GPUS,
    MAX_NODES,
)
from bcfleet.domain.guest_view import HostBookingJson
from bcfleet.domain.idempotency import IDEMPOTENCY_KEY_MAX
from bcfleet.domain.preview_document import PreemptibleJson, PreviewCandidateJson, PreviewJson
from bcfleet.http.operations import TENANT, Call, Operation, Param
from bcfleet.http.rules import duration, one_of, reference, text, time
from bcfleet.http.schemas import (
    BOOL,
    array,
    nullable,
    obj,
)
from bcfleet.http.typed_schemas import document_schemas

TAG = "reservations"
BINDING = one_of(BINDINGS)
ASK = {
    "gpus": {"type": "integer", "minimum": 1, "maximum": MAX_GPUS},
    "duration": duration(what="How long the GPUs are held"),
    "start": nullable(time("When the reservation starts; default now")),
    "spot": BOOL,
    "binding": BINDING,
    "nodes": {"type": "integer", "minimum": 1, "maximum": MAX_NODES},
}
NO_SPOT_NODE_LEASE = {
    "not": {
        "properties": {"binding": {"const": "node"}, "spot": {"const": True}},
        "required": ["binding", "spot"],
    },
    "description": "A node lease (binding node) cannot be spot (document 003).",
}
KEY = nullable(text(IDEMPOTENCY_KEY_MAX))
POOL_REF = reference("A pool id or name.")


def ask(extra: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A reservation's request body: the ask, what else the operation takes, no spot node lease."""
    return {**obj({**extra, **ASK}, required=required), **NO_SPOT_NODE_LEASE}


SCHEMAS = {
    **document_schemas(
        (ReservationDeviceJson, ReservationWindowJson, ReservationJson, ReservationPageJson),
        {"Reservation": {"binding": BINDING}},
    ),
    "ReservationCreate": ask(
        {"pool": POOL_REF, "idempotencyKey": KEY}, ["pool", "gpus", "duration"]
    ),
    "ReservationBatch": obj(
        {
            "pool": POOL_REF,
            "requests": {
                **array(ask({"idempotencyKey": KEY}, ["gpus", "duration"]), max_items=MAX_BATCH),
                "minItems": 1,
            },
        }
    ),
    **document_schemas((HostBookingJson, HostReservationsJson)),
    "PreviewRequest": ask({"pool": POOL_REF}, ["pool", "gpus", "duration"]),
    **document_schemas((PreviewCandidateJson, PreemptibleJson, PreviewJson)),
}


def _ask(fields: dict[str, Any]) -> dict[str, Any]:
    """The API's keyword arguments of a request's camelCase fields."""
    names = {"gpus": "gpus", "duration": "duration", "start": "start", "spot": "spot",
             "binding": "binding", "nodes": "nodes", "idempotencyKey": "idempotency_key"}  # fmt: skip
    return {names[k]: v for k, v in fields.items() if k in names}


def create_reservation(call: Call) -> Any:
    return call.api.reservations.create(
        call.token, tenant_id=call.acting_tenant(), pool_id=call.field("pool"), **_ask(call.body)
    )


def create_batch(call: Call) -> Any:
    return call.api.reservations.create_batch(
        call.token,
        tenant_id=call.acting_tenant(),
        pool_id=call.field("pool"),
        requests=[_ask(r) for r in call.field("requests")],
    )


def list_reservations(call: Call) -> Any:
    return call.api.reservations.list(
        call.token,
        tenant_id=call.tenant,
        pool=call.query.get("pool"),
        state=call.query.get("state"),
        include_released=bool(call.query.get("includeReleased")),
    )


def get_reservation(call: Call) -> Any:
    return call.api.reservations.get(call.token, call.path["id"], tenant_id=call.tenant)


def cancel_reservation(call: Call) -> Any:
    return call.api.reservations.cancel(call.token, call.path["id"], tenant_id=call.tenant)


def host_reservations(call: Call) -> Any:
    return call.api.reservations.for_host(call.token, call.path["host"])


def preview(call: Call) -> Any:
    ask = _ask(call.body)
    ask.pop("idempotency_key", None)
    return call.api.capacity.preview(
        call.token, tenant_id=call.acting_tenant(), pool_id=call.field("pool"), **ask
    )


Q = (TENANT,)
ONE = "/v1/reservations/{id}"
LIST_QUERY = (
    TENANT,
    Param("pool", text=POOL_REF),
    Param("state", text=reference("Only reservations in this state.")),
    Param("includeReleased", "boolean", "Released ones too.", default=False),
)
OPERATIONS = [
    Operation("POST", "/v1/reservations", "reservations.create",
              "Reserve GPUs for a time: placed, preempting, or pending with the counted reason",
              TAG, create_reservation, status=201, request="ReservationCreate",
              response="Reservation", query=Q),
    Operation("POST", "/v1/reservations/batch", "reservations.createBatch",
              "A pool-lease batch, admitted in order, all or none", TAG, create_batch,
              status=201, request="ReservationBatch", response="ReservationPage", query=Q),
    Operation("GET", "/v1/reservations", "reservations.list", "List the caller's reservations",
              TAG, list_reservations, response="ReservationPage", query=LIST_QUERY),
    Operation("GET", ONE, "reservations.get", "Show a reservation", TAG, get_reservation,
              response="Reservation", query=Q),
    Operation("POST", ONE + "/cancel", "reservations.cancel",
              "Release a reservation now (quota refunded)", TAG, cancel_reservation,
              response="Reservation", query=Q),
    Operation("GET", "/v1/hosts/{host}/reservations", "hosts.reservations",
              "The GPU reservations booked on a host (what its agent applies)", "hosts",
              host_reservations, response="HostReservations"),
    Operation("POST", "/v1/capacity/preview", "capacity.preview",
              "Would a reservation fit now, and how many reservations would it preempt?",
              "capacity", preview, request="PreviewRequest", response="Preview", query=Q),
]  # fmt: skip

"""Routes of flavors: POST/GET /v1/pools/{pool}/flavors and GET/PUT/DELETE …/flavors/{name}."""

from __future__ import annotations

from typing import Any

from bcfleet.api.documents import (
    FlavorDeletedJson,
    FlavorJson,
    FlavorPageJson,
    FlavorPlacementJson,
)
from bcfleet.domain.bounds import HUGEPAGE_SIZES
from bcfleet.domain.flavor_rules import FLAVOR_NAME
from bcfleet.errors import InvalidInputError
from bcfleet.http.operations import TENANT, Call, Operation
from bcfleet.http.rules import matching, text
from bcfleet.http.schemas import (
    BOOL,
    SHAPE_COUNT,
    nullable,
    obj,
)
from bcfleet.http.typed_schemas import document_schemas

TAG = "flavors"

PLACEMENT = obj(
    {
        "numaAffine": BOOL,
        "pinned": BOOL,
        "hugepageSizeBytes": nullable({"type": "integer", "enum": list(HUGEPAGE_SIZES)}),
    },
    required=[],
)
SHAPE = {"vcpu": SHAPE_COUNT, "memoryGiB": SHAPE_COUNT, "diskGiB": SHAPE_COUNT, "gpus": SHAPE_COUNT}
POSITIVE = {**SHAPE_COUNT, "minimum": 1}
ASKED = {"vcpu": POSITIVE, "memoryGiB": POSITIVE, "diskGiB": POSITIVE, "gpus": SHAPE_COUNT}
OFFER = nullable(
    {
        **text(),
        "description": "The provider's offer: required in a provider pool, refused in a vps-host "
        "pool (INVALID_INPUT, a rule of the pool, not of this body).",
    }
)

SCHEMAS = {
    **document_schemas(
        (FlavorPlacementJson, FlavorJson, FlavorPageJson),
        {"FlavorPlacement": PLACEMENT["properties"], "Flavor": SHAPE},
    ),
    "FlavorCreate": obj(
        {
            "name": matching(FLAVOR_NAME),
            **ASKED,
            "offerId": OFFER,
            "placement": nullable(PLACEMENT),
        },
        required=["name", "vcpu", "memoryGiB", "diskGiB"],
    ),
    "FlavorUpdate": obj(
        {
            "name": {
                **matching(FLAVOR_NAME),
                "description": "Optional, so that the body create takes may be sent as it is: "
                "when given it must be the path's {name} (INVALID_INPUT otherwise, naming both; "
                "no call renames a flavor).",
            },
            **ASKED,
            "offerId": OFFER,
            "placement": nullable(PLACEMENT),
        },
        required=["vcpu", "memoryGiB", "diskGiB"],
    ),
    **document_schemas((FlavorDeletedJson,)),
}


def _shape(call: Call) -> dict[str, Any]:
    return {
        "vcpu": call.field("vcpu"),
        "memory_gib": call.field("memoryGiB"),
        "disk_gib": call.field("diskGiB"),
        "offer_id": call.field("offerId"),
        "placement": call.field("placement"),
    }


def create_flavor(call: Call) -> Any:
    return call.api.flavors.create(
        call.token,
        tenant_id=call.acting_tenant(),
        pool_id=call.path["pool"],
        name=call.field("name"),
        gpus=call.field("gpus", 0),
        **_shape(call),
    )


def list_flavors(call: Call) -> Any:
    return call.api.flavors.list(
        call.token, tenant_id=call.acting_tenant(), pool_id=call.path["pool"]
    )


def get_flavor(call: Call) -> Any:
    return call.api.flavors.get(
        call.token,
        tenant_id=call.acting_tenant(),
        pool_id=call.path["pool"],
        name=call.path["name"],
    )


def update_flavor(call: Call) -> Any:
    named = call.field("name")
    if named is not None and named != call.path["name"]:
        message = (
            f"the body names flavor {named!r} and the path {call.path['name']!r}: a flavor keeps "
            "its name (PUT replaces its shape); leave name out or give the path's"
        )
        raise InvalidInputError(message, {"fields": {"name": message}})
    return call.api.flavors.update(
        call.token,
        tenant_id=call.acting_tenant(),
        pool_id=call.path["pool"],
        name=call.path["name"],
        gpus=call.field("gpus"),
        **_shape(call),
    )


def delete_flavor(call: Call) -> Any:
    return call.api.flavors.delete(
        call.token,
        tenant_id=call.acting_tenant(),
        pool_id=call.path["pool"],
        name=call.path["name"],
    )


Q = (TENANT,)
BASE = "/v1/pools/{pool}/flavors"
OPERATIONS = [
    Operation(
        "POST",
        BASE,
        "flavors.create",
        "Define a flavor in a pool",
        TAG,
        create_flavor,
        status=201,
        request="FlavorCreate",
        response="Flavor",
        query=Q,
    ),
    Operation(
        "GET",
        BASE,
        "flavors.list",
        "List a pool's flavors (archived ones hidden)",
        TAG,
        list_flavors,
        response="FlavorPage",
        query=Q,
    ),
    Operation(
        "GET",
        BASE + "/{name}",
        "flavors.get",
        "Show a flavor",
        TAG,
        get_flavor,
        response="Flavor",
        query=Q,
    ),
    Operation(
        "PUT",
        BASE + "/{name}",
        "flavors.update",
        "Replace a flavor's shape (restores an archived flavor)",
        TAG,
        update_flavor,
        request="FlavorUpdate",
        response="Flavor",
        query=Q,
    ),
    Operation(
        "DELETE",
        BASE + "/{name}",
        "flavors.delete",
        "Delete a flavor, or archive it when an instance references it",
        TAG,
        delete_flavor,
        response="FlavorDeleted",
        query=Q,
    ),
]

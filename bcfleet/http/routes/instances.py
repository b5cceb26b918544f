"""Routes of instances (create, list, show, stop, start, resize, delete, spec) and quotas."""

from __future__ import annotations

from typing import Any

from bcfleet.api.documents import (
    GuestStateJson,
    HostSpecsJson,
    InstanceBatchJson,
    InstanceJson,
    InstancePageJson,
    QuotaJson,
    QuotaPageJson,
)
from bcfleet.api.instance_list import CONDITION_TYPE
from bcfleet.api.instances import INSTANCE_NAME_MAX
from bcfleet.domain.bounds import BATCH_MAX, PAGE_MAX
from bcfleet.domain.cursors import CURSOR_MAX, CURSOR_MIN
from bcfleet.domain.idempotency import IDEMPOTENCY_KEY_MAX
from bcfleet.domain.instance_query import SEARCH_MAX, SORT_KEYS
from bcfleet.domain.instance_spec import (
    BalloonJson,
    InstanceSpecJson,
    SpecGpuJson,
    SpecPlacementJson,
)
from bcfleet.domain.shapes import ShapeJson
from bcfleet.domain.states import AgentReport
from bcfleet.http.operations import TENANT, Call, Operation, Param
from bcfleet.http.rules import matching, one_of, reference, text
from bcfleet.http.schemas import (
    INT,
    QUOTA,
    array,
    nullable,
    obj,
    ref,
)
from bcfleet.http.typed_schemas import document_schemas

TAG = "instances"
KEPT_AFTER_DELETE = (
    "A deleted instance stays readable by its id, with state deleted and deletedAt set: it is "
    "the record its usage and events refer to (instances.list shows it with includeDeleted)."
)

SERVING = (
    "Refused with 409 CONFLICT while the instance serves a deployed service (details.dependents "
    "lists each, as kind, id, name, state): undeploy the service first."
)

INTS = array(INT)
POOL_REF = reference("A pool id or name.")
FLAVOR_REF = reference("A flavor's name in the pool.")
RESOURCES = ("vcpu", "memoryGiB", "diskGiB", "gpu")

SCHEMAS = {
    **document_schemas(
        (InstanceJson, InstancePageJson, InstanceBatchJson, GuestStateJson),
        {
            "InstancePage": {
                "total": {**INT, "description": "How many there are in all (with limit)."},
                "cursor": {
                    **nullable(INT),
                    "description": "The `after` of the next page (with limit); null on the "
                    "last page.",
                },
            }
        },
    ),
    "GuestReport": {
        "anyOf": [ref("GuestState"), ref("Instance")],
        "description": "What a state report answers: root's admin gets the whole Instance, "
        "anyone else the GuestState.",
    },
    "InstanceCreate": obj(
        {
            "pool": POOL_REF,
            "flavor": FLAVOR_REF,
            "name": {
                **text(INSTANCE_NAME_MAX),
                "description": "With count or allOrNothing, instance i is named NAME-i, and "
                "the name with its longest suffix (-count) is at most "
                f"{INSTANCE_NAME_MAX} characters (INVALID_INPUT, details.suffix, beyond).",
            },
            "idempotencyKey": {
                **nullable(text(IDEMPOTENCY_KEY_MAX)),
                "description": "Sent again with the same input, answers the instance the "
                "first create made and makes nothing; with other input, CONFLICT. With count, "
                "instance i keeps the key KEY/i, and the batch sent again answers the "
                "instances it made.",
            },
            "count": {
                **INT,
                "minimum": 1,
                "maximum": BATCH_MAX,
                "description": "Place this many instances of the flavor in one transaction "
                "(named NAME-1 … NAME-N); the answer is then an InstanceBatch. As many as fit "
                "are placed and the rest refused, counted in reason, and not made.",
            },
            "allOrNothing": {
                "type": "boolean",
                "description": "All of them or none (alone: a count of 1); when they do not all fit, "
                "409 CAPACITY_UNAVAILABLE with the counted reason, and nothing changes.",
            },
        },
        required=["pool", "flavor"],
    ),
    "InstanceCreated": {
        "anyOf": [ref("Instance"), ref("InstanceBatch")],
        "description": "The Instance; with count or allOrNothing, the InstanceBatch.",
    },
    "InstanceResize": obj({"flavor": FLAVOR_REF}),
    "InstanceStateReport": obj(
        {"state": one_of([r.value for r in AgentReport])}, required=["state"]
    ),
    **document_schemas(
        (ShapeJson, SpecPlacementJson, BalloonJson, SpecGpuJson, InstanceSpecJson, HostSpecsJson)
    ),
    **document_schemas((QuotaJson, QuotaPageJson)),
    "QuotaSet": obj({r: nullable(QUOTA) for r in RESOURCES}, required=[]),
}


def create_instance(call: Call) -> Any:
    if call.field("count") is not None or call.field("allOrNothing") is not None:
        return call.api.instances.create_batch(
            call.token,
            tenant_id=call.acting_tenant(),
            pool_id=call.field("pool"),
            flavor=call.field("flavor"),
            count=call.field("count", 1),
            name=call.field("name"),
            idempotency_key=call.field("idempotencyKey"),
            all_or_nothing=call.field("allOrNothing", False),
        )
    return call.api.instances.create(
        call.token,
        tenant_id=call.acting_tenant(),
        pool_id=call.field("pool"),
        flavor=call.field("flavor"),
        name=call.field("name"),
        idempotency_key=call.field("idempotencyKey"),
    )


def list_instances(call: Call) -> Any:
    return call.api.instances.list(
        call.token,
        tenant_id=call.tenant,
        pool=call.query.get("pool"),
        state=call.query.get("state"),
        include_deleted=bool(call.query.get("includeDeleted")),
        condition=call.query.get("condition"),
        limit=call.query.get("limit"),
        q=call.query.get("q"),
        owner=call.query.get("owner"),
        host=call.query.get("host"),
        sort=call.query.get("sort"),
        descending=bool(call.query.get("descending")),
        after=call.query.get("after"),
    )


def show_instance(call: Call) -> Any:
    return call.api.instances.show(call.token, call.path["id"], tenant_id=call.tenant)


def stop_instance(call: Call) -> Any:
    return call.api.instances.stop(call.token, call.path["id"], tenant_id=call.tenant)


def start_instance(call: Call) -> Any:
    return call.api.instances.start(call.token, call.path["id"], tenant_id=call.tenant)


def delete_instance(call: Call) -> Any:
    return call.api.instances.delete(call.token, call.path["id"], tenant_id=call.tenant)


def resize_instance(call: Call) -> Any:
    return call.api.instances.resize(
        call.token, call.path["id"], flavor=call.field("flavor"), tenant_id=call.tenant
    )


def instance_spec(call: Call) -> Any:
    return call.api.instances.spec(call.token, call.path["id"], tenant_id=call.tenant)


def host_specs(call: Call) -> Any:
    return call.api.instances.specs_for_host(call.token, call.path["host"])


def report_instance_state(call: Call) -> Any:
    return call.api.instances.report_state(
        call.token, host=call.path["host"], instance_id=call.path["id"], state=call.field("state")
    )


def set_quota(call: Call) -> Any:
    limits = {r: call.body[r] for r in RESOURCES if r in call.body}
    return call.api.quotas.set(
        call.token, tenant_id=call.path["tenant"], pool=call.path["pool"], limits=limits
    )


def show_quotas(call: Call) -> Any:
    return call.api.quotas.show(
        call.token, tenant_id=call.acting_tenant(), pool=call.query.get("pool")
    )


Q = (TENANT,)
ONE = "/v1/instances/{id}"
LIST_QUERY = (
    TENANT,
    Param("pool", text=POOL_REF),
    Param("state", text=reference("Only instances in this state.")),
    Param("includeDeleted", "boolean", "Deleted instances too.", default=False),
    Param(
        "condition",
        text={
            **matching(CONDITION_TYPE),
            "description": "Only instances with a condition of this type set (status True), "
            "such as PlacementDegraded.",
        },
    ),
    Param("q", text={**text(SEARCH_MAX), "description": "Words, each of which the name or "
          "the id holds (any case)."}),
    Param("owner", text={**text(), "description": "Only the instances of this tenant."}),
    Param("host", text=reference("Only the instances on this host (an id or a name).")),
    Param("sort", description="The order: by name, tenant, state (then oldest first), flavor, "
          "host or pool name, or creation time (oldest first); ties by id. Without it, "
          "pending instances first, then the newest.", enum=SORT_KEYS),
    Param("descending", "boolean", "The order the other way round.", default=False),
    Param("after", "integer", "Skip this many of the order: the cursor of the page before.",
          minimum=CURSOR_MIN, maximum=CURSOR_MAX),
    Param(
        "limit",
        "integer",
        "At most this many: pending instances first, then the newest (or in the `sort` order); "
        "the answer then says how many there are in all (total) and where the next page starts "
        "(cursor). Without it, every instance, oldest first (or in the `sort` order).",
        minimum=1,
        maximum=PAGE_MAX,
    ),
)  # fmt: skip
OPERATIONS = [
    Operation("POST", "/v1/instances", "instances.create",
              "Create an instance, or count of them: admit and place in one transaction", TAG,
              create_instance, status=201, request="InstanceCreate", response="InstanceCreated",
              query=Q),
    Operation("GET", "/v1/instances", "instances.list", "List the caller's instances", TAG,
              list_instances, response="InstancePage", query=LIST_QUERY),
    Operation("GET", ONE, "instances.show", "Show an instance", TAG, show_instance,
              response="Instance", query=Q, description=KEPT_AFTER_DELETE),
    Operation("DELETE", ONE, "instances.delete", "Delete an instance, releasing its capacity",
              TAG, delete_instance, response="Instance", query=Q,
              description=f"{KEPT_AFTER_DELETE} {SERVING}"),
    Operation("POST", ONE + "/stop", "instances.stop", "Stop a running instance", TAG,
              stop_instance, response="Instance", query=Q),
    Operation("POST", ONE + "/start", "instances.start", "Start a stopped instance", TAG,
              start_instance, response="Instance", query=Q),
    Operation("POST", ONE + "/resize", "instances.resize",
              "Resize a stopped instance in place to another flavor", TAG, resize_instance,
              request="InstanceResize", response="Instance", query=Q),
    Operation("GET", ONE + "/spec", "instances.spec", "The InstanceSpec its host's agent applies",
              TAG, instance_spec, response="InstanceSpec", query=Q),
    Operation("GET", "/v1/hosts/{host}/specs", "hosts.specs",
              "The InstanceSpecs a host's agent should apply", "hosts", host_specs,
              response="HostSpecs"),
    Operation("POST", "/v1/hosts/{host}/instances/{id}/state", "hosts.reportInstanceState",
              "A host agent reports an instance's observed state", "hosts", report_instance_state,
              request="InstanceStateReport", response="GuestReport"),
    Operation("PUT", "/v1/quotas/{tenant}/{pool}", "quotas.set",
              "Set a tenant's quota in a pool (null removes a limit)", "quotas", set_quota,
              request="QuotaSet", response="Quota"),
    Operation("GET", "/v1/quotas", "quotas.show", "The caller's quotas and what they use",
              "quotas", show_quotas, response="QuotaPage",
              query=(TENANT, Param("pool", text=POOL_REF))),
]  # fmt: skip

"""Routes of hosts: adopt, report an inventory, drain and return to ready, list and show."""

from __future__ import annotations

from typing import Any

from bcfleet.api.agent_reports import BALLOON_BYTES_MAX
from bcfleet.api.documents import (
    AgentReportJson,
    GpuCountJson,
    HostDetailJson,
    HostHealthJson,
    HostJson,
    HostListItemJson,
    HostPageJson,
    NodeResourceJson,
)
from bcfleet.api.instance_list import CONDITION_TYPE
from bcfleet.domain.agent_report import AgentConditionJson, GuestAgentReportJson
from bcfleet.domain.bounds import (
    AGENT_CONDITIONS_MAX,
    AGENT_GUESTS_MAX,
    AGENT_MESSAGE_MAX,
    HUGEPAGE_COUNT_MAX,
    HUGEPAGE_SIZE_MAX,
    LABEL_KEY,
    LABEL_KEY_MAX,
    LABEL_VALUE_MAX,
    SHAPE_MAX,
)
from bcfleet.domain.inventory import GPU_MODEL_MAX
from bcfleet.domain.states import HostHealth
from bcfleet.http.operations import TENANT, Call, Operation, Param
from bcfleet.http.rules import matching, one_of, reference, slug, text
from bcfleet.http.schemas import (
    BOOL,
    COUNT,
    array,
    nullable,
    obj,
    ref,
)
from bcfleet.http.typed_schemas import document_schemas
from bcfleet.schemas import load_schema

TAG = "hosts"

# The bounds a count of the listing keeps, beyond its type.
COUNTS = {"GpuCount": {"total": COUNT, "used": COUNT}, "HostListItem": {"degradedGuests": COUNT}}


LABELS = {
    "type": "object",
    "propertyNames": matching(LABEL_KEY, LABEL_KEY_MAX),
    "additionalProperties": text(LABEL_VALUE_MAX, min_length=0),
}


INVENTORY_RULES = (
    "Beyond this schema the server refuses (INVALID_INPUT, each problem at its JSON path): "
    "a CPU or NUMA node id listed twice, a CPU or GPU naming a NUMA node that is not listed, "
    "a huge page size listed twice in a node, more free huge pages than in all, and a GPU PCI "
    "address listed twice."
)


GUESTS_REPORT_RULES = (
    "Beyond this schema the server refuses (INVALID_INPUT, naming the field): a guest listed "
    "twice, and a condition type listed twice for one guest."
)


def inventory_schema() -> dict[str, Any]:
    """schemas/inventory.schema.json as a component, with the bounds domain/inventory.py checks:
    ids and sizes within SHAPE_MAX, huge pages within their bounds, printable text."""
    schema = load_schema("inventory")
    for key in ("$schema", "$id"):
        schema.pop(key, None)
    props = schema["properties"]
    cpu = props["cpus"]["items"]["properties"]
    node = props["numaNodes"]["items"]["properties"]
    pages = node["hugepages"]["items"]["properties"]
    gpu = props["gpus"]["items"]["properties"]
    for field in (cpu["id"], cpu["numaNode"], node["id"], gpu["numaNode"]):
        field["maximum"] = SHAPE_MAX
    for field in (props["memoryGiB"], props["diskGiB"], node["memoryGiB"]):
        field["maximum"] = SHAPE_MAX
    pages["sizeBytes"]["maximum"] = HUGEPAGE_SIZE_MAX
    pages["total"]["maximum"] = pages["free"]["maximum"] = HUGEPAGE_COUNT_MAX
    gpu["model"] = text(GPU_MODEL_MAX)
    agent = props["agent"]
    agent["properties"] = {k: ref("AgentText") for k in agent.get("properties", {})}
    agent["propertyNames"] = text(None, min_length=0)
    agent["additionalProperties"] = ref("AgentValue")
    schema["description"] = f"{schema.get('description', '')} {INVENTORY_RULES}".strip()
    return schema


AGENT_SCHEMAS = {
    "AgentText": text(None, min_length=0),
    "AgentValue": {
        "description": "Any JSON whose keys and texts are printable.",
        "anyOf": [
            ref("AgentText"),
            {"type": ["number", "boolean", "null"]},
            {"type": "array", "items": ref("AgentValue")},
            {
                "type": "object",
                "propertyNames": text(None, min_length=0),
                "additionalProperties": ref("AgentValue"),
            },
        ],
    },
}


SCHEMAS = {
    **document_schemas(
        (NodeResourceJson, GpuCountJson, HostJson, HostListItemJson, HostDetailJson, HostPageJson),
        {**COUNTS, "HostDetail": COUNTS["HostListItem"]},
    ),
    "HostAdopt": obj(
        {
            "pool": reference("A pool id or name."),
            "name": slug(),
            "labels": nullable(LABELS),
            "tenantControlled": BOOL,
        },
        required=["pool", "name"],
    ),
    "Inventory": inventory_schema(),
    **AGENT_SCHEMAS,
    **document_schemas((HostHealthJson, AgentConditionJson, GuestAgentReportJson, AgentReportJson)),
    "GuestsReport": obj(
        {
            "health": nullable(
                obj(
                    {
                        "state": one_of([h.value for h in HostHealth]),
                        "message": nullable(text(AGENT_MESSAGE_MAX)),
                    },
                    required=["state"],
                )
            ),
            "guests": array(
                obj(
                    {
                        "id": text(),
                        "conditions": array(
                            obj(
                                {
                                    "type": matching(CONDITION_TYPE),
                                    "reason": matching(CONDITION_TYPE),
                                    "message": text(AGENT_MESSAGE_MAX),
                                }
                            ),
                            AGENT_CONDITIONS_MAX,
                        ),
                        "balloonBytes": nullable(
                            {"type": "integer", "minimum": 0, "maximum": BALLOON_BYTES_MAX}
                        ),
                    },
                    required=["id"],
                ),
                AGENT_GUESTS_MAX,
            ),
        },
        required=[],
    )
    | {"description": GUESTS_REPORT_RULES},
}


def adopt_host(call: Call) -> Any:
    return call.api.hosts.adopt(
        call.token,
        tenant_id=call.acting_tenant(),
        pool=call.field("pool"),
        name=call.field("name"),
        labels=call.field("labels"),
        tenant_controlled=bool(call.field("tenantControlled", False)),
    )


def list_hosts(call: Call) -> Any:
    return call.api.hosts.list(call.token, tenant_id=call.tenant, pool=call.query.get("pool"))


def show_host(call: Call) -> Any:
    return call.api.hosts.show(call.token, tenant_id=call.tenant, host=call.path["host"])


def report_inventory(call: Call) -> Any:
    return call.api.hosts.report(
        call.token, tenant_id=call.tenant, host=call.path["host"], inventory=call.body
    )


def report_guests(call: Call) -> Any:
    return call.api.hosts.report_guests(
        call.token,
        tenant_id=call.tenant,
        host=call.path["host"],
        health=call.field("health"),
        guests=call.field("guests"),
    )


def drain_host(call: Call) -> Any:
    return call.api.hosts.set_state(
        call.token, tenant_id=call.tenant, host=call.path["host"], draining=True
    )


def ready_host(call: Call) -> Any:
    return call.api.hosts.set_state(
        call.token, tenant_id=call.tenant, host=call.path["host"], draining=False
    )


Q = (TENANT,)
OPERATIONS = [
    Operation(
        "GET",
        "/v1/hosts",
        "hosts.list",
        "List hosts (a pool's, or the caller's pools')",
        TAG,
        list_hosts,
        response="HostPage",
        query=(TENANT, Param("pool", text=reference("A pool id or name."))),
    ),
    Operation(
        "POST",
        "/v1/hosts",
        "hosts.adopt",
        "Adopt a host into a vps-host pool by name",
        TAG,
        adopt_host,
        status=201,
        request="HostAdopt",
        response="Host",
        query=Q,
    ),
    Operation(
        "GET",
        "/v1/hosts/{host}",
        "hosts.show",
        "Show a host and its inventory",
        TAG,
        show_host,
        response="HostDetail",
        query=Q,
    ),
    Operation(
        "POST",
        "/v1/hosts/{host}/inventory",
        "hosts.report",
        "Report a host's inventory (PRODUCT.md §8)",
        TAG,
        report_inventory,
        request="Inventory",
        response="Host",
        query=Q,
        description=INVENTORY_RULES,
    ),
    Operation(
        "POST",
        "/v1/hosts/{host}/guests/report",
        "hosts.reportGuests",
        "A host agent reports its guests' conditions and balloons and the host's health",
        TAG,
        report_guests,
        request="GuestsReport",
        response="AgentReport",
        query=Q,
        description="Each listed guest's conditions and balloon replace what its agent "
        "reported before (a condition not reported again is gone); guests not listed keep "
        "theirs. Kept apart from the server's own conditions. A guest not on this host is "
        "NOT_FOUND and nothing is kept.",
    ),
    Operation(
        "POST",
        "/v1/hosts/{host}/drain",
        "hosts.drain",
        "Drain a host: no new placements",
        TAG,
        drain_host,
        response="Host",
        query=Q,
    ),
    Operation(
        "POST",
        "/v1/hosts/{host}/ready",
        "hosts.ready",
        "Return a drained host to ready",
        TAG,
        ready_host,
        response="Host",
        query=Q,
    ),
]

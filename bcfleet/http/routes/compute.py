"""Routes of document 004: compute settings (sizes, spares, default size) and the users of sizes.

Services deploy at once or answer 503 with reason fleet_no_capacity, instance_size and a
Retry-After header; POST …/deploy/stream is the streaming deploy (NDJSON progress lines).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from bcfleet.api.documents import (
    ComputeSettingsJson,
    ComputeSizeJson,
    DefaultSizeChoiceJson,
    DeletedJson,
    EnvironmentJson,
    EnvironmentPageJson,
    IndexComputeJson,
    IndexJson,
    IndexPageJson,
    LastErrorJson,
    ServiceComputeJson,
    ServiceJson,
    ServicePageJson,
    SizeInUseJson,
)
from bcfleet.api.services import COMPUTE_NAME_MAX, HOSTINGS
from bcfleet.domain.compute_settings import ComputeChange
from bcfleet.domain.sizes import SIZE_NAMES, SPARES_ASKED_MAX, SPARES_MAX
from bcfleet.errors import FleetError
from bcfleet.http.operations import TENANT, Call, Operation, Param
from bcfleet.http.rules import identifier, one_of, reference, size, slug
from bcfleet.http.schemas import (
    BOOL,
    array,
    nullable,
    obj,
    ref,
)
from bcfleet.http.serving import bearer_token, served
from bcfleet.http.streams import held_open, iterate_in_stream_threads
from bcfleet.http.typed_schemas import document_schemas

TAG = "compute"
SIZE = size()
SIZES_AT_MOST = len(SIZE_NAMES)
COMPUTE_NAME = identifier(COMPUTE_NAME_MAX, nonblank=True)
SPARES = {
    "type": "object",
    "propertyNames": SIZE,
    "additionalProperties": {
        "type": "integer",
        "minimum": 0,
        "maximum": SPARES_ASKED_MAX,
        "description": f"Spare instances of a size; above {SPARES_MAX} we keep {SPARES_MAX} "
        "and the answer's notices say so (SPARES_CAPPED).",
    },
    "maxProperties": SIZES_AT_MOST,
}
SIZE_MAP = {
    "type": "object",
    "propertyNames": SIZE,
    "additionalProperties": ref("ComputeSize"),
    "maxProperties": SIZES_AT_MOST,
}

CHANGE_RULES = (
    "Beyond this schema (INVALID_INPUT): a size both enabled and disabled "
    "(details.field sizes); the default size must stay enabled, and turning off Medium needs a "
    "default size (details.field defaultSize), judged against the saved settings."
)
NO_SERVERLESS_POOL = (
    "INVALID_INPUT (details.field serverlessPool) while the tenant's compute settings name no "
    "serverless pool."
)
CHANGE = obj(
    {
        "enable": array(SIZE, SIZES_AT_MOST), "disable": array(SIZE, SIZES_AT_MOST),
        "spares": nullable(SPARES), "defaultSize": nullable(SIZE), "clearDefault": BOOL,
        "serverlessPool": nullable(reference("A pool id or name.")),
    },
    required=[],
    description=CHANGE_RULES,
)  # fmt: skip

SCHEMAS = {
    "ComputeChange": CHANGE,
    **document_schemas(
        (
            ServiceComputeJson,
            IndexComputeJson,
            ServiceJson,
            ServicePageJson,
            IndexJson,
            IndexPageJson,
            EnvironmentJson,
            EnvironmentPageJson,
            LastErrorJson,
            ComputeSizeJson,
            DefaultSizeChoiceJson,
            SizeInUseJson,
            ComputeSettingsJson,
        ),
        {
            "Service": {"hosting": one_of(HOSTINGS)},
            "ComputeSettings": {"sizes": SIZE_MAP},
        },
    ),
    "ServiceCreate": obj(
        {
            "workspace": COMPUTE_NAME,
            "name": COMPUTE_NAME,
            "hosting": one_of(HOSTINGS),
            "size": nullable(SIZE),
            "environment": nullable(reference("An environment id or name.")),
        },
        required=["workspace", "name"],
    ),  # fmt: skip
    "ServiceSize": obj({"size": SIZE}),
    **document_schemas((DeletedJson,)),
    "DeployProgress": {"type": "string", "description": "NDJSON: one progress object a line."},
    "IndexCreate": obj(
        {
            "workspace": COMPUTE_NAME,
            "name": COMPUTE_NAME,
            "podSize": nullable(SIZE),
            "deployed": BOOL,
        },
        required=["workspace", "name"],
    ),  # fmt: skip
    "IndexUpdate": {
        **obj(
            {"podSize": nullable(SIZE), "defaultPodSize": BOOL, "deployed": nullable(BOOL)},
            required=[],
        ),
        "not": {
            "properties": {"podSize": {"type": "string"}, "defaultPodSize": {"const": True}},
            "required": ["podSize", "defaultPodSize"],
        },
        "description": "Choose a pod size or reset to the default pod size (defaultPodSize), "
        "not both.",
    },
    "EnvironmentCreate": obj({"name": slug(), "size": SIZE}),
    "EnvironmentUpdate": obj({"size": SIZE}),
}


def _change(call: Call) -> ComputeChange:
    return ComputeChange.from_flags(
        enable=call.field("enable", []),
        disable=call.field("disable", []),
        spares=call.field("spares"),
        default_size=call.field("defaultSize"),
        clear_default=bool(call.field("clearDefault", False)),
        serverless_pool=call.field("serverlessPool"),
    )


def show_settings(call: Call) -> Any:
    return call.api.settings.compute_show(call.token, tenant_id=call.acting_tenant())


def save_settings(call: Call) -> Any:
    return call.api.settings.compute_save(
        call.token, tenant_id=call.acting_tenant(), change=_change(call)
    )


def draft_settings(call: Call) -> Any:
    return call.api.settings.compute_draft(
        call.token, tenant_id=call.acting_tenant(), change=_change(call)
    )


def create_service(call: Call) -> Any:
    return call.api.services.create(
        call.token, tenant_id=call.acting_tenant(), workspace=call.field("workspace"),
        name=call.field("name"), hosting=call.field("hosting", "serverless"),
        size=call.field("size"), environment=call.field("environment"),
    )  # fmt: skip


def service_call(method: str) -> Any:
    """A handler calling services.<method>(token, id) — the verbs on one service."""

    def handler(call: Call) -> Any:
        return getattr(call.api.services, method)(call.token, call.path["id"])

    handler.__name__ = f"service_{method}"
    return handler


def list_services(call: Call) -> Any:
    return call.api.services.list(
        call.token, tenant_id=call.tenant, workspace=call.query.get("workspace")
    )


def show_service(call: Call) -> Any:
    return call.api.services.show(call.token, call.path["id"], tenant_id=call.tenant)


def size_service(call: Call) -> Any:
    return call.api.services.set_size(call.token, call.path["id"], call.field("size"))


async def deploy_stream(request: Request) -> Response:
    """NDJSON progress of a streaming deploy; an error ends the stream as its error document."""
    ctx = served(request)
    token = bearer_token(request, required=True)
    query = {p.name: p.parse(request) for p in STREAM_QUERY}
    api = ctx.fleet.api
    await run_in_threadpool(api.services.check_deploy, token, request.path_params["id"])  # as JSON
    assert token is not None
    tenant = await run_in_threadpool(ctx.tenants.tenant_of, token)
    stream = ctx.streams.take(tenant)
    steps = ctx.fleet.api.services.deploy_stream(
        token, request.path_params["id"], poll_seconds=query["pollSeconds"],
        timeout_seconds=query["timeoutSeconds"], stop=stream.stop,
    )  # fmt: skip

    def lines() -> Iterator[str]:
        try:
            for step in steps:
                yield json.dumps(step) + "\n"
        except FleetError as error:
            yield json.dumps(error.to_json()) + "\n"

    body = held_open(ctx.streams, stream, iterate_in_stream_threads(lines(), ctx.streams.threads()))
    return StreamingResponse(body, media_type="application/x-ndjson")


def create_index(call: Call) -> Any:
    return call.api.indexes.create(
        call.token, tenant_id=call.acting_tenant(), workspace=call.field("workspace"),
        name=call.field("name"), pod_size=call.field("podSize"),
        deployed=bool(call.field("deployed", False)),
    )  # fmt: skip


def list_indexes(call: Call) -> Any:
    return call.api.indexes.list(
        call.token, tenant_id=call.tenant, workspace=call.query.get("workspace")
    )


def show_index(call: Call) -> Any:
    return call.api.indexes.show(call.token, call.path["id"], tenant_id=call.tenant)


def update_index(call: Call) -> Any:
    return call.api.indexes.update(
        call.token, call.path["id"], pod_size=call.field("podSize"),
        default_pod_size=bool(call.field("defaultPodSize", False)),
        deployed=call.field("deployed"),
    )  # fmt: skip


def delete_index(call: Call) -> Any:
    return call.api.indexes.delete(call.token, call.path["id"])


def create_environment(call: Call) -> Any:
    return call.api.environments.create(
        call.token, tenant_id=call.acting_tenant(), name=call.field("name"), size=call.field("size")
    )


def list_environments(call: Call) -> Any:
    return call.api.environments.list(call.token, tenant_id=call.tenant)


def show_environment(call: Call) -> Any:
    return call.api.environments.show(call.token, call.path["id"], tenant_id=call.tenant)


def delete_environment(call: Call) -> Any:
    return call.api.environments.delete(call.token, call.path["id"])


def update_environment(call: Call) -> Any:
    return call.api.environments.update(call.token, call.path["id"], size=call.field("size"))


Q = (TENANT,)
WS = (TENANT, Param("workspace", text=reference("Only this workspace's.")))
STREAM_QUERY = (
    Param("pollSeconds", "integer", "Seconds between checks.", minimum=1, maximum=60, default=5),
    Param("timeoutSeconds", "integer", "Give up (503) after this long.", minimum=1,
          maximum=900, default=900),
)  # fmt: skip
SVC, IDX, ENV = "/v1/services/{id}", "/v1/indexes/{id}", "/v1/environments/{id}"
NO_CAPACITY = "503 NO_CAPACITY (reason fleet_no_capacity, instance_size, Retry-After) when no spare of its size is free."
OPERATIONS = [
    Operation("GET", "/v1/settings/compute", "settings.compute.show",
              "Compute settings: sizes, spares, credits, default size, what uses each size",
              TAG, show_settings, response="ComputeSettings", query=Q),
    Operation("PATCH", "/v1/settings/compute", "settings.compute.save",
              "Save a change of the compute settings (all of it or nothing)", TAG,
              save_settings, request="ComputeChange", response="ComputeSettings", query=Q),
    Operation("POST", "/v1/settings/compute/draft", "settings.compute.draft",
              "What a change would do, saving nothing", TAG, draft_settings,
              request="ComputeChange", response="ComputeSettings", query=Q),
    Operation("POST", "/v1/services", "services.create", "Create an undeployed service", TAG,
              create_service, status=201, request="ServiceCreate", response="Service", query=Q),
    Operation("GET", "/v1/services", "services.list", "List services", TAG, list_services,
              response="ServicePage", query=WS),
    Operation("GET", SVC, "services.show", "Show a service", TAG, show_service,
              response="Service", query=Q),
    Operation("POST", SVC + "/deploy", "services.deploy",
              "Deploy at once onto a free spare instance of the service's size", TAG,
              service_call("deploy"), response="Service",
              description=f"{NO_CAPACITY} {NO_SERVERLESS_POOL}"),
    Operation("POST", SVC + "/deploy/stream", "services.deployStream",
              "A streaming deploy: NDJSON progress until the instance is ready", TAG,
              endpoint=deploy_stream, response="DeployProgress",
              response_media="application/x-ndjson", query=STREAM_QUERY),
    Operation("POST", SVC + "/start", "services.start",
              "Deploy without failing for capacity (status starting until ready)", TAG,
              service_call("start"), response="Service", description=NO_SERVERLESS_POOL),
    Operation("POST", SVC + "/undeploy", "services.undeploy", "Undeploy a service", TAG,
              service_call("undeploy"), response="Service"),
    Operation("POST", SVC + "/size", "services.setSize", "Move a service to another size", TAG,
              size_service, request="ServiceSize", response="Service", description=NO_CAPACITY),
    Operation("DELETE", SVC, "services.delete", "Delete a service", TAG,
              service_call("delete"), response="Deleted"),
    Operation("POST", "/v1/indexes", "indexes.create", "Create a pipeline index", TAG,
              create_index, status=201, request="IndexCreate", response="Index", query=Q),
    Operation("GET", "/v1/indexes", "indexes.list", "List pipeline indexes", TAG, list_indexes,
              response="IndexPage", query=WS),
    Operation("GET", IDX, "indexes.show", "Show an index", TAG, show_index, response="Index",
              query=Q),
    Operation("PATCH", IDX, "indexes.update", "Change an index's pod size or deploy it", TAG,
              update_index, request="IndexUpdate", response="Index"),
    Operation("DELETE", IDX, "indexes.delete", "Delete an index", TAG, delete_index,
              response="Deleted"),
    Operation("POST", "/v1/environments", "environments.create", "Create an environment",
              TAG, create_environment, status=201, request="EnvironmentCreate",
              response="Environment", query=Q),
    Operation("GET", "/v1/environments", "environments.list", "List environments", TAG,
              list_environments, response="EnvironmentPage", query=Q),
    Operation("GET", ENV, "environments.show", "Show an environment", TAG, show_environment,
              response="Environment", query=Q),
    Operation("PATCH", ENV, "environments.update",
              "Move an environment (and its services) to another size", TAG,
              update_environment, request="EnvironmentUpdate", response="Environment",
              description=NO_CAPACITY),
    Operation("DELETE", ENV, "environments.delete", "Delete an environment no service is in",
              TAG, delete_environment, response="Deleted",
              description="CONFLICT naming the services while any is in it "
              "(GET …/dependents names them first)."),
]  # fmt: skip

"""Routes of pools: create, list, show, change policy, offer to a tenant and take it back."""

from __future__ import annotations

from typing import Any

from bcfleet.api.documents import PoolJson, PoolPageJson, PoolPolicyJson
from bcfleet.api.pools import OVERCOMMIT_RESOURCES, RESERVE_RESOURCES
from bcfleet.domain.bounds import GPU_MODEL
from bcfleet.domain.states import PoolKind
from bcfleet.http.operations import TENANT, Call, Operation
from bcfleet.http.rules import matching, one_of, reference, slug
from bcfleet.http.schemas import (
    RATIO,
    SHAPE_COUNT,
    nullable,
    obj,
)
from bcfleet.http.typed_schemas import document_schemas

TAG = "pools"
GPU_MODEL_SCHEMA = {
    "anyOf": [matching(GPU_MODEL), {"const": ""}, {"type": "null"}],
    "description": "The pool's GPU model, such as L40S (it names the meter gpu.<model>.hours); "
    "empty or null for none.",
}
KIND = one_of([k.value for k in PoolKind])

RATIOS = obj(dict.fromkeys(OVERCOMMIT_RESOURCES, RATIO), required=[])
RESERVE = obj(dict.fromkeys(RESERVE_RESOURCES, SHAPE_COUNT), required=[])
POLICY = obj({"overcommit": RATIOS, "hostReserve": RESERVE}, required=[])
PROVIDER_NEEDS_ACCOUNT = {
    "if": {"properties": {"kind": {"const": PoolKind.PROVIDER.value}}, "required": ["kind"]},
    "then": {
        "required": ["providerAccount"],
        "properties": {"providerAccount": {"type": "string"}},
    },
}

SCHEMAS = {
    **document_schemas((PoolPolicyJson, PoolJson, PoolPageJson), {"Pool": {"kind": KIND}}),
    "PoolCreate": {
        **obj(
            {
                "name": slug(),
                "kind": KIND,
                "gpuModel": GPU_MODEL_SCHEMA,
                "policy": POLICY,
                "providerAccount": nullable(reference("A provider account's id or name.")),
            },
            required=["name", "kind"],
        ),
        **PROVIDER_NEEDS_ACCOUNT,
    },
    "PoolUpdate": obj({"gpuModel": GPU_MODEL_SCHEMA, "policy": POLICY}, required=[]),
    "PoolOffer": obj({"tenant": reference("A tenant id.")}),
}


def _policy(call: Call, key: str) -> Any:
    policy = call.field("policy") or {}
    return policy.get(key)


def create_pool(call: Call) -> Any:
    return call.api.pools.create(
        call.token,
        tenant_id=call.acting_tenant(),
        name=call.field("name"),
        kind=call.field("kind"),
        gpu_model=call.field("gpuModel"),
        overcommit=_policy(call, "overcommit"),
        host_reserve=_policy(call, "hostReserve"),
        provider_account=call.field("providerAccount"),
    )


def list_pools(call: Call) -> Any:
    return call.api.pools.list(call.token, tenant_id=call.tenant)


def show_pool(call: Call) -> Any:
    return call.api.pools.show(call.token, tenant_id=call.tenant, pool=call.path["pool"])


def update_pool(call: Call) -> Any:
    return call.api.pools.update(
        call.token,
        tenant_id=call.acting_tenant(),
        pool=call.path["pool"],
        gpu_model=call.field("gpuModel"),
        overcommit=_policy(call, "overcommit"),
        host_reserve=_policy(call, "hostReserve"),
    )


def offer_pool(call: Call) -> Any:
    return call.api.pools.offer(
        call.token, tenant_id=call.acting_tenant(), pool=call.path["pool"], to=call.field("tenant")
    )


def revoke_offer(call: Call) -> Any:
    return call.api.pools.offer(
        call.token,
        tenant_id=call.acting_tenant(),
        pool=call.path["pool"],
        to=call.path["tenant"],
        revoke=True,
    )


Q = (TENANT,)
OPERATIONS = [
    Operation(
        "GET",
        "/v1/pools",
        "pools.list",
        "List the pools the caller may see",
        TAG,
        list_pools,
        response="PoolPage",
        query=Q,
    ),
    Operation(
        "POST",
        "/v1/pools",
        "pools.create",
        "Create a pool",
        TAG,
        create_pool,
        status=201,
        request="PoolCreate",
        response="Pool",
        query=Q,
    ),
    Operation(
        "GET",
        "/v1/pools/{pool}",
        "pools.show",
        "Show a pool (by id or name)",
        TAG,
        show_pool,
        response="Pool",
        query=Q,
    ),
    Operation(
        "PATCH",
        "/v1/pools/{pool}",
        "pools.update",
        "Change a pool's GPU model or policy",
        TAG,
        update_pool,
        request="PoolUpdate",
        response="Pool",
        query=Q,
    ),
    Operation(
        "POST",
        "/v1/pools/{pool}/offers",
        "pools.offer",
        "Offer a pool to a tenant",
        TAG,
        offer_pool,
        request="PoolOffer",
        response="Pool",
        query=Q,
    ),
    Operation(
        "DELETE",
        "/v1/pools/{pool}/offers/{tenant}",
        "pools.revokeOffer",
        "Take back a pool's offer to a tenant",
        TAG,
        revoke_offer,
        response="Pool",
        query=Q,
    ),
]

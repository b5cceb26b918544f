"""Routes the console needs beside the areas' own: what depends on a row before it goes (GET
…/dependents), the deletes of pools, provider accounts, hosts and tenants, the tenant's
policies, and
`fleet doctor`.

A dependents route mirrors the delete (or offer withdrawal) it precedes, at the same path
plus /dependents, and answers what fleet.api.dependents answers: the dependents by kind,
id and name, and the delete's outcome now (deleted, archived, refused). It only reads;
the delete decides again when it runs.
"""

from __future__ import annotations

from typing import Any

from bcfleet.api.documents import PolicyJson, PolicyPageJson
from bcfleet.domain.dependents import OUTCOMES, DependentJson, DependentsJson
from bcfleet.http.operations import TENANT, Call, Operation, Param
from bcfleet.http.schemas import array, obj
from bcfleet.http.typed_schemas import document_schemas

TAG = "console"

SCHEMAS = {
    **document_schemas(
        (DependentJson, DependentsJson, PolicyJson, PolicyPageJson),
        {"Dependents": {"outcome": {"type": "string", "enum": list(OUTCOMES)}}},
    ),
    "Doctor": {
        "type": "object",
        "required": ["warnings"],
        "properties": {
            "warnings": array(
                {
                    "type": "object",
                    "required": ["code", "message"],
                    "properties": {"code": {"type": "string"}, "message": {"type": "string"}},
                }
            ),
            "invariants": obj(
                {
                    "ok": {"type": "boolean"},
                    "problems": {
                        "type": "object",
                        "additionalProperties": array({"type": "string"}),
                    },
                },
            ),
        },
        "additionalProperties": False,
    },
}


def of_instance(call: Call) -> Any:
    return call.api.dependents.of_instance(call.token, call.path["id"], tenant_id=call.tenant)


def of_offer(call: Call) -> Any:
    return call.api.dependents.of_offer(
        call.token, tenant_id=call.acting_tenant(), pool=call.path["pool"], to=call.path["tenant"]
    )


def of_flavor(call: Call) -> Any:
    return call.api.dependents.of_flavor(
        call.token, tenant_id=call.acting_tenant(), pool=call.path["pool"], name=call.path["name"]
    )


def of_service(call: Call) -> Any:
    return call.api.dependents.of_service(call.token, call.path["id"], tenant_id=call.tenant)


def of_environment(call: Call) -> Any:
    return call.api.dependents.of_environment(call.token, call.path["id"], tenant_id=call.tenant)


def of_webhook(call: Call) -> Any:
    return call.api.dependents.of_webhook(call.token, call.path["id"], tenant_id=call.tenant)


def of_token(call: Call) -> Any:
    return call.api.dependents.of_token(
        call.token, tenant_id=call.path["tenant"], token_id=call.path["tokenId"]
    )


def of_pool(call: Call) -> Any:
    return call.api.dependents.of_pool(
        call.token, tenant_id=call.acting_tenant(), pool=call.path["pool"]
    )


def of_account(call: Call) -> Any:
    return call.api.dependents.of_provider_account(
        call.token, tenant_id=call.acting_tenant(), account=call.path["account"]
    )


def delete_pool(call: Call) -> Any:
    return call.api.pools.delete(call.token, tenant_id=call.acting_tenant(), pool=call.path["pool"])


def delete_account(call: Call) -> Any:
    return call.api.provider_accounts.delete(
        call.token, tenant_id=call.acting_tenant(), name=call.path["account"]
    )


def of_host(call: Call) -> Any:
    return call.api.dependents.of_host(call.token, tenant_id=call.tenant, host=call.path["host"])


def of_tenant(call: Call) -> Any:
    return call.api.dependents.of_tenant(call.token, call.path["tenant"])


def remove_host(call: Call) -> Any:
    return call.api.hosts.remove(call.token, tenant_id=call.tenant, host=call.path["host"])


def delete_tenant(call: Call) -> Any:
    return call.api.tenants.delete(call.token, call.path["tenant"])


def list_policies(call: Call) -> Any:
    return call.api.iam.list_policies(call.token, tenant_id=call.path["tenant"])


def doctor(call: Call) -> Any:
    return call.api.doctor.check(call.token, invariants=call.query["invariants"])


Q = (TENANT,)
READS = "It only reads: the delete decides again when it runs."


def _dependents(path: str, operation_id: str, what: str, handler: Any, **more: Any) -> Operation:
    return Operation("GET", path + "/dependents", operation_id, f"What depends on {what}", TAG,
                     handler, response="Dependents", description=READS, **more)  # fmt: skip


OPERATIONS = [
    _dependents("/v1/instances/{id}", "dependents.instance",
                "an instance (the services it serves: its delete is refused while one does)",
                of_instance, query=Q),
    _dependents("/v1/pools/{pool}/offers/{tenant}", "dependents.offer",
                "an offer (what the tenant holds in the pool; named to root's admin only)",
                of_offer, query=Q),
    _dependents("/v1/pools/{pool}/flavors/{name}", "dependents.flavor",
                "a flavor (its live instances; archived, not deleted, once any instance used it)",
                of_flavor, query=Q),
    _dependents("/v1/services/{id}", "dependents.service",
                "a service (the instance a deployed one holds)", of_service, query=Q),
    _dependents("/v1/environments/{id}", "dependents.environment",
                "an environment (its services: its delete is refused while there are any)",
                of_environment, query=Q),
    _dependents("/v1/webhooks/{id}", "dependents.webhook",
                "a webhook (its deliveries not made yet, counted by state)", of_webhook, query=Q),
    _dependents("/v1/tenants/{tenant}/tokens/{tokenId}", "dependents.token",
                "a token (the host agent it is bound to; the caller's own session)", of_token),
    _dependents("/v1/pools/{pool}", "dependents.pool",
                "a pool (what keeps it: hosts, flavors, instances, quota in use, …)", of_pool,
                query=Q),
    _dependents("/v1/provider-accounts/{account}", "dependents.providerAccount",
                "a provider account (the pools on it)", of_account, query=Q),
    Operation("DELETE", "/v1/pools/{pool}", "pools.delete",
              "Delete an empty pool with its offers and unused quotas", "pools", delete_pool,
              response="Deleted", query=Q,
              description="CONFLICT naming what it still has (hosts, flavors, instances, quota "
              "in use, compute settings naming it); GET …/dependents names it first."),
    Operation("DELETE", "/v1/provider-accounts/{account}", "providerAccounts.delete",
              "Delete a provider account no pool uses", "providers", delete_account,
              response="Deleted", query=Q,
              description="CONFLICT naming the pools that still use it; GET …/dependents "
              "names them first."),
    _dependents("/v1/hosts/{host}", "dependents.host",
                "a host (instances, allocations, GPU bookings, past or present; else the "
                "agent tokens its removal revokes)", of_host,
                query=Q),
    _dependents("/v1/tenants/{tenant}", "dependents.tenant",
                "a tenant (the kinds of rows that still name it; root is never deleted)",
                of_tenant),
    Operation("DELETE", "/v1/hosts/{host}", "hosts.remove",
              "Forget a host nothing ever ran on (drain one that did)", "hosts", remove_host,
              response="Deleted", query=Q,
              description="CONFLICT naming its instances, allocations or GPU bookings, past "
              "or present; GET …/dependents names them first. The tokens of the host's agents "
              "are revoked with it."),
    Operation("DELETE", "/v1/tenants/{tenant}", "tenants.delete",
              "Delete a tenant that owns nothing (root's admin)", "tenants", delete_tenant,
              response="Deleted",
              description="CONFLICT naming what still names it, and always for root; GET "
              "…/dependents names it first."),
    Operation("GET", "/v1/tenants/{tenant}/policies", "iam.policies.list",
              "The tenant's policies and the principals they are attached to", "tenants",
              list_policies, response="PolicyPage"),
    Operation("GET", "/v1/doctor", "doctor.check",
              "Warnings an operator should act on, and (invariants=true) the invariant checks",
              TAG, doctor, response="Doctor",
              query=(Param("invariants", "boolean", "Run the invariant checks too.",
                           default=False),),
              description="Root's principals only (compute:doctor:read); FORBIDDEN otherwise."),
]  # fmt: skip

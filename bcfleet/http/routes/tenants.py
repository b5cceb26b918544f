"""Routes of tenants (root's admin creates them; a tenant's token sees only its own) and tokens."""

from __future__ import annotations

from typing import Any

from bcfleet.http.operations import Call, Operation
from bcfleet.http.schemas import NAME, STRING, TIME, obj, page, ref

TAG = "tenants"

SCHEMAS = {
    "Tenant": obj({"id": STRING, "name": STRING, "createdAt": TIME}),
    "TenantPage": page("Tenant"),
    "TenantCreate": obj({"id": NAME, "name": NAME}, required=["id"]),
    "Principal": obj(
        {"id": STRING, "tenantId": STRING, "name": STRING, "role": STRING, "createdAt": TIME}
    ),
    "TokenCreate": obj(
        {"name": NAME, "role": {"type": "string", "enum": ["admin", "member", "viewer"]}},
        required=["name"],
    ),
    "Token": obj(
        {"id": STRING, "token": STRING, "principal": ref("Principal"), "createdAt": TIME},
        description="The token is shown once, here.",
    ),
}


def list_tenants(call: Call) -> Any:
    return call.api.tenants.list(call.token)


def create_tenant(call: Call) -> Any:
    return call.api.tenants.create(call.token, call.field("id"), name=call.field("name"))


def create_token(call: Call) -> Any:
    return call.api.iam.create_token(
        call.token,
        tenant_id=call.path["tenant"],
        name=call.field("name"),
        role=call.field("role", "member"),
    )


OPERATIONS = [
    Operation(
        "GET",
        "/v1/tenants",
        "tenants.list",
        "List tenants",
        TAG,
        list_tenants,
        response="TenantPage",
    ),
    Operation(
        "POST",
        "/v1/tenants",
        "tenants.create",
        "Create a tenant (root's admin)",
        TAG,
        create_tenant,
        status=201,
        request="TenantCreate",
        response="Tenant",
    ),
    Operation(
        "POST",
        "/v1/tenants/{tenant}/tokens",
        "iam.tokens.create",
        "Create an API token for a principal of the tenant (shown once)",
        TAG,
        create_token,
        status=201,
        request="TokenCreate",
        response="Token",
    ),
]

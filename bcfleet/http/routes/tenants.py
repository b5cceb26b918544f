"""Routes of tenants (root's admin creates them; a tenant's token sees only its own) and tokens."""

from __future__ import annotations

from typing import Any

from bcfleet.api.documents import (
    PrincipalJson,
    TenantJson,
    TenantPageJson,
    TokenInfoJson,
    TokenJson,
    TokenPageJson,
    TokenRevokedJson,
    WhoAmIJson,
)
from bcfleet.domain.bounds import TENANT_ID, TENANT_NAME_MAX
from bcfleet.domain.policy import AGENT, ROLES
from bcfleet.domain.token_lifetime import MAX_TOKEN_LIFETIME
from bcfleet.http.operations import Call, Operation, Param
from bcfleet.http.rules import duration, identifier, matching, one_of, reference, text
from bcfleet.http.schemas import obj
from bcfleet.http.typed_schemas import document_schemas

TAG = "tenants"
LIFETIME = duration(MAX_TOKEN_LIFETIME, "The token's lifetime (absent: no expiry)")

AGENT_NEEDS_HOST = {
    "if": {"properties": {"role": {"const": AGENT}}, "required": ["role"]},
    "then": {"required": ["host"]},
    "else": {"not": {"required": ["host"]}},
}
"""iam.check_role: a host exactly when the role is agent."""

SCHEMAS = {
    **document_schemas((TenantJson, PrincipalJson, TenantPageJson)),
    "TenantCreate": obj(
        {"id": matching(TENANT_ID), "name": text(TENANT_NAME_MAX)}, required=["id"]
    ),
    "TokenCreate": {
        **obj(
            {
                "name": identifier(),
                "role": one_of(ROLES),
                "expiresIn": LIFETIME,
                "host": reference("The host (id or name) an agent token is bound to"),
            },
            required=["name"],
        ),
        **AGENT_NEEDS_HOST,
    },
    "TokenRotate": obj({"expiresIn": LIFETIME}, required=[]),
    **document_schemas((TokenJson, TokenInfoJson, TokenPageJson)),
    **document_schemas((TokenRevokedJson,)),
    **document_schemas((WhoAmIJson,)),
}


def whoami(call: Call) -> Any:
    return call.api.iam.whoami(call.token)


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
        expires_in=call.field("expiresIn"),
        host=call.field("host"),
    )


def list_tokens(call: Call) -> Any:
    return call.api.iam.list_tokens(
        call.token, tenant_id=call.path["tenant"], principal=call.query.get("name")
    )


def revoke_token(call: Call) -> Any:
    return call.api.iam.revoke_token(
        call.token, tenant_id=call.path["tenant"], token_id=call.path["tokenId"]
    )


def rotate_token(call: Call) -> Any:
    return call.api.iam.rotate_token(
        call.token,
        tenant_id=call.path["tenant"],
        token_id=call.path["tokenId"],
        expires_in=call.field("expiresIn"),
    )


OPERATIONS = [
    Operation(
        "GET",
        "/v1/whoami",
        "iam.whoami",
        "Who the token acts as: its tenant, role and principal",
        TAG,
        whoami,
        response="WhoAmI",
    ),
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
    Operation(
        "GET",
        "/v1/tenants/{tenant}/tokens",
        "iam.tokens.list",
        "List the tenant's API tokens and their state (never the tokens)",
        TAG,
        list_tokens,
        response="TokenPage",
        query=(Param("name", description="Only this principal's tokens.", text=text()),),
    ),
    Operation(
        "DELETE",
        "/v1/tenants/{tenant}/tokens/{tokenId}",
        "iam.tokens.revoke",
        "Revoke an API token by its id",
        TAG,
        revoke_token,
        response="TokenRevoked",
    ),
    Operation(
        "POST",
        "/v1/tenants/{tenant}/tokens/{tokenId}/rotate",
        "iam.tokens.rotate",
        "Replace an API token: a new one for the same principal, the old one revoked",
        TAG,
        rotate_token,
        status=201,
        request="TokenRotate",
        response="Token",
    ),
]

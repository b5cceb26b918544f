"""Routes of provider accounts (where a provider pool's servers come from) and their offers."""

from __future__ import annotations

from typing import Any

from bcfleet.api.documents import ProviderAccountJson, ProviderAccountPageJson
from bcfleet.api.provider_accounts import MAX_TOKEN
from bcfleet.domain.bounds import ENV_NAME, URL_MAX, URL_WORDS
from bcfleet.domain.states import PROVIDERS
from bcfleet.http.operations import TENANT, Call, Operation, Param
from bcfleet.http.rules import http_url, matching, one_of, secret, slug, text
from bcfleet.http.schemas import (
    ANY_OBJECT,
    array,
    nullable,
    obj,
)
from bcfleet.http.typed_schemas import document_schemas

TAG = "providers"

TOKENS = {"token": {"type": "string"}, "tokenEnv": {"type": "string"}}
SCHEMAS = {
    **document_schemas((ProviderAccountJson, ProviderAccountPageJson)),
    "ProviderAccountCreate": obj(
        {
            "name": slug(),
            "provider": one_of(PROVIDERS),
            "tokenEnv": nullable(
                {
                    **matching(ENV_NAME),
                    "description": "A server environment variable holding the token; root's "
                    "admin only. Not together with token.",
                }
            ),
            "token": secret(
                MAX_TOKEN,
                "The provider token, stored sealed and never returned: printable ASCII "
                "without spaces. Not together with tokenEnv.",
            ),
            "endpoint": nullable(
                {
                    **http_url(URL_MAX),
                    "description": f"The provider API's base URL: {URL_WORDS}; root's admin only.",
                }
            ),
        },
        required=["name", "provider"],
        description="Give token or tokenEnv (exactly one).",
    )
    | {"oneOf": [{"properties": {k: v}, "required": [k]} for k, v in TOKENS.items()]},
    "OfferPage": obj({"items": array(ANY_OBJECT)}),
}


def create_account(call: Call) -> Any:
    return call.api.provider_accounts.create(
        call.token,
        tenant_id=call.acting_tenant(),
        name=call.field("name"),
        provider=call.field("provider"),
        token_env=call.field("tokenEnv"),
        token=call.field("token"),
        endpoint=call.field("endpoint"),
    )


def list_accounts(call: Call) -> Any:
    return call.api.provider_accounts.list(call.token, tenant_id=call.acting_tenant())


def list_offers(call: Call) -> Any:
    return call.api.provider_accounts.offers(
        call.token,
        tenant_id=call.acting_tenant(),
        account_id=call.path["account"],
        kind=call.query.get("kind"),
        min_vcpu=call.query.get("minVcpu"),
    )


Q = (TENANT,)
OPERATIONS = [
    Operation("POST", "/v1/provider-accounts", "providerAccounts.create",
              "Register a provider account (its token is stored sealed, never returned)", TAG,
              create_account, status=201, request="ProviderAccountCreate",
              response="ProviderAccount", query=Q),
    Operation("GET", "/v1/provider-accounts", "providerAccounts.list",
              "List the caller's provider accounts", TAG, list_accounts,
              response="ProviderAccountPage", query=Q),
    Operation("GET", "/v1/provider-accounts/{account}/offers", "providerAccounts.offers",
              "The provider's offers, deprecated and unavailable ones flagged", TAG, list_offers,
              response="OfferPage",
              description="503 PROVIDER_UNAVAILABLE when the provider cannot be reached or "
              "answers what it does not document.",
              query=(TENANT, Param("kind", text={**text(), "description": "Only offers of this kind, e.g. vps."}),
                     Param("minVcpu", "integer", "At least this many vCPUs.", minimum=0,
                           maximum=100000))),
]  # fmt: skip

"""The console's administration reads and deletes over the HTTP API (RemoteSource's half of
admin_source.AdminSource): the same documents LocalAdmin gets from fleet.api."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from bcfleet.api.documents import (
    DeletedJson,
    FlavorDeletedJson,
    PolicyJson,
    TenantJson,
    TokenInfoJson,
    TokenRevokedJson,
    UsageWindowJson,
    WebhookDeliveryJson,
    WebhookJson,
)
from bcfleet.domain.dependents import DependentsJson
from bcfleet.errors import FleetError
from bcfleet.tui.admin_source import JSON, TokenRowJson, offer_failure, offer_rows

if TYPE_CHECKING:
    from bcfleet.client.fleet_client import FleetClient


def _p(value: str) -> str:
    """A path segment: a name with a slash or a space stays one segment."""
    return quote(value, safe="")


class RemoteAdmin:
    """AdminSource through a FleetClient (RemoteSource's base)."""

    client: FleetClient

    def _get(self, path: str, **params: Any) -> Any:
        return self.client.request("GET", path, params=params or None)

    def _tenant_ids(self) -> list[str]:
        tenants: list[TenantJson] = self.client.tenants()
        return [t["id"] for t in tenants]

    def webhooks(self) -> list[WebhookJson]:
        return list(self._get("/v1/webhooks")["items"])

    def webhook_deliveries(self, webhook_id: str) -> list[WebhookDeliveryJson]:
        return list(self._get(f"/v1/webhooks/{_p(webhook_id)}/deliveries")["items"])

    def tokens(self) -> list[TokenRowJson]:
        rows: list[TokenRowJson] = []
        for tenant in self._tenant_ids():
            found: list[TokenInfoJson] = self._get(f"/v1/tenants/{_p(tenant)}/tokens")["items"]
            rows.extend({**t, "tenantId": tenant} for t in found)
        return rows

    def policies(self) -> list[PolicyJson]:
        rows: list[PolicyJson] = []
        for tenant in self._tenant_ids():
            rows.extend(self._get(f"/v1/tenants/{_p(tenant)}/policies")["items"])
        return rows

    def offers(self) -> list[JSON]:
        rows: list[JSON] = []
        for tenant in self._tenant_ids():
            for account in self._get("/v1/provider-accounts", tenant=tenant)["items"]:
                path = f"/v1/provider-accounts/{_p(account['id'])}/offers"
                try:
                    found = self._get(path, tenant=tenant)["items"]
                except FleetError as exc:
                    rows.append(offer_failure(tenant, account["name"], exc))
                    continue
                rows.extend(offer_rows(tenant, account["name"], found))
        return rows

    def usage_export(self) -> Iterator[UsageWindowJson]:
        text = self._get("/v1/usage/export", format="json")
        lines = text.splitlines() if isinstance(text, str) else []
        return (json.loads(line) for line in lines if line.strip())

    def doctor(self, invariants: bool) -> JSON:
        answer: JSON = self._get("/v1/doctor", invariants=str(invariants).lower())
        return answer

    def _owner(self, pool: str) -> str:
        return str(self.client.pool(pool)["owner"])

    def _call(self, method: str, path: str, **params: Any) -> Any:
        return self.client.request(method, path, params=params or None)

    def delete_flavor(self, pool: str, name: str) -> FlavorDeletedJson:
        path = f"/v1/pools/{_p(pool)}/flavors/{_p(name)}"
        answer: FlavorDeletedJson = self._call("DELETE", path, tenant=self._owner(pool))
        return answer

    def delete_pool(self, pool: str) -> DeletedJson:
        answer: DeletedJson = self._call(
            "DELETE", f"/v1/pools/{_p(pool)}", tenant=self._owner(pool)
        )
        return answer

    def delete_provider_account(self, tenant: str, name: str) -> DeletedJson:
        path = f"/v1/provider-accounts/{_p(name)}"
        answer: DeletedJson = self._call("DELETE", path, tenant=tenant)
        return answer

    def remove_host(self, host: str) -> DeletedJson:
        answer: DeletedJson = self._call("DELETE", f"/v1/hosts/{_p(host)}")
        return answer

    def delete_tenant(self, tenant: str) -> DeletedJson:
        answer: DeletedJson = self._call("DELETE", f"/v1/tenants/{_p(tenant)}")
        return answer

    def delete_service(self, service_id: str) -> DeletedJson:
        answer: DeletedJson = self._call("DELETE", f"/v1/services/{_p(service_id)}")
        return answer

    def delete_environment(self, environment_id: str) -> DeletedJson:
        answer: DeletedJson = self._call("DELETE", f"/v1/environments/{_p(environment_id)}")
        return answer

    def delete_index(self, index_id: str) -> DeletedJson:
        answer: DeletedJson = self._call("DELETE", f"/v1/indexes/{_p(index_id)}")
        return answer

    def delete_webhook(self, webhook_id: str) -> DeletedJson:
        answer: DeletedJson = self._call("DELETE", f"/v1/webhooks/{_p(webhook_id)}")
        return answer

    def revoke_token(self, tenant: str, token_id: str) -> TokenRevokedJson:
        path = f"/v1/tenants/{_p(tenant)}/tokens/{_p(token_id)}"
        answer: TokenRevokedJson = self._call("DELETE", path)
        return answer

    def dependents(self, kind: str, ref: Mapping[str, Any]) -> DependentsJson:
        """GET …/dependents beside the row's delete route (http/routes/console.py)."""
        params: dict[str, Any] = {}
        if kind == "flavor":
            pool = str(ref["poolId"])
            path = f"/v1/pools/{_p(pool)}/flavors/{_p(ref['name'])}"
            params["tenant"] = self._owner(pool)
        elif kind == "token":
            path = f"/v1/tenants/{_p(ref['tenantId'])}/tokens/{_p(ref['id'])}"
        elif kind == "pool":
            path = f"/v1/pools/{_p(ref['id'])}"
            params["tenant"] = self._owner(str(ref["id"]))
        elif kind == "providerAccount":
            path = f"/v1/provider-accounts/{_p(ref['name'])}"
            params["tenant"] = ref["tenantId"]
        elif kind in ("service", "environment", "webhook", "instance", "host", "tenant"):
            path = f"/v1/{kind}s/{_p(ref['id'])}"
        else:
            raise ValueError(f"no dependents of a {kind}")
        answer: DependentsJson = self._get(path + "/dependents", **params)
        return answer

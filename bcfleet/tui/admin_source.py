"""The console's administration reads and deletes (webhooks, tokens, policies, offers, usage
export, doctor; deletes with their dependents): the FleetSource part over fleet.api.

`AdminSource` is the protocol FleetSource extends; `LocalAdmin` is LocalSource's half
of it (remote_admin.py the HTTP one). Like the rest of the source, every method is
called from a thread worker and answers the API's own JSON documents.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from bcfleet.api.documents import (
    DeletedJson,
    FlavorDeletedJson,
    PolicyJson,
    TokenInfoJson,
    TokenRevokedJson,
    UsageWindowJson,
    WebhookDeliveryJson,
    WebhookJson,
)
from bcfleet.domain.dependents import DependentsJson
from bcfleet.errors import FleetError

if TYPE_CHECKING:
    from bcfleet.api.auth import Credential
    from bcfleet.api.documents import TenantJson
    from bcfleet.api.facade import FleetAPI

JSON = dict[str, Any]


class TokenRowJson(TokenInfoJson):
    """A token as the console lists it: with its tenant (never the token or its hash)."""

    tenantId: str


def offer_rows(tenant: str, account: str, offers: Iterable[JSON]) -> list[JSON]:
    """Offers read for one account, each saying whose (`tenantId`, `account`)."""
    return [{**offer, "tenantId": tenant, "account": account} for offer in offers]


def offer_failure(tenant: str, account: str, error: FleetError) -> JSON:
    """The row of an account whose offers could not be read: the error, in the CLI's words."""
    return {"tenantId": tenant, "account": account, "error": f"{error.code}: {error.message}"}


class AdminSource(Protocol):
    """What the console's administration views read and delete."""

    def webhooks(self) -> list[WebhookJson]:
        """Every webhook the caller may see (root's admin: every tenant's)."""
        ...

    def webhook_deliveries(self, webhook_id: str) -> list[WebhookDeliveryJson]:
        """A webhook's latest deliveries, newest first."""
        ...

    def tokens(self) -> list[TokenRowJson]:
        """Each visible tenant's API tokens: who, when, state; never the token or its hash."""
        ...

    def policies(self) -> list[PolicyJson]:
        """Each visible tenant's policies, with the principals they are attached to."""
        ...

    def offers(self) -> list[JSON]:
        """Every provider account's offers, each with the account's name and tenant; an
        account whose provider did not answer gives one row with the error's code and message."""
        ...

    def usage_export(self) -> Iterator[UsageWindowJson]:
        """What `fleet usage export` gives: every window the caller may see, in id order."""
        ...

    def doctor(self, invariants: bool) -> JSON:
        """`fleet doctor`: its warnings, and the invariant checks when asked."""
        ...

    def delete_flavor(self, pool: str, name: str) -> FlavorDeletedJson:
        """Delete a flavor of a pool (id), as its owner; archived instead once any instance used it."""
        ...

    def delete_pool(self, pool: str) -> DeletedJson:
        """Delete an empty pool (id), as its owner."""
        ...

    def delete_provider_account(self, tenant: str, name: str) -> DeletedJson: ...

    def remove_host(self, host: str) -> DeletedJson:
        """Forget a host (id or name) nothing ever ran on."""
        ...

    def delete_tenant(self, tenant: str) -> DeletedJson: ...

    def delete_service(self, service_id: str) -> DeletedJson: ...

    def delete_environment(self, environment_id: str) -> DeletedJson: ...

    def delete_index(self, index_id: str) -> DeletedJson: ...

    def delete_webhook(self, webhook_id: str) -> DeletedJson: ...

    def revoke_token(self, tenant: str, token_id: str) -> TokenRevokedJson: ...

    def dependents(self, kind: str, ref: Mapping[str, Any]) -> DependentsJson:
        """What depends on a row of `kind` (flavor, service, environment, webhook, token, pool,
        providerAccount, host, tenant) and
        what deleting it would do now, as fleet.api.dependents says."""
        ...


class LocalAdmin:
    """AdminSource over fleet.api in this process (LocalSource's base)."""

    api: FleetAPI
    credential: Credential

    def _tenant_ids(self) -> list[str]:
        tenants: list[TenantJson] = self.api.tenants.list(self.credential)["items"]
        return [t["id"] for t in tenants]

    def webhooks(self) -> list[WebhookJson]:
        return self.api.webhooks.list(self.credential)["items"]

    def webhook_deliveries(self, webhook_id: str) -> list[WebhookDeliveryJson]:
        return self.api.webhooks.deliveries(self.credential, webhook_id)["items"]

    def tokens(self) -> list[TokenRowJson]:
        rows: list[TokenRowJson] = []
        for tenant in self._tenant_ids():
            found = self.api.iam.list_tokens(self.credential, tenant_id=tenant)["items"]
            rows.extend({**t, "tenantId": tenant} for t in found)
        return rows

    def policies(self) -> list[PolicyJson]:
        rows: list[PolicyJson] = []
        for tenant in self._tenant_ids():
            rows.extend(self.api.iam.list_policies(self.credential, tenant_id=tenant)["items"])
        return rows

    def offers(self) -> list[JSON]:
        rows: list[JSON] = []
        for tenant in self._tenant_ids():
            accounts = self.api.provider_accounts.list(self.credential, tenant_id=tenant)
            for account in accounts["items"]:
                try:
                    found = self.api.provider_accounts.offers(
                        self.credential, tenant_id=tenant, account_id=account["id"]
                    )["items"]
                except FleetError as exc:
                    rows.append(offer_failure(tenant, account["name"], exc))
                    continue
                rows.extend(offer_rows(tenant, account["name"], found))
        return rows

    def usage_export(self) -> Iterator[UsageWindowJson]:
        return self.api.usage.export(self.credential)

    def doctor(self, invariants: bool) -> JSON:
        return self.api.doctor.check(self.credential, invariants=invariants)

    def _owner(self, pool: str) -> str:
        return str(self.api.pools.show(self.credential, pool=pool)["owner"])

    def delete_flavor(self, pool: str, name: str) -> FlavorDeletedJson:
        return self.api.flavors.delete(
            self.credential, tenant_id=self._owner(pool), pool_id=pool, name=name
        )

    def delete_pool(self, pool: str) -> DeletedJson:
        return self.api.pools.delete(self.credential, tenant_id=self._owner(pool), pool=pool)

    def delete_provider_account(self, tenant: str, name: str) -> DeletedJson:
        return self.api.provider_accounts.delete(self.credential, tenant_id=tenant, name=name)

    def remove_host(self, host: str) -> DeletedJson:
        return self.api.hosts.remove(self.credential, host=host)

    def delete_tenant(self, tenant: str) -> DeletedJson:
        return self.api.tenants.delete(self.credential, tenant)

    def delete_service(self, service_id: str) -> DeletedJson:
        return self.api.services.delete(self.credential, service_id)

    def delete_environment(self, environment_id: str) -> DeletedJson:
        return self.api.environments.delete(self.credential, environment_id)

    def delete_index(self, index_id: str) -> DeletedJson:
        return self.api.indexes.delete(self.credential, index_id)

    def delete_webhook(self, webhook_id: str) -> DeletedJson:
        return self.api.webhooks.delete(self.credential, webhook_id)

    def revoke_token(self, tenant: str, token_id: str) -> TokenRevokedJson:
        return self.api.iam.revoke_token(self.credential, tenant_id=tenant, token_id=token_id)

    def dependents(self, kind: str, ref: Mapping[str, Any]) -> DependentsJson:
        area, cred = self.api.dependents, self.credential
        if kind == "flavor":
            pool = str(ref["poolId"])
            return area.of_flavor(cred, tenant_id=self._owner(pool), pool=pool, name=ref["name"])
        if kind == "service":
            return area.of_service(cred, ref["id"])
        if kind == "environment":
            return area.of_environment(cred, ref["id"])
        if kind == "webhook":
            return area.of_webhook(cred, ref["id"])
        if kind == "token":
            return area.of_token(cred, tenant_id=ref["tenantId"], token_id=ref["id"])
        if kind == "pool":
            pool = str(ref["id"])
            return area.of_pool(cred, tenant_id=self._owner(pool), pool=pool)
        if kind == "providerAccount":
            return area.of_provider_account(
                cred, tenant_id=ref["tenantId"], account=str(ref["name"])
            )
        if kind == "host":
            return area.of_host(cred, host=str(ref["id"]))
        if kind == "tenant":
            return area.of_tenant(cred, str(ref["id"]))
        raise ValueError(f"no dependents of a {kind}")

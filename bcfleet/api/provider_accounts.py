"""Provider accounts: where a provider pool's servers are made; the token stays in an environment variable.

``offers`` asks the account's provider for what it sells (document 000, "Flavors
on provider pools"), fresh each call, through the fleet's OfferCatalog. Provider
failures keep their codes (UNAUTHENTICATED when the token variable is unset,
PROVIDER_UNAVAILABLE when the provider cannot be reached, …).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from sqlmodel import Session, select

from bcfleet.api.auth import Credential, tenant_resource
from bcfleet.api.base import Area
from bcfleet.api.lookup import get_tenant
from bcfleet.api.offer_checks import AccountRef, OfferCatalog
from bcfleet.clock import format_time
from bcfleet.domain.bounds import check_text
from bcfleet.errors import ConflictError, InvalidInputError, NotFoundError
from bcfleet.providers.base import filter_offers
from bcfleet.store.models import Pool, ProviderAccount

if TYPE_CHECKING:
    from bcfleet.fleet import Fleet

PROVIDERS = ("hetzner",)
ENV_NAME = re.compile(r"^[A-Z_][A-Z0-9_]*$")


def account_json(account: ProviderAccount) -> dict[str, Any]:
    return {
        "id": account.id,
        "name": account.name,
        "provider": account.provider,
        "tokenEnv": account.token_env,
        "endpoint": account.endpoint,
        "createdAt": format_time(account.created_at),
    }


def validate_account(provider: str, token_env: str) -> None:
    if provider not in PROVIDERS:
        raise InvalidInputError(
            f"provider must be one of {', '.join(PROVIDERS)}", {"provider": provider}
        )
    if not ENV_NAME.match(token_env):
        raise InvalidInputError(
            "tokenEnv names the environment variable that holds the token, e.g. HCLOUD_TOKEN",
            {"tokenEnv": token_env},
        )


def find_account(session: Session, tenant_id: str, ref: str) -> ProviderAccount:
    """A tenant's provider account by id or name; NOT_FOUND otherwise."""
    account = session.exec(
        select(ProviderAccount).where(
            ProviderAccount.tenant_id == tenant_id,
            (ProviderAccount.id == ref) | (ProviderAccount.name == ref),
        )
    ).first()
    if account is None:
        raise NotFoundError(f"provider account {ref!r} not found", {"providerAccount": ref})
    return account


def _check_filters(kind: str | None, min_vcpu: int | None) -> None:
    if kind is not None and (not isinstance(kind, str) or not kind):
        raise InvalidInputError("kind must be a non-empty string such as vps", {"field": "kind"})
    if min_vcpu is not None and (
        isinstance(min_vcpu, bool) or not isinstance(min_vcpu, int) or min_vcpu < 0
    ):
        raise InvalidInputError("minVcpu must be a whole number >= 0", {"field": "minVcpu"})


class ProviderAccountsAPI(Area):
    def __init__(self, fleet: Fleet, catalog: OfferCatalog | None = None) -> None:
        super().__init__(fleet)
        self.catalog = catalog or OfferCatalog(fleet)

    def create(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        name: str,
        provider: str,
        token_env: str,
        endpoint: str | None = None,
        managed: bool = False,
    ) -> dict[str, Any]:
        check_text("name", name)
        validate_account(provider, token_env)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:providers:manage", tenant_resource(tenant_id))
            get_tenant(session, tenant_id)
            clash = session.exec(
                select(ProviderAccount.id).where(
                    ProviderAccount.tenant_id == tenant_id, ProviderAccount.name == name
                )
            ).first()
            if clash is not None:
                raise ConflictError(f"provider account {name!r} already exists", {"name": name})
            account = ProviderAccount(
                id=self.fleet.new_id("pacct"),
                tenant_id=tenant_id,
                name=name,
                provider=provider,
                token_env=token_env,
                endpoint=endpoint,
                created_at=self.fleet.now(),
                managed=managed,
            )
            session.add(account)
            return account_json(account)

    def update(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        name: str,
        provider: str,
        token_env: str,
        endpoint: str | None = None,
    ) -> dict[str, Any]:
        """Replace an account's provider, tokenEnv and endpoint (None: no endpoint)."""
        validate_account(provider, token_env)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:providers:manage", tenant_resource(tenant_id))
            account = find_account(session, tenant_id, name)
            account.provider, account.token_env = provider, token_env
            account.endpoint = endpoint
            session.add(account)
            return account_json(account)

    def set_managed(
        self, credential: Credential | None, *, tenant_id: str, name: str, managed: bool = True
    ) -> dict[str, Any]:
        """Bring an account under FleetConfig management (or release it)."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:providers:manage", tenant_resource(tenant_id))
            account = find_account(session, tenant_id, name)
            account.managed = managed
            session.add(account)
            return account_json(account)

    def delete(self, credential: Credential | None, *, tenant_id: str, name: str) -> dict[str, Any]:
        """Delete an account no pool uses; CONFLICT naming the pools that still do."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:providers:manage", tenant_resource(tenant_id))
            account = find_account(session, tenant_id, name)
            pools = session.exec(
                select(Pool.name).where(Pool.provider_account_id == account.id).order_by(Pool.name)
            ).all()
            if pools:
                raise ConflictError(
                    f"provider account {name!r} is used by pools {', '.join(pools)}",
                    {"providerAccount": name, "pools": list(pools)},
                )
            session.delete(account)
            return {"deleted": True, "id": account.id}

    def list(self, credential: Credential | None, *, tenant_id: str) -> dict[str, Any]:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:providers:read", tenant_resource(tenant_id))
            rows = session.exec(
                select(ProviderAccount)
                .where(ProviderAccount.tenant_id == tenant_id)
                .order_by(ProviderAccount.name)
            ).all()
            return {"items": [account_json(a) for a in rows]}

    def offers(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        account_id: str,
        kind: str | None = None,
        min_vcpu: int | None = None,
    ) -> dict[str, Any]:
        """compute:providers:read: { items } of the provider's offers, sorted by id then region.

        ``account_id`` is the account's id or name. Each item is document 000's
        offer plus ``deprecated``; deprecated and unavailable offers are listed,
        flagged, so that nobody picks one without seeing it.
        """
        _check_filters(kind, min_vcpu)
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:providers:read", tenant_resource(tenant_id))
            account = AccountRef.of(find_account(session, tenant_id, account_id))
        offers = self.catalog.offers(account, fresh=True)  # no transaction open while it answers
        return {"items": [offer.to_json() for offer in filter_offers(offers, kind, min_vcpu)]}

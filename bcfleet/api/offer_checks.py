"""The offer catalog with the two FlavorsAPI hooks: the check inside the write, the warm-up before.

The catalog itself (accounts, cache, the verdict) is bcfleet/providers/offer_catalog.py;
what is here needs the API's authorization and lookups.
"""

from __future__ import annotations

from sqlmodel import Session

from bcfleet.api.auth import Credential, authenticate, pool_resource
from bcfleet.api.lookup import find_pool
from bcfleet.domain.states import PoolKind
from bcfleet.errors import FleetError
from bcfleet.providers.offer_catalog import AccountRef, OfferCatalog
from bcfleet.store.models import Pool, ProviderAccount


class FlavorOfferCatalog(OfferCatalog):
    """The fleet's one offer catalog, as FleetAPI.offer_catalog hands it out."""

    def flavor_check(self, session: Session, pool: Pool, offer_id: str) -> list[str]:
        """FlavorsAPI.offer_check: the check for a provider pool's flavor, inside its transaction."""
        if pool.kind != PoolKind.PROVIDER or pool.provider_account_id is None:
            return []
        account = session.get(ProviderAccount, pool.provider_account_id)
        if account is None:
            return []
        return self.check(AccountRef.of(account), offer_id)

    def warm_for_pool(self, credential: Credential | None, tenant_id: str, pool_ref: str) -> None:
        """FlavorsAPI.offer_prefetch: warm the pool's account before the write transaction.

        Anything wrong (unknown pool, no permission) is left for the call itself to
        report; an actor that may not manage the pool's flavors causes no lookup.
        """
        account: AccountRef | None = None
        try:
            with self.fleet.read() as session:
                actor = authenticate(session, credential, tenant_id, self.fleet.now())
                pool = find_pool(session, actor, pool_ref)
                actor.require("compute:flavors:manage", pool_resource(pool))
                row = (
                    session.get(ProviderAccount, pool.provider_account_id)
                    if pool.kind == PoolKind.PROVIDER and pool.provider_account_id
                    else None
                )
                account = AccountRef.of(row) if row is not None else None
        except FleetError:
            return
        if account is not None:
            self.warm(account)

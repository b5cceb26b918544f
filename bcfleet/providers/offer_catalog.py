"""Each provider account's offers, cached briefly, and the offer check of provider-pool flavors.

FleetAPI builds one catalog (api/offer_checks.py adds the two FlavorsAPI hooks) and
installs its ``flavor_check`` as ``FlavorsAPI.offer_check`` and its ``warm_for_pool`` as
``FlavorsAPI.offer_prefetch``. ``providerAccounts.offers`` and the
``providers.reconcile`` job use the same catalog, so every provider client is
opened the same way (the fleet's clock, ``client_options``).

Offers are kept per account for ``ttl_seconds`` (fleet clock), a failed lookup
for ``error_ttl_seconds``: a FleetConfig apply with many flavors asks the
provider once per account, not once per flavor.

Where the lookup happens. flavors.create and flavors.update run in one write
transaction, and on SQLite that transaction holds the database's write lock.
So the provider is asked before it: ``offer_prefetch`` resolves the pool's
account in a short read and fills the cache with no transaction open, and the
check inside the write transaction only reads the cache. Only a caller that
skipped the prefetch (an apply that runs every flavor in one transaction of its
own, say) finds the cache cold inside its transaction; it should call
:meth:`OfferCatalog.warm_all` (or :meth:`OfferCatalog.warm`) first. When it did not, the check asks the provider
there and then, with a short budget (one retry, a five-second timeout), so
the lock is held for seconds at worst.

How an account is opened. Its token is the server's environment variable
``token_env`` (root's admin named it) or the tenant's own token, unsealed with
the operator's key for the one client. Its requests go through the egress guard
(bcfleet/egress.py, with the operator's allowed ranges) unless the account is
root's own and root's admin gave it an explicit endpoint: that endpoint is the
operator's choice (the local fake provider in tests and demos) and is trusted.

What the check says. An offer id the provider does not sell is INVALID_INPUT
naming the nearest ids. An offer that is deprecated, or available in no region,
is a warning in the response (PRODUCT.md §1: never used silently). When the
provider cannot be asked (no token in the environment, provider down) the
flavor is still written, with a warning that the offer was not checked: the
reconciler reports a bad offer on the instance when it creates the server.
"""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

from sqlmodel import col, select

from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.egress import EgressGuard
from bcfleet.errors import FleetError, InvalidInputError
from bcfleet.providers.base import Offer, ProviderImpl
from bcfleet.providers.registry import open_provider
from bcfleet.providers.retrying import RetryPolicy
from bcfleet.secretbox import open_sealed
from bcfleet.store.handle import StoreHandle
from bcfleet.store.models import Pool, ProviderAccount

if TYPE_CHECKING:
    from bcfleet.settings import FleetSettings


class CatalogHandle(StoreHandle, Protocol):
    """A fleet as the catalog sees it: its transactions, clock and settings (store/handle.py)."""

    @property
    def settings(self) -> FleetSettings: ...


DEFAULT_TTL_SECONDS = 60.0
DEFAULT_ERROR_TTL_SECONDS = 10.0
NEAREST = 3
# The budget of a lookup made inside a write transaction (the cache was cold).
IN_TRANSACTION_OPTIONS: dict[str, Any] = {
    "timeout": 5.0,
    "retry": RetryPolicy(max_attempts=2, base_delay=0.2, max_delay=1.0, max_rate_limit_wait=2.0),
}


@dataclass(frozen=True)
class AccountRef:
    """What opening a provider account needs, detached from any session."""

    id: str
    tenant_id: str
    name: str
    provider: str
    token_env: str | None
    endpoint: str | None
    sealed_token: str | None = field(default=None, repr=False)

    @classmethod
    def of(cls, account: ProviderAccount) -> AccountRef:
        return cls(
            id=account.id,
            tenant_id=account.tenant_id,
            name=account.name,
            provider=account.provider,
            token_env=account.token_env,
            endpoint=account.endpoint,
            sealed_token=account.sealed_token,
        )

    @property
    def endpoint_trusted(self) -> bool:
        """Root's own account with an endpoint root's admin set: not behind the egress guard."""
        return self.tenant_id == ROOT_TENANT and self.endpoint is not None


@dataclass(frozen=True)
class _Entry:
    fetched_at: datetime
    offers: tuple[Offer, ...] = ()
    error: FleetError | None = None


class OfferCatalog:
    """Opens providers for accounts and keeps each account's offers for a short time."""

    def __init__(
        self,
        fleet: CatalogHandle,
        *,
        ttl_seconds: float = DEFAULT_TTL_SECONDS,
        error_ttl_seconds: float = DEFAULT_ERROR_TTL_SECONDS,
        client_options: dict[str, Any] | None = None,
    ) -> None:
        self.fleet = fleet
        self.ttl_seconds = ttl_seconds
        self.error_ttl_seconds = error_ttl_seconds
        # Extra HetznerProvider options for every client (timeout, retry, …).
        self.client_options: dict[str, Any] = dict(client_options or {})
        self._entries: dict[str, _Entry] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"OfferCatalog(ttl_seconds={self.ttl_seconds}, accounts={len(self._entries)})"

    def open(self, account: AccountRef, **overrides: Any) -> ProviderImpl:
        """A provider client for the account (close it when done)."""
        options = {"clock": self.fleet.clock, **self.client_options, **overrides}
        settings = self.fleet.settings
        token = None
        if account.sealed_token is not None:
            token = open_sealed(settings.secret_key, account.sealed_token)
        egress = None if account.endpoint_trusted else EgressGuard(settings.egress_allow)
        return open_provider(
            account.provider,
            token_env=None if token is not None else account.token_env,
            token=token,
            endpoint=account.endpoint,
            egress=egress,
            **options,
        )

    def offers(self, account: AccountRef, *, fresh: bool = False) -> list[Offer]:
        """The account's offers, from the cache unless stale or ``fresh``; provider errors raise."""
        entry = None if fresh else self._cached(account.id, self.ttl_seconds)
        if entry is None:
            entry = self._fetch(account)
        if entry.error is not None:
            raise entry.error
        return list(entry.offers)

    def warm(self, account: AccountRef) -> None:
        """Fill the cache for the account unless it is fresh enough; never raises provider errors."""
        entry = self._cached(account.id, self.ttl_seconds / 2)
        if entry is not None and (entry.error is None or self._age(entry) < self.error_ttl_seconds):
            return
        self._fetch(account)

    def warm_all(self) -> int:
        """Warm every account that has a provider pool (before an apply's transaction); how many."""
        with self.fleet.read() as session:
            rows = session.exec(
                select(ProviderAccount)
                .join(Pool, col(Pool.provider_account_id) == col(ProviderAccount.id))
                .where(Pool.kind == "provider")
                .distinct()
            ).all()
            accounts = [AccountRef.of(row) for row in rows]
        for account in accounts:
            self.warm(account)
        return len(accounts)

    def invalidate(self, account_id: str | None = None) -> None:
        """Forget one account's offers, or every account's."""
        with self._lock:
            if account_id is None:
                self._entries.clear()
            else:
                self._entries.pop(account_id, None)

    def check(self, account: AccountRef, offer_id: str) -> list[str]:
        """Warnings for a flavor naming this offer; INVALID_INPUT when the provider does not sell it."""
        entry = self._cached(account.id, self.ttl_seconds) or self._fetch(
            account, **IN_TRANSACTION_OPTIONS
        )
        if entry.error is not None:
            error = entry.error
            return [
                f"offer {offer_id!r} was not checked: provider account {account.name!r} "
                f"answered {error.code}: {error.message}"
            ]
        return offer_warnings(entry.offers, offer_id, account)

    # ----- the cache ------------------------------------------------------------------------

    def _age(self, entry: _Entry) -> float:
        return (self.fleet.clock.now() - entry.fetched_at).total_seconds()

    def _cached(self, account_id: str, max_age: float) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(account_id)
        if entry is None:
            return None
        limit = max_age if entry.error is None else min(max_age, self.error_ttl_seconds)
        return entry if self._age(entry) < limit else None

    def _fetch(self, account: AccountRef, **overrides: Any) -> _Entry:
        """Ask the provider (no lock held while it answers) and remember the answer or the error."""
        try:
            provider = self.open(account, **overrides)
            try:
                entry = _Entry(self.fleet.clock.now(), offers=tuple(provider.offers()))
            finally:
                provider.close()
        except FleetError as error:
            entry = _Entry(self.fleet.clock.now(), error=error)
        with self._lock:
            self._entries[account.id] = entry
        return entry


def offer_warnings(offers: Sequence[Offer], offer_id: str, account: AccountRef) -> list[str]:
    """The check's verdict over the account's offers (every region of the id)."""
    matching = [o for o in offers if o.id == offer_id]
    if not matching:
        raise unknown_offer(offers, offer_id, account)
    warnings = []
    if any(o.deprecated for o in matching):
        warnings.append(
            f"offer {offer_id!r} is deprecated by {account.provider}: "
            "new servers may become impossible; choose a current offer"
        )
    if not any(o.available for o in matching):
        regions = ", ".join(sorted(o.region for o in matching))
        warnings.append(
            f"offer {offer_id!r} is not available in any region now ({regions}); "
            "instances stay provisioning until it is"
        )
    return warnings


def unknown_offer(offers: Sequence[Offer], offer_id: str, account: AccountRef) -> FleetError:
    """INVALID_INPUT for an offer id the account's provider does not sell, with the nearest ids."""
    nearest = nearest_offer_ids(offers, offer_id)
    hint = f"; nearest: {', '.join(nearest)}" if nearest else ""
    message = f"offer {offer_id!r} does not exist at provider account {account.name!r}{hint}"
    return InvalidInputError(
        message,
        {
            "offerId": offer_id,
            "nearest": nearest,
            "providerAccount": account.id,
            "fields": {"offerId": message},
        },
    )


def nearest_offer_ids(offers: Sequence[Offer], offer_id: str, count: int = NEAREST) -> list[str]:
    """Up to ``count`` offer ids closest in spelling to ``offer_id`` (a shared prefix counts most)."""
    ids = sorted({o.id for o in offers})

    def distance(candidate: str) -> tuple[int, float, str]:
        prefix = len(os.path.commonprefix([candidate, offer_id]))
        ratio = difflib.SequenceMatcher(None, candidate, offer_id).ratio()
        return (-prefix, -ratio, candidate)

    return sorted(ids, key=distance)[:count]

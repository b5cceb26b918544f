"""Provider accounts: where a provider pool's servers are made, and whose token pays for them.

Where the token comes from, and who may say so:

- ``token``: the provider token itself. Anyone who manages the tenant's provider
  accounts may give it; it is sealed with the operator's key (bcfleet/secretbox.py)
  and never shown again (the account's JSON says ``hasToken``). Without a
  configured key it is INVALID_INPUT: a token is never stored in plaintext.
- ``tokenEnv``: the name of one of the server's own environment variables. Only
  root's admin (the local operator or a root admin token, also when acting as
  another tenant) may name one; anyone else is FORBIDDEN, since the server would
  send that variable's value to the provider.
- ``endpoint``: only root's admin may set it; without it the account talks to
  the provider's documented API host. See providers/offer_catalog.py for which accounts go
  through the egress guard.

``offers`` asks the account's provider for what it sells (document 000, "Flavors
on provider pools"), fresh each call, through the fleet's OfferCatalog. Provider
failures keep their codes (UNAUTHENTICATED when the token variable is unset,
PROVIDER_UNAVAILABLE when the provider cannot be reached, …).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlmodel import Session, select

from bcfleet.api.auth import Actor, Credential, acting_for, resolve, tenant_resource
from bcfleet.api.base import Area
from bcfleet.api.documents import DeletedJson, ProviderAccountJson, ProviderAccountPageJson
from bcfleet.api.lookup import get_tenant
from bcfleet.api.views import deleted_json
from bcfleet.clock import format_time
from bcfleet.domain.bounds import ENV_NAME, URL_MAX, check_slug, url_problem
from bcfleet.domain.states import PROVIDERS
from bcfleet.errors import ConflictError, ForbiddenError, InvalidInputError, NotFoundError
from bcfleet.providers.base import filter_offers
from bcfleet.providers.offer_catalog import AccountRef, OfferCatalog
from bcfleet.secretbox import Secret, require_box
from bcfleet.store.models import Pool, ProviderAccount

if TYPE_CHECKING:
    from bcfleet.api.handle import ApiHandle

MAX_TOKEN = 4096


def account_json(account: ProviderAccount) -> ProviderAccountJson:
    """The account as the API shows it: never the token, only whether one is stored."""
    return {
        "id": account.id,
        "name": account.name,
        "provider": account.provider,
        "tokenEnv": account.token_env,
        "hasToken": account.sealed_token is not None,
        "endpoint": account.endpoint,
        "createdAt": format_time(account.created_at),
    }


def validate_account(
    provider: str, token_env: str | None, token: str | None, endpoint: str | None
) -> Secret | None:
    """INVALID_INPUT for a bad field (never quoting the token); the token as a Secret."""
    if provider not in PROVIDERS:
        raise InvalidInputError(
            f"provider must be one of {', '.join(PROVIDERS)}", {"provider": provider}
        )
    if token_env is not None and token is not None:
        raise InvalidInputError(
            "give either token or tokenEnv, not both", {"fields": ["token", "tokenEnv"]}
        )
    if token_env is not None and (
        not isinstance(token_env, str) or not ENV_NAME.fullmatch(token_env)
    ):
        raise InvalidInputError(
            "tokenEnv names the environment variable that holds the token, e.g. HCLOUD_TOKEN",
            {"field": "tokenEnv"},
        )
    if endpoint is not None:
        problem = url_problem("endpoint", endpoint, URL_MAX)
        if problem is not None:
            raise InvalidInputError(problem, {"field": "endpoint"})
    return None if token is None else _token(token)


def _token(token: Any) -> Secret:
    if (
        not isinstance(token, str)
        or not 0 < len(token) <= MAX_TOKEN
        or not all(33 <= ord(ch) <= 126 for ch in token)
    ):
        raise InvalidInputError(
            f"token must be 1 to {MAX_TOKEN} printable ASCII characters without spaces",
            {"field": "token"},
        )
    return Secret(token)


def require_privilege(caller: Actor, token_env: str | None, endpoint: str | None) -> None:
    """FORBIDDEN unless root's admin: naming a server variable or an endpoint (no value quoted)."""
    if caller.is_root_admin:
        return
    if token_env is not None:
        raise ForbiddenError(
            "only the root tenant's admin may name a server environment variable (tokenEnv); "
            "give the provider token itself as token",
            {"field": "tokenEnv"},
        )
    if endpoint is not None:
        raise ForbiddenError(
            "only the root tenant's admin may set a provider account's endpoint; "
            "accounts use the provider's own API",
            {"field": "endpoint"},
        )


def tenant_accounts(session: Session, tenant_id: str) -> list[ProviderAccount]:
    """A tenant's provider accounts by name (the list and FleetConfig's root accounts)."""
    query = select(ProviderAccount).where(ProviderAccount.tenant_id == tenant_id)
    return list(session.exec(query.order_by(ProviderAccount.name)).all())


def pools_using(session: Session, account_id: str) -> list[str]:
    """The names of the pools on an account: its delete is refused while there are any."""
    query = select(Pool.name).where(Pool.provider_account_id == account_id)
    return list(session.exec(query.order_by(Pool.name)).all())


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
    def __init__(self, fleet: ApiHandle, catalog: OfferCatalog | None = None) -> None:
        super().__init__(fleet)
        self.catalog = catalog or OfferCatalog(fleet)

    def create(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        name: str,
        provider: str,
        token_env: str | None = None,
        token: str | None = None,
        endpoint: str | None = None,
        managed: bool = False,
    ) -> ProviderAccountJson:
        """Register an account whose token is ``token`` (sealed) or root's ``token_env``."""
        check_slug("provider account", name)  # as the FleetConfig names it; a URL path segment
        with self.fleet.write() as session:
            self._authorize(session, credential, tenant_id, token_env, endpoint)
            secret = validate_account(provider, token_env, token, endpoint)
            if secret is None and token_env is None:
                raise InvalidInputError(
                    "a provider account needs its provider token (token)", {"field": "token"}
                )
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
                sealed_token=self._seal(secret),
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
        token_env: str | None = None,
        token: str | None = None,
        endpoint: str | None = None,
    ) -> ProviderAccountJson:
        """Replace an account's provider and endpoint (None: the provider's own API), and its
        token source when ``token_env`` or ``token`` is given (the other one is dropped)."""
        with self.fleet.write() as session:
            self._authorize(session, credential, tenant_id, token_env, endpoint)
            secret = validate_account(provider, token_env, token, endpoint)
            account = find_account(session, tenant_id, name)
            account.provider, account.endpoint = provider, endpoint
            if token_env is not None or secret is not None:
                account.token_env, account.sealed_token = token_env, self._seal(secret)
            session.add(account)
            return account_json(account)

    def _authorize(
        self,
        session: Session,
        credential: Credential | None,
        tenant_id: str,
        token_env: str | None,
        endpoint: str | None,
    ) -> None:
        """compute:providers:manage on the tenant, and root's admin for tokenEnv or endpoint."""
        caller = resolve(session, credential, self.fleet.now())
        acting_for(session, caller, tenant_id).require(
            "compute:providers:manage", tenant_resource(tenant_id)
        )
        require_privilege(caller, token_env, endpoint)

    def _seal(self, secret: Secret | None) -> str | None:
        """The sealed token, or INVALID_INPUT when the operator configured no key."""
        if secret is None:
            return None
        return require_box(self.fleet.settings.secret_key).seal(secret)

    def set_managed(
        self, credential: Credential | None, *, tenant_id: str, name: str, managed: bool = True
    ) -> ProviderAccountJson:
        """Bring an account under FleetConfig management (or release it)."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:providers:manage", tenant_resource(tenant_id))
            account = find_account(session, tenant_id, name)
            account.managed = managed
            session.add(account)
            return account_json(account)

    def delete(self, credential: Credential | None, *, tenant_id: str, name: str) -> DeletedJson:
        """Delete an account no pool uses; CONFLICT naming the pools that still do."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:providers:manage", tenant_resource(tenant_id))
            account = find_account(session, tenant_id, name)
            pools = pools_using(session, account.id)
            if pools:
                raise ConflictError(
                    f"provider account {name!r} is used by pools {', '.join(pools)}",
                    {"providerAccount": name, "pools": list(pools)},
                )
            session.delete(account)
            return deleted_json(account.id)

    def list(self, credential: Credential | None, *, tenant_id: str) -> ProviderAccountPageJson:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:providers:read", tenant_resource(tenant_id))
            return {"items": [account_json(a) for a in tenant_accounts(session, tenant_id)]}

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

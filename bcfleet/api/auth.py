"""Credentials to actors, and the authorization every API call makes before it touches state.

Its reads are Core statements (bcfleet/store/tables.py) on a session or a bare connection, so
a read that runs without the ORM (Fleet.read_core) authorizes as every other call does.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Container, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sqlalchemy import bindparam, select

from bcfleet.domain.policy import (
    HOST_ATTRIBUTE,
    HOST_REPORT,
    ROOT_TENANT,
    decide,
    may_use_pool,
    policy_key,
    role_statements,
)
from bcfleet.domain.policy_bounds import principal_statements
from bcfleet.domain.states import TokenState
from bcfleet.errors import ForbiddenError, NotFoundError, UnauthenticatedError
from bcfleet.store.driver_sql import DriverRows, DriverStatement, core_connection
from bcfleet.store.tables import (
    API_TOKENS,
    POLICIES,
    POLICY_ATTACHMENTS,
    POOL_OFFERS,
    POOLS,
    PRINCIPALS,
    TENANTS,
)

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlmodel import Session

    Transaction = Session | Connection
    """Where a read runs: an API call's session, or a connection for reads without the ORM."""

TOKEN_PREFIX = "bcf_"


class LocalOperator:
    """Whoever can write the database file: the root tenant's admin (PRODUCT.md §5)."""

    def __repr__(self) -> str:
        return "LOCAL_OPERATOR"


LOCAL_OPERATOR = LocalOperator()

Credential = str | LocalOperator


@dataclass(frozen=True)
class Actor:
    """Who is asking, for which tenant, with which statements."""

    tenant_id: str
    role: str
    principal_id: str | None
    statements: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)
    operator: bool = False

    @property
    def is_root_admin(self) -> bool:
        return self.tenant_id == ROOT_TENANT and self.role == "admin"

    @cached_property
    def policy_key(self) -> str:
        """Its statements' content (domain.policy.policy_key), read once an actor."""
        return policy_key(self.statements)

    def can(self, action: str, resource: str, attributes: Mapping[str, Any] | None = None) -> bool:
        return decide(self.policy_key, self.statements, action, resource, attributes or {}).allowed

    def require(
        self, action: str, resource: str, attributes: Mapping[str, Any] | None = None
    ) -> None:
        """FORBIDDEN unless the policies allow the action on the resource (domain.policy.decide:
        the decision kept by the statements' content and the request)."""
        decision = decide(self.policy_key, self.statements, action, resource, attributes or {})
        if not decision.allowed:
            raise ForbiddenError(
                f"{action} is not allowed: {decision.reason}",
                {"action": action, "resource": resource},
            )


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return TOKEN_PREFIX + secrets.token_urlsafe(32)


def check_token_shape(credential: object) -> str:
    """The credential as a token string; UNAUTHENTICATED when absent, blank or not a bcf_ token."""
    if not isinstance(credential, str) or not credential.strip():
        raise UnauthenticatedError("a token is required")
    if not credential.startswith(TOKEN_PREFIX) or credential != credential.strip():
        raise UnauthenticatedError(f"malformed token: tokens start with {TOKEN_PREFIX!r}")
    return credential


class TokenTimes(Protocol):
    """What token_state reads of a token (an ApiToken row has it)."""

    @property
    def revoked_at(self) -> datetime | None: ...
    @property
    def expires_at(self) -> datetime | None: ...


class PoolRef(Protocol):
    """What authorization reads of a pool (a Pool row has it)."""

    @property
    def id(self) -> str: ...
    @property
    def owner_tenant_id(self) -> str: ...


@dataclass(frozen=True)
class TokenHolder:
    """The principal a live token belongs to."""

    id: str
    tenant_id: str
    role: str
    host_id: str | None  # the host an agent is bound to (None for every other role)


@dataclass(frozen=True)
class _TokenRow:
    revoked_at: datetime | None
    expires_at: datetime | None


def _rows(on: Transaction, statement: DriverStatement, params: Mapping[str, Any]) -> DriverRows:
    """The statement's rows in the transaction of `on`; a session is flushed first, as the ORM's
    autoflush would, so rows added earlier in the same call are seen."""
    return statement.run(core_connection(on), params)


_TOKEN = DriverStatement(
    select(API_TOKENS.c.revoked_at, API_TOKENS.c.expires_at, API_TOKENS.c.principal_id).where(
        API_TOKENS.c.token_hash == bindparam("h")
    )
)
_PRINCIPAL = DriverStatement(
    select(PRINCIPALS.c.id, PRINCIPALS.c.tenant_id, PRINCIPALS.c.role, PRINCIPALS.c.host_id).where(
        PRINCIPALS.c.id == bindparam("p")
    )
)
_ATTACHED = DriverStatement(
    select(POLICIES.c.statements)
    .join(POLICY_ATTACHMENTS, POLICY_ATTACHMENTS.c.policy_id == POLICIES.c.id)
    .where(POLICY_ATTACHMENTS.c.principal_id == bindparam("p"))
)


def token_state(row: TokenTimes, now: datetime) -> str:
    """active, expired (expires_at at or before now) or revoked: what tokens.list shows."""
    if row.revoked_at is not None:
        return TokenState.REVOKED.value
    if row.expires_at is not None and row.expires_at <= now:
        return TokenState.EXPIRED.value
    return TokenState.ACTIVE.value


def token_principal(on: Transaction, credential: object, now: datetime) -> TokenHolder:
    """The principal of a live token: UNAUTHENTICATED for a malformed, unknown, revoked or expired one.

    The one place a token is checked: resolve() calls it, and the HTTP edge calls it
    (through IamAPI.check_token) before it reads a request's body.
    """
    token = check_token_shape(credential)
    row = _rows(on, _TOKEN, {"h": hash_token(token)}).first()
    state = None if row is None else token_state(_TokenRow(row[0], row[1]), now)
    if row is None or state == "revoked":
        raise UnauthenticatedError("unknown or revoked token")
    if state == "expired":
        raise UnauthenticatedError("token expired")
    principal = _PRINCIPAL.run(on, {"p": row[2]}).first()
    if principal is None:
        raise UnauthenticatedError("unknown or revoked token")
    return TokenHolder(*principal)


def resolve(on: Transaction, credential: Credential | None, now: datetime) -> Actor:
    """The actor behind a credential; UNAUTHENTICATED for a missing, malformed, unknown,
    revoked or expired token (expired: expires_at <= now, the fleet's clock)."""
    if isinstance(credential, LocalOperator):
        return _OPERATOR
    principal = token_principal(on, credential, now)
    attached = _ATTACHED.run(on, {"p": principal.id}).scalars()
    # Attached policies are clamped to the principal's own tenant, and an agent's to its
    # host (domain.policy_bounds).
    statements = principal_statements(
        principal.tenant_id,
        principal.role,
        [s for listed in attached for s in listed],
        principal.host_id,
    )
    return Actor(principal.tenant_id, principal.role, principal.id, tuple(statements))


_OPERATOR = Actor(ROOT_TENANT, "admin", None, tuple(role_statements(ROOT_TENANT, "admin")), True)
"""The local operator's actor: always the same, so made once (its policy_key read once)."""

SCOPED_ACTORS_MAX = 1_000
_scoped: dict[tuple[str, str | None, bool, str], Actor] = {}


# Existence checks on the path of every call: prebuilt statements, no entity loaded (the
# session flushed first, so rows added earlier in the same transaction are seen).
_TENANT_EXISTS = DriverStatement(select(TENANTS.c.id).where(TENANTS.c.id == bindparam("t")))
_OFFERED = DriverStatement(
    select(POOL_OFFERS.c.pool_id).where(
        POOL_OFFERS.c.pool_id == bindparam("p"), POOL_OFFERS.c.tenant_id == bindparam("t")
    )
)
_OWNED_POOLS = DriverStatement(select(POOLS.c.id).where(POOLS.c.owner_tenant_id == bindparam("t")))
_OFFERED_POOLS = DriverStatement(
    select(POOL_OFFERS.c.pool_id).where(POOL_OFFERS.c.tenant_id == bindparam("t"))
)


def acting_for(on: Transaction, actor: Actor, tenant_id: str | None) -> Actor:
    """The actor scoped to a tenant: root's admin may act as (and see as) any tenant."""
    scoped, confirm = start_acting_for(on, actor, tenant_id)
    confirm()
    return scoped


def start_acting_for(
    on: Transaction, actor: Actor, tenant_id: str | None
) -> tuple[Actor, Callable[[], None]]:
    """acting_for() in two steps: the scoped actor now, and a call that raises the tenant's
    NOT_FOUND, which the caller makes before it answers anything.

    The tenant's check is sent at once; on PostgreSQL it waits for the caller's next statement
    and is answered in that one's round trip (store/driver_sql.py).
    """
    scoped = acting_as(actor, tenant_id)
    if scoped is actor:
        return actor, _confirmed
    return scoped, start_tenant_check(on, scoped.tenant_id)


def acting_as(actor: Actor, tenant_id: str | None) -> Actor:
    """The actor scoped to a tenant, before the tenant's check: the actor itself for its own
    tenant (or none named); FORBIDDEN unless root's admin for another tenant."""
    if tenant_id is None or tenant_id == actor.tenant_id:
        return actor
    if not actor.is_root_admin:
        raise ForbiddenError("this credential belongs to another tenant", {"tenant": tenant_id})
    # The scoped actor depends on these alone (the rest is replaced): kept, a bounded few.
    key = (actor.role, actor.principal_id, actor.operator, tenant_id)
    scoped = _scoped.get(key)
    if scoped is None:
        scoped = replace(
            actor,
            tenant_id=tenant_id,
            statements=tuple(role_statements(tenant_id, "admin")),
        )
        if len(_scoped) >= SCOPED_ACTORS_MAX:
            _scoped.clear()
        _scoped[key] = scoped
    return scoped


def start_tenant_check(on: Transaction, tenant_id: str) -> Callable[[], None]:
    """The check of a tenant acted for, sent now: a call that raises its NOT_FOUND."""
    sent = _TENANT_EXISTS.send_reading(core_connection(on), {"t": tenant_id})

    def confirm() -> None:
        if sent.rows().first() is None:
            raise NotFoundError(f"tenant {tenant_id!r} not found", {"tenant": tenant_id})

    return confirm


def require_fleet_operator(on: Transaction, credential: Credential | None, now: datetime) -> Actor:
    """The check of FleetConfig plans and applies, which read and change the whole fleet: root's
    admin only (PRODUCT.md §5)."""
    actor = authenticate(on, credential, None, now)
    if not actor.is_root_admin:
        raise ForbiddenError(
            "FleetConfig plans and applies read and change the whole fleet: "
            "they need root's admin (the local operator or a root admin token)",
            {"tenant": actor.tenant_id},
        )
    return actor


def _confirmed() -> None:
    """A tenant that needs no check (the credential's own)."""


def authenticate(
    on: Transaction, credential: Credential | None, tenant_id: str | None, now: datetime
) -> Actor:
    """resolve() then acting_for(): the first step of every API call."""
    return acting_for(on, resolve(on, credential, now), tenant_id)


def start_authenticate(
    on: Transaction, credential: Credential | None, tenant_id: str | None, now: datetime
) -> tuple[Actor, Callable[[], None]]:
    """resolve() then start_acting_for(): authenticate() for a call whose next statement can
    carry the tenant's check."""
    return start_acting_for(on, resolve(on, credential, now), tenant_id)


class HostRef(Protocol):
    """What authorization reads of a host (a Host row has it)."""

    @property
    def id(self) -> str: ...


def require_host_report(actor: Actor, host: HostRef, pool: PoolRef) -> None:
    """FORBIDDEN unless the actor may do a host agent's work on this host: report its
    inventory and its guests' states, read its specs and bookings.

    The one check of those calls. A pool's owner (admin) and root's admin may, for any host
    they see; a principal of the agent role only for the one host it is bound to.
    """
    actor.require(HOST_REPORT, pool_resource(pool), {HOST_ATTRIBUTE: host.id})


def tenant_resource(tenant_id: str) -> str:
    return f"tenant:{tenant_id}"


def pool_resource(pool: PoolRef) -> str:
    return f"tenant:{pool.owner_tenant_id}/pool:{pool.id}"


def owned_resource(tenant_id: str, kind: str, object_id: str) -> str:
    return f"tenant:{tenant_id}/{kind}:{object_id}"


def pool_visible(
    on: Transaction, actor: Actor, pool: PoolRef, offered_to: Container[str] | None = None
) -> bool:
    """The owner, the tenants it is offered to, and root's admin know a pool exists.

    `offered_to`: the tenants the pool is offered to, when the caller read them already
    (otherwise the database is asked).
    """
    offers = _OffersOf(on, pool.id) if offered_to is None else offered_to
    return actor.is_root_admin or may_use_pool(actor.tenant_id, pool.owner_tenant_id, offers)


P = TypeVar("P", bound=PoolRef)


def visible_pool(on: Transaction, actor: Actor, pool: P | None, ref: str) -> P:
    """The pool found by `ref` (id or name); NOT_FOUND (never FORBIDDEN) when there is none
    or the actor may not see it."""
    if pool is None or not pool_visible(on, actor, pool):
        raise NotFoundError(f"pool {ref!r} not found", {"pool": ref})
    return pool


@dataclass(frozen=True)
class _OffersOf:
    """The tenants a pool is offered to, asked of the database one tenant at a time."""

    on: Transaction
    pool_id: str

    def __contains__(self, tenant: object) -> bool:
        return _rows(self.on, _OFFERED, {"p": self.pool_id, "t": tenant}).first() is not None


def owns_pool(actor: Actor, pool: PoolRef) -> bool:
    """The pool's owner and root's admin: who sees its hosts and who it is offered to.

    Tenants a pool is offered to see the pool and its flavors, never its hosts, whatever
    their role: show and list alike answer as if the hosts did not exist (NOT_FOUND).
    """
    return actor.is_root_admin or pool.owner_tenant_id == actor.tenant_id


def sees_guests(actor: Actor) -> bool:
    """Whether a host's views (specs, bookings) name their guests: root's admin only.

    Anyone else (a pool's owner, its agent's token) gets what the host needs to run each
    guest under an opaque id, never another tenant's ids or names (document 003).
    """
    return actor.is_root_admin


def visible_pool_ids(on: Transaction, actor: Actor) -> Sequence[str] | None:
    """The pool ids an actor may see, or None for all of them (root's admin)."""
    if actor.is_root_admin:
        return None
    owned = _rows(on, _OWNED_POOLS, {"t": actor.tenant_id}).scalars()
    offered = _OFFERED_POOLS.run(on, {"t": actor.tenant_id}).scalars()
    return sorted(set(owned) | set(offered))

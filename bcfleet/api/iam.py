"""IAM: principals, tokens (hashed, shown once, with lifetimes) and policies attached to principals."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Session, col, select

from bcfleet.api.auth import (
    Actor,
    Credential,
    hash_token,
    new_token,
    tenant_resource,
    token_principal,
    token_state,
)
from bcfleet.api.base import Area
from bcfleet.api.documents import (
    PolicyPageJson,
    PrincipalJson,
    TokenInfoJson,
    TokenJson,
    TokenPageJson,
    TokenRevokedJson,
    WhoAmIJson,
)
from bcfleet.api.lookup import find_host, get_tenant
from bcfleet.api.token_revocation import revoke
from bcfleet.api.views import principal_json
from bcfleet.clock import format_time
from bcfleet.domain.bounds import check_identifier
from bcfleet.domain.policy import AGENT, ROLES, validate_statement
from bcfleet.domain.policy_bounds import policy_overreach
from bcfleet.domain.token_lifetime import expiry, kept_lifetime, token_lifetime
from bcfleet.errors import ConflictError, ForbiddenError, InvalidInputError, NotFoundError
from bcfleet.store.models import ApiToken, Host, Policy, PolicyAttachment, Principal


def _time(value: datetime | None) -> str | None:
    return format_time(value) if value is not None else None


def token_json(row: ApiToken, principal: Principal, now: datetime) -> TokenInfoJson:
    """A token as tokens.list shows it: who, when, its state; never the token or its hash."""
    body: TokenInfoJson = {
        "id": row.id,
        "principal": principal.name,
        "principalId": principal.id,
        "role": principal.role,
        "hint": row.hint,
        "createdAt": format_time(row.created_at),
        "expiresAt": _time(row.expires_at),
        "revokedAt": _time(row.revoked_at),
        "state": token_state(row, now),
    }
    if principal.host_id is not None:
        body["host"] = principal.host_id
    return body


def find_token(
    session: Session, tenant_id: str, token_id: str, *, lock: bool = False
) -> tuple[ApiToken, Principal]:
    """A token of the tenant by id; NOT_FOUND alike for a made-up id and another tenant's token."""
    row = session.get(ApiToken, token_id, with_for_update=lock or None)
    principal = session.get(Principal, row.principal_id) if row else None
    if row is None or principal is None or principal.tenant_id != tenant_id:
        raise NotFoundError(f"token {token_id!r} not found", {"token": token_id})
    return row, principal


def _principal_by_name(session: Session, tenant_id: str, name: str) -> Principal | None:
    return session.exec(
        select(Principal).where(Principal.tenant_id == tenant_id, Principal.name == name)
    ).first()


def check_role(role: str, host: str | None) -> None:
    """INVALID_INPUT unless the role is one of ROLES, with a host exactly when it is AGENT."""
    if role not in ROLES:
        raise InvalidInputError(f"role must be one of {', '.join(ROLES)}", {"role": role})
    if role == AGENT and host is None:
        raise InvalidInputError(
            "an agent is bound to one host: name it (--host)", {"field": "host", "role": role}
        )
    if role != AGENT and host is not None:
        raise InvalidInputError(
            f"a host binds an agent to it; role {role!r} takes none (use --role {AGENT})",
            {"field": "host", "role": role},
        )


def bound_host(session: Session, actor: Actor, tenant_id: str, host: str | None) -> str | None:
    """The node id an agent principal of the tenant is bound to: a host of a pool the tenant
    owns (NOT_FOUND for a host the actor does not see, as hosts.show); None without a host."""
    if host is None:
        return None
    row, pool = find_host(session, actor, host)
    if pool.owner_tenant_id != tenant_id:
        raise InvalidInputError(
            f"host {host!r} is not in a pool of tenant {tenant_id!r}; an agent belongs to the "
            "tenant that owns its host's pool",
            {"host": host, "tenant": tenant_id},
        )
    return row.id


def check_bounds(tenant_id: str, author_role: str, statements: list[dict[str, Any]]) -> None:
    """A policy reaches no further than its author: resources outside the tenant are
    INVALID_INPUT, actions the author's role does not hold FORBIDDEN; each names its statement."""
    found = policy_overreach(tenant_id, author_role, statements)
    for kind, error in (("resource", InvalidInputError), ("action", ForbiddenError)):
        problems = [o.text() for o in found if o.kind == kind]
        if problems:
            raise error(
                "policy reaches past its author: " + "; ".join(problems),
                {"problems": problems, "statements": sorted({o.index for o in found})},
            )


class IamAPI(Area):
    def whoami(self, credential: Credential | None) -> WhoAmIJson:
        """Who the credential acts as (any live token may ask; the local operator is root's
        admin): what the console's header and `GET /v1/whoami` say."""
        with self.fleet.read() as session:
            actor = self.actor(session, credential, None)
            principal = session.get(Principal, actor.principal_id) if actor.principal_id else None
            return {
                "tenantId": actor.tenant_id,
                "role": actor.role,
                "principal": principal.name if principal is not None else None,
                "principalId": actor.principal_id,
                "operator": actor.operator,
            }

    def create_principal(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        name: str,
        role: str = "member",
        host: str | None = None,
    ) -> PrincipalJson:
        """A principal of the tenant; one of the agent role is bound to its host (id or name)."""
        check_role(role, host)
        if not name.strip():
            raise InvalidInputError("a principal needs a name", {"field": "name"})
        check_identifier("name", name)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:iam:manage", tenant_resource(tenant_id))
            get_tenant(session, tenant_id)
            if _principal_by_name(session, tenant_id, name) is not None:
                raise ConflictError(f"principal {name!r} already exists", {"name": name})
            principal = Principal(
                id=self.fleet.new_id("prn"),
                tenant_id=tenant_id,
                name=name,
                role=role,
                created_at=self.fleet.now(),
                host_id=bound_host(session, actor, tenant_id, host),
            )
            session.add(principal)
            return principal_json(principal)

    def list_principals(self, credential: Credential | None, *, tenant_id: str) -> dict[str, Any]:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:iam:read", tenant_resource(tenant_id))
            rows = session.exec(
                select(Principal).where(Principal.tenant_id == tenant_id).order_by(Principal.name)
            ).all()
            return {"items": [principal_json(p) for p in rows]}

    def create_token(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        name: str,
        role: str = "member",
        expires_in: str | None = None,
        host: str | None = None,
    ) -> TokenJson:
        """A token for the named principal (created with role if missing); the token is shown once.

        expires_in ('30d', '12h', …, at most 10 years) gives it a lifetime; None: no expiry.
        role agent needs host (id or name): the token may then do that host's agent work
        and nothing else (domain.policy.agent_statements); an existing principal of that
        name must be that host's agent already (CONFLICT otherwise). An agent whose host was
        removed gets no new token (CONFLICT).
        """
        check_identifier("name", name)
        check_role(role, host)
        lifetime = token_lifetime(expires_in)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:iam:manage", tenant_resource(tenant_id))
            get_tenant(session, tenant_id)
            now = self.fleet.now()
            host_id = bound_host(session, actor, tenant_id, host)
            principal = _principal_by_name(session, tenant_id, name)
            if principal is None:
                principal = Principal(
                    id=self.fleet.new_id("prn"),
                    tenant_id=tenant_id,
                    name=name,
                    role=role,
                    created_at=now,
                    host_id=host_id,
                )
                session.add(principal)
                session.flush()
            elif host_id is not None and (principal.role, principal.host_id) != (AGENT, host_id):
                raise ConflictError(
                    f"principal {name!r} exists and is not this host's agent; "
                    "give the agent a name of its own",
                    {"name": name, "role": principal.role},
                )
            elif principal.host_id is not None and session.get(Host, principal.host_id) is None:
                raise ConflictError(
                    f"principal {name!r} is the agent of a removed host; "
                    "give a new agent a name of its own",
                    {"name": name, "role": principal.role},
                )
            return self._issue(session, principal, expiry(now, lifetime))

    def _issue(
        self, session: Session, principal: Principal, expires_at: datetime | None
    ) -> TokenJson:
        """A new token row for the principal; the answer holds the token itself, once."""
        token = new_token()
        row = ApiToken(
            id=self.fleet.new_id("tok"),
            principal_id=principal.id,
            token_hash=hash_token(token),
            hint=token[-4:],
            created_at=self.fleet.now(),
            expires_at=expires_at,
        )
        session.add(row)
        return {
            "id": row.id,
            "token": token,
            "principal": principal_json(principal),
            "createdAt": format_time(row.created_at),
            "expiresAt": _time(row.expires_at),
        }

    def list_tokens(
        self, credential: Credential | None, *, tenant_id: str, principal: str | None = None
    ) -> TokenPageJson:
        """The tenant's tokens (of one principal, by name, if given): never the token or its hash."""
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:iam:read", tenant_resource(tenant_id))
            query = (
                select(ApiToken, Principal)
                .join(Principal, Principal.id == ApiToken.principal_id)  # type: ignore[arg-type]
                .where(Principal.tenant_id == tenant_id)
                .order_by(col(Principal.name), col(ApiToken.created_at), col(ApiToken.id))
            )
            if principal is not None:
                query = query.where(Principal.name == principal)
            now = self.fleet.now()
            return {"items": [token_json(t, p, now) for t, p in session.exec(query).all()]}

    def revoke_token(
        self, credential: Credential | None, *, tenant_id: str, token_id: str
    ) -> TokenRevokedJson:
        """Revoke a token by its id (from list_tokens); revoking twice keeps the first time."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:iam:manage", tenant_resource(tenant_id))
            row, _principal = find_token(session, tenant_id, token_id)
            revoked_at = revoke(session, row, self.fleet.now())
            return {"id": row.id, "revoked": True, "revokedAt": format_time(revoked_at)}

    def rotate_token(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        token_id: str,
        expires_in: str | None = None,
    ) -> TokenJson:
        """A new token for the same principal and the old one revoked, in one transaction.

        The new token lives expires_in, else as long as the old one was given (no expiry
        stays no expiry). A revoked token cannot be rotated (CONFLICT); an expired one can.
        """
        lifetime = token_lifetime(expires_in)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:iam:manage", tenant_resource(tenant_id))
            row, principal = find_token(session, tenant_id, token_id, lock=True)
            if row.revoked_at is not None:
                raise ConflictError(
                    f"token {token_id!r} is revoked; create a new one instead",
                    {"token": token_id, "state": "revoked"},
                )
            now = self.fleet.now()
            if expires_in is None:
                lifetime = kept_lifetime(row.created_at, row.expires_at)
            revoke(session, row, now)
            return {**self._issue(session, principal, expiry(now, lifetime)), "replaces": row.id}

    def check_token(self, token: str | None) -> None:
        """UNAUTHENTICATED unless the token is live: the HTTP edge's check before it reads a body."""
        with self.fleet.read_core() as connection:
            token_principal(connection, token, self.fleet.now())

    def create_policy(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        name: str,
        statements: list[dict[str, Any]],
        attach_to: list[str] | None = None,
    ) -> dict[str, Any]:
        """A policy of statements, attached to the named principals of the tenant."""
        check_identifier("name", name)
        problems = [
            f"statements[{i}]: {p}" for i, s in enumerate(statements) for p in validate_statement(s)
        ]
        if not statements:
            problems.append("a policy needs at least one statement")
        if problems:
            raise InvalidInputError(
                "invalid policy: " + "; ".join(problems), {"problems": problems}
            )
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:iam:manage", tenant_resource(tenant_id))
            get_tenant(session, tenant_id)
            if not actor.is_root_admin:
                check_bounds(tenant_id, actor.role, statements)
            exists = session.exec(
                select(Policy).where(Policy.tenant_id == tenant_id, Policy.name == name)
            ).first()
            if exists is not None:
                raise ConflictError(f"policy {name!r} already exists", {"name": name})
            policy = Policy(
                id=self.fleet.new_id("pol"),
                tenant_id=tenant_id,
                name=name,
                statements=statements,
                created_at=self.fleet.now(),
            )
            session.add(policy)
            session.flush()
            for principal_name in attach_to or []:
                principal = _principal_by_name(session, tenant_id, principal_name)
                if principal is None:
                    raise NotFoundError(
                        f"principal {principal_name!r} not found", {"principal": principal_name}
                    )
                session.add(PolicyAttachment(policy_id=policy.id, principal_id=principal.id))
            return {
                "id": policy.id,
                "name": name,
                "statements": statements,
                "attachedTo": list(attach_to or []),
            }

    def list_policies(self, credential: Credential | None, *, tenant_id: str) -> PolicyPageJson:
        """The tenant's policies by name, each with the principals it is attached to."""
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:iam:read", tenant_resource(tenant_id))
            policies = session.exec(
                select(Policy).where(Policy.tenant_id == tenant_id).order_by(col(Policy.name))
            ).all()
            attached: dict[str, list[str]] = {p.id: [] for p in policies}
            rows = session.exec(
                select(PolicyAttachment.policy_id, Principal.name)
                .join(Principal, Principal.id == PolicyAttachment.principal_id)  # type: ignore[arg-type]
                .where(Principal.tenant_id == tenant_id)
                .order_by(col(Principal.name))
            ).all()
            for policy_id, name in rows:
                attached.setdefault(policy_id, []).append(name)
            return {
                "items": [
                    {
                        "id": p.id,
                        "tenantId": p.tenant_id,
                        "name": p.name,
                        "statements": list(p.statements),
                        "attachedTo": attached.get(p.id, []),
                        "createdAt": format_time(p.created_at),
                    }
                    for p in policies
                ]
            }

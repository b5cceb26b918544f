"""`fleet.api.dependents`: what depends on a row before it is deleted or taken away, for a confirm to name.

The deployed services an instance serves (deleting it is refused while one does:
InstancesAPI.delete asks `serving`), and a tenant's live instances and pending or
active reservations in a pool whose offer would be taken back (the offer may go:
they keep what they hold; new placements there are refused). Besides, for the
console's deletes: a flavor's live instances (any instance row that ever used it
makes the delete an archive: flavors.referenced), the instance a deployed service
holds, the services in an environment (its delete is refused while there are any:
environments.services_in), a webhook's deliveries not yet made, and the host agent
or the caller's own session a token serves; what keeps a pool (pools.pool_holders, in the
words of its CONFLICT), the pools on a provider account (provider_accounts.pools_using),
a host's past or present use (hosts.host_history) or, when nothing refuses its removal,
the tokens of its agents the removal revokes (token_revocation.host_agent_tokens), and what still names a tenant
(store.tenant_holders; root is never deleted).
Each answer says its `outcome`: what the delete would do now (deleted, archived, refused);
the delete itself decides again.
"""

from __future__ import annotations

from sqlalchemy import func
from sqlmodel import Session, col, select

from bcfleet.api.auth import (
    Credential,
    acting_for,
    hash_token,
    owned_resource,
    pool_resource,
    resolve,
    tenant_resource,
    token_state,
)
from bcfleet.api.base import Area
from bcfleet.api.compute_state import owned_for
from bcfleet.api.lookup import find_flavor, find_host, find_pool, get_tenant
from bcfleet.domain.dependents import (
    ARCHIVED,
    DELETED,
    REFUSED,
    Dependent,
    DependentsJson,
    outcome_of,
)
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.domain.states import INSTANCE_LIVE, DeliveryState, InstanceState, ReservationState
from bcfleet.errors import NotFoundError
from bcfleet.store.models import Host, Instance

HOLDING = (
    ReservationState.PENDING,
    ReservationState.PLACED,
    ReservationState.BINDING,
    ReservationState.ACTIVE,
)
"""Reservations that still hold, or wait for, GPUs of their pool."""


def serving(session: Session, instance_id: str) -> list[Dependent]:
    """The deployed services this instance serves, by name."""
    from bcfleet.store.models.compute import Service  # mapped when first needed

    rows = session.exec(
        select(Service)
        .where(Service.instance_id == instance_id, Service.deployed == True)  # noqa: E712
        .order_by(col(Service.workspace), col(Service.name))
    ).all()
    return [Dependent("service", s.id, f"{s.workspace}/{s.name}", "deployed") for s in rows]


def in_pool(session: Session, tenant_id: str, pool_id: str) -> list[Dependent]:
    """A tenant's live instances and holding reservations in a pool."""
    from bcfleet.store.models.reservations import Reservation  # mapped when first needed

    live = (*INSTANCE_LIVE, InstanceState.PENDING)
    instances = session.exec(
        select(Instance)
        .where(
            Instance.tenant_id == tenant_id,
            Instance.pool_id == pool_id,
            col(Instance.state).in_(live),
        )
        .order_by(col(Instance.name))
    ).all()
    reservations = session.exec(
        select(Reservation)
        .where(
            Reservation.tenant_id == tenant_id,
            Reservation.pool_id == pool_id,
            col(Reservation.state).in_(HOLDING),
        )
        .order_by(col(Reservation.id))
    ).all()
    return [
        *(Dependent("instance", i.id, i.name, str(i.state)) for i in instances),
        *(Dependent("reservation", r.id, r.id, str(r.state)) for r in reservations),
    ]


class DependentsAPI(Area):
    def of_instance(
        self, credential: Credential | None, instance_id: str, *, tenant_id: str | None = None
    ) -> DependentsJson:
        """What depends on an instance (the services it serves); NOT_FOUND as instances.show."""
        with self.fleet.read() as session:
            actor = acting_for(session, resolve(session, credential, self.fleet.now()), tenant_id)
            instance = session.get(Instance, instance_id)
            visible = instance is not None and (
                actor.is_root_admin or instance.tenant_id == actor.tenant_id
            )
            if instance is None or not visible:
                raise NotFoundError(
                    f"instance {instance_id!r} not found", {"instance": instance_id}
                )
            return {"items": [d.to_json() for d in serving(session, instance.id)]}

    def of_offer(
        self, credential: Credential | None, *, tenant_id: str, pool: str, to: str
    ) -> DependentsJson:
        """What a tenant holds in a pool whose offer would be taken back. Only root's admin is
        told (another tenant's objects are never named to a pool's owner): others get none."""
        with self.fleet.read() as session:
            caller = resolve(session, credential, self.fleet.now())
            actor = acting_for(session, caller, tenant_id)
            row = find_pool(session, actor, pool)
            if not caller.is_root_admin:
                return {"items": []}
            return {"items": [d.to_json() for d in in_pool(session, to, row.id)]}

    def of_flavor(
        self, credential: Credential | None, *, tenant_id: str, pool: str, name: str
    ) -> DependentsJson:
        """A flavor's live instances (those of the caller's tenant: another tenant's are never
        named, as to a pool's owner in of_offer; root's admin sees all); outcome archived when
        any instance row (deleted ones too) references it, as flavors.delete decides."""
        from bcfleet.api.flavors import referenced

        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            row = find_pool(session, actor, pool)
            actor.require("compute:flavors:read", pool_resource(row))
            flavor = find_flavor(session, row, name)
            live = (*INSTANCE_LIVE, InstanceState.PENDING)
            query = select(Instance).where(
                Instance.flavor_id == flavor.id, col(Instance.state).in_(live)
            )
            if not actor.is_root_admin:
                query = query.where(Instance.tenant_id == actor.tenant_id)
            instances = session.exec(query.order_by(col(Instance.name))).all()
            found = [Dependent("instance", i.id, i.name, str(i.state)) for i in instances]
            archived = referenced(session, flavor.id)
            return outcome_of(found, ARCHIVED if archived else DELETED)

    def of_service(
        self, credential: Credential | None, service_id: str, *, tenant_id: str | None = None
    ) -> DependentsJson:
        """The instance a deployed service holds (its delete undeploys it first, releasing it)."""
        from bcfleet.store.models.compute import Service

        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            _, service = owned_for(
                session, actor, Service, service_id, "service", "compute:services:read",
                changes=False,
            )  # fmt: skip
            instance = session.get(Instance, service.instance_id) if service.instance_id else None
            found = [] if instance is None else [
                Dependent("instance", instance.id, instance.name, str(instance.state))
            ]  # fmt: skip
            return outcome_of(found, DELETED)

    def of_environment(
        self, credential: Credential | None, environment_id: str, *, tenant_id: str | None = None
    ) -> DependentsJson:
        """The services in an environment: its delete is refused while there are any."""
        from bcfleet.api.environments import services_in
        from bcfleet.store.models.compute import FleetEnvironment

        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            _, env = owned_for(
                session, actor, FleetEnvironment, environment_id, "environment",
                "compute:environments:read", changes=False,
            )  # fmt: skip
            found = [
                Dependent("service", s.id, f"{s.workspace}/{s.name}",
                          "deployed" if s.deployed else "undeployed")
                for s in services_in(session, env.id)
            ]  # fmt: skip
            return outcome_of(found, REFUSED if found else DELETED)

    def of_webhook(
        self, credential: Credential | None, webhook_id: str, *, tenant_id: str | None = None
    ) -> DependentsJson:
        """A webhook's deliveries not made yet (pending, dead), counted: its delete drops them."""
        from bcfleet.api.webhooks import find_webhook
        from bcfleet.store.models.webhooks import WebhookDelivery

        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            hook = find_webhook(session, actor, webhook_id)
            actor.require(
                "compute:webhooks:read", owned_resource(hook.tenant_id, "webhook", hook.id)
            )
            counts = session.execute(
                select(WebhookDelivery.state, func.count())
                .where(
                    WebhookDelivery.webhook_id == hook.id,
                    col(WebhookDelivery.state) != DeliveryState.DELIVERED,
                )
                .group_by(col(WebhookDelivery.state))
                .order_by(col(WebhookDelivery.state))
            ).all()
            found = [
                Dependent("deliveries", hook.id, f"{count} {state}") for state, count in counts
            ]
            return outcome_of(found, DELETED)

    def of_token(
        self, credential: Credential | None, *, tenant_id: str, token_id: str
    ) -> DependentsJson:
        """What stops when a token is revoked: the host agent it is bound to, and the caller's
        own session when it is the token of this very call."""
        from bcfleet.api.iam import find_token

        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:iam:read", tenant_resource(tenant_id))
            row, principal = find_token(session, tenant_id, token_id)
            found: list[Dependent] = []
            if principal.host_id is not None:
                host = session.get(Host, principal.host_id)
                name = host.name if host is not None else principal.host_id
                found.append(Dependent("host agent", principal.host_id, name))
            if isinstance(credential, str) and hash_token(credential) == row.token_hash:
                found.append(Dependent("session", row.id, "of the caller"))
            return outcome_of(found, DELETED)

    def of_pool(
        self, credential: Credential | None, *, tenant_id: str, pool: str
    ) -> DependentsJson:
        """What keeps a pool (hosts, flavors, instances, quota in use, …): its delete is refused
        while anything does, in the same words."""
        from bcfleet.api.pools import pool_holders

        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            row = find_pool(session, actor, pool)
            actor.require("compute:pools:read", pool_resource(row))
            found = [Dependent(label, row.id, "") for label in pool_holders(session, row.id)]
            return outcome_of(found, REFUSED if found else DELETED)

    def of_provider_account(
        self, credential: Credential | None, *, tenant_id: str, account: str
    ) -> DependentsJson:
        """The pools on a provider account: its delete is refused while there are any."""
        from bcfleet.api.provider_accounts import find_account, pools_using

        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:providers:read", tenant_resource(tenant_id))
            row = find_account(session, tenant_id, account)
            found = [Dependent("pool", name, name) for name in pools_using(session, row.id)]
            return outcome_of(found, REFUSED if found else DELETED)

    def of_host(
        self, credential: Credential | None, *, tenant_id: str | None = None, host: str
    ) -> DependentsJson:
        """What ties a host to the past or present (instances, allocations, GPU bookings): its
        removal is refused while anything does (drain it instead). Otherwise the tokens of its
        agents, which the removal revokes (named to a caller who may read the tenant's IAM)."""
        from bcfleet.api.hosts import host_history
        from bcfleet.api.token_revocation import host_agent_tokens

        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            row, pool = find_host(session, actor, host)
            actor.require("compute:hosts:read", pool_resource(pool))
            found = [Dependent(label, row.id, "") for label in host_history(session, row.id)]
            if found:
                return outcome_of(found, REFUSED)
            if actor.can("compute:iam:read", tenant_resource(pool.owner_tenant_id)):
                now = self.fleet.now()
                found = [
                    Dependent("agent token", token.id, agent.name, token_state(token, now))
                    for token, agent in host_agent_tokens(session, row.id)
                ]
            return outcome_of(found, DELETED)

    def of_tenant(self, credential: Credential | None, tenant: str) -> DependentsJson:
        """The kinds of rows that still name a tenant: its delete is refused while any does,
        and always for root."""
        from bcfleet.store.tenant_holders import tenant_holders

        with self.fleet.read() as session:
            actor = self.actor(session, credential, None)
            actor.require("compute:tenants:manage", tenant_resource(tenant))
            get_tenant(session, tenant)
            held = tenant_holders(session, [tenant]).get(tenant, [])
            found = [Dependent(label, tenant, "") for label in held]
            return outcome_of(found, REFUSED if found or tenant == ROOT_TENANT else DELETED)

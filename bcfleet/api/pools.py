"""Pools: vps-host or provider, their overcommit and host reserve, and the tenants they are offered to."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import delete
from sqlmodel import Session, col, select

from bcfleet.api.auth import (
    Actor,
    Credential,
    acting_for,
    owns_pool,
    pool_resource,
    resolve,
    tenant_resource,
    visible_pool_ids,
)
from bcfleet.api.base import Area
from bcfleet.api.documents import DeletedJson, PoolJson, PoolPageJson
from bcfleet.api.events import emit
from bcfleet.api.lookup import find_pool, get_tenant
from bcfleet.api.names import add_named, require_free_name
from bcfleet.api.views import deleted_json, pool_json
from bcfleet.domain.bounds import (
    SHAPE_MAX,
    check_gpu_model,
    check_ratio,
    check_slug,
    check_whole,
    shown,
)
from bcfleet.domain.host_reserve import HostReserve
from bcfleet.domain.states import PoolKind
from bcfleet.errors import ConflictError, ForbiddenError, InvalidInputError, NotFoundError
from bcfleet.placement.quotas import quota_usage
from bcfleet.store.faults import flush_or_conflict
from bcfleet.store.models import (
    Flavor,
    Host,
    Instance,
    Pool,
    PoolOffer,
    ProviderAccount,
    Quota,
    QuotaStripe,
)

OVERCOMMIT_RESOURCES = ("vcpu", "memoryGiB", "diskGiB")
RESERVE_RESOURCES = ("vcpu", "memoryGiB", "diskGiB")
RATIO_CLAMPED = "RATIO_CLAMPED"


def validate_name(kind: str, name: str) -> None:
    """A pool's, host's or environment's name (bounds.SLUG)."""
    check_slug(kind, name)


def normalize_overcommit(
    raw: Mapping[str, Any] | None,
) -> tuple[dict[str, float], list[dict[str, str]]]:
    """Per-resource ratios clamped to 0.1..100 (document 000) and the notices saying so.

    NaN, infinities and unknown resources are INVALID_INPUT; GPUs never overcommit.
    """
    result: dict[str, float] = {}
    notices: list[dict[str, str]] = []
    for key, value in (raw or {}).items():
        if key in ("gpu", "gpus"):
            raise InvalidInputError("GPUs are never overcommitted", {"field": f"overcommit.{key}"})
        if key not in OVERCOMMIT_RESOURCES:
            raise InvalidInputError(
                f"unknown overcommit resource {shown(key)}; use {', '.join(OVERCOMMIT_RESOURCES)}",
                {"field": f"overcommit.{shown(key)}"},
            )
        field = f"overcommit.{key}"
        result[key], notice = check_ratio(field, value)
        if notice is not None:
            notices.append({"code": RATIO_CLAMPED, "field": field, "message": notice})
    return result, notices


def _with_notices(body: PoolJson, notices: list[dict[str, str]]) -> PoolJson:
    """A pool's answer carrying the clamp notices (only when there are some)."""
    if notices:
        body["notices"] = notices
    return body


def normalize_reserve(raw: Mapping[str, Any] | None) -> dict[str, int]:
    result: dict[str, int] = {}
    for key, value in (raw or {}).items():
        if key not in RESERVE_RESOURCES:
            raise InvalidInputError(
                f"unknown hostReserve resource {shown(key)}; use {', '.join(RESERVE_RESOURCES)}",
                {"field": f"hostReserve.{shown(key)}"},
            )
        result[key] = check_whole(f"hostReserve.{key}", value, 0, SHAPE_MAX)
    return result


def offered_to(session: Session, pool_id: str) -> list[str]:
    return sorted(
        session.exec(select(PoolOffer.tenant_id).where(PoolOffer.pool_id == pool_id)).all()
    )


def offers_by_pool(session: Session) -> dict[str, list[str]]:
    """Pool id → the tenants it is offered to, sorted, for every pool offered to anyone, in one
    query (the pools list and FleetConfig's plan)."""
    offers: dict[str, list[str]] = {}
    for pool_id, tenant in session.execute(
        select(col(PoolOffer.pool_id), col(PoolOffer.tenant_id))
    ):
        offers.setdefault(pool_id, []).append(tenant)
    return {pool_id: sorted(tenants) for pool_id, tenants in offers.items()}


def offers_for(session: Session, actor: Actor, pool: Pool) -> list[str] | None:
    """Who a pool is offered to, told only to its owner and root's admin (never to other tenants)."""
    if owns_pool(actor, pool):
        return offered_to(session, pool.id)
    return None


def _provider_account(session: Session, tenant_id: str, ref: str) -> ProviderAccount:
    account = session.exec(
        select(ProviderAccount).where(
            ProviderAccount.tenant_id == tenant_id,
            (ProviderAccount.name == ref) | (ProviderAccount.id == ref),
        )
    ).first()
    if account is None:
        raise NotFoundError(f"provider account {ref!r} not found", {"providerAccount": ref})
    return account


def pool_holders(session: Session, pool_id: str) -> list[str]:
    """What keeps a pool from being deleted: hosts, flavors (archived ones too), instances, used quota."""
    from bcfleet.store.models.compute import ComputeSettingsRow  # mapped when first needed

    checks = (
        ("hosts", select(Host.id).where(Host.pool_id == pool_id)),
        ("flavors", select(Flavor.id).where(Flavor.pool_id == pool_id)),
        ("instances", select(Instance.id).where(Instance.pool_id == pool_id)),
        (
            "compute settings naming it as serverless pool",
            select(ComputeSettingsRow.tenant_id).where(
                ComputeSettingsRow.serverless_pool_id == pool_id
            ),
        ),
    )
    held = [label for label, query in checks if session.exec(query.limit(1)).first() is not None]
    if any(used > 0 for used in quota_usage(session, pool_id=pool_id).values()):
        held.insert(3, "quota in use")
    return held


class PoolsAPI(Area):
    @property
    def reserve(self) -> HostReserve:
        """The fleet's default host reserve (fleet.toml), under each pool's own."""
        return self.fleet.settings.host_reserve

    def create(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        name: str,
        kind: str,
        gpu_model: str | None = None,
        overcommit: Mapping[str, Any] | None = None,
        host_reserve: Mapping[str, Any] | None = None,
        provider_account: str | None = None,
        managed: bool = False,
    ) -> PoolJson:
        validate_name("pool", name)
        check_gpu_model(gpu_model)
        if kind not in tuple(PoolKind):
            raise InvalidInputError(
                f"pool kind must be one of {', '.join(PoolKind)}", {"kind": kind}
            )
        (ratios, notices), reserve = (
            normalize_overcommit(overcommit),
            normalize_reserve(host_reserve),
        )
        if kind == PoolKind.PROVIDER and not provider_account:
            raise InvalidInputError(
                "a provider pool needs a provider account", {"field": "providerAccount"}
            )
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:pools:manage", tenant_resource(tenant_id))
            get_tenant(session, tenant_id)
            require_free_name(session, Pool, name)
            account = (
                _provider_account(session, tenant_id, provider_account)
                if provider_account
                else None
            )
            pool = Pool(
                id=self.fleet.new_id("pool"),
                name=name,
                kind=PoolKind(kind),
                owner_tenant_id=tenant_id,
                gpu_model=gpu_model or None,
                overcommit=ratios,
                host_reserve=reserve,
                provider_account_id=account.id if account else None,
                created_at=self.fleet.now(),
                managed=managed,
            )
            add_named(session, pool)
            emit(
                session,
                self.fleet.ids,
                self.fleet.now(),
                "pool.created",
                tenant_id=tenant_id,
                subject_id=pool.id,
                data={"name": name},
            )
            return _with_notices(pool_json(pool, [], self.reserve), notices)

    def update(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        pool: str,
        gpu_model: str | None = None,
        overcommit: Mapping[str, Any] | None = None,
        host_reserve: Mapping[str, Any] | None = None,
    ) -> PoolJson:
        """Change a pool's policy; the vps.hosts job re-derives node_resources from it.

        Ratios and reserves are merged: what the call leaves out keeps its value, so
        ``--overcommit vcpu=0.1`` leaves memoryGiB as it was (FleetConfig passes all three).
        """
        ratios, notices = normalize_overcommit(overcommit) if overcommit is not None else (None, [])
        reserve = normalize_reserve(host_reserve) if host_reserve is not None else None
        check_gpu_model(gpu_model)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            row = find_pool(session, actor, pool, lock=True)
            actor.require("compute:pools:manage", pool_resource(row))
            if ratios is not None:
                row.overcommit = {**row.overcommit, **ratios}
            if reserve is not None:
                row.host_reserve = {**row.host_reserve, **reserve}
            if gpu_model is not None:
                row.gpu_model = gpu_model or None
            row.version += 1
            session.add(row)
            return _with_notices(pool_json(row, offered_to(session, row.id), self.reserve), notices)

    def set_managed(
        self, credential: Credential | None, *, tenant_id: str, pool: str, managed: bool = True
    ) -> PoolJson:
        """Bring a pool (and so its offers) under FleetConfig management, or release it."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            row = find_pool(session, actor, pool, lock=True)
            actor.require("compute:pools:manage", pool_resource(row))
            row.managed = managed
            session.add(row)
            return pool_json(row, offered_to(session, row.id), self.reserve)

    def delete(self, credential: Credential | None, *, tenant_id: str, pool: str) -> DeletedJson:
        """Delete an empty pool with its offers and unused quotas; CONFLICT naming what it holds."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            row = find_pool(session, actor, pool, lock=True)
            actor.require("compute:pools:manage", pool_resource(row))
            holders = pool_holders(session, row.id)
            if holders:
                raise ConflictError(
                    f"pool {row.name!r} still has {', '.join(holders)}",
                    {"pool": row.id, "has": holders},
                )
            session.execute(delete(PoolOffer).where(col(PoolOffer.pool_id) == row.id))
            session.execute(delete(Quota).where(col(Quota.pool_id) == row.id))
            session.execute(delete(QuotaStripe).where(col(QuotaStripe.pool_id) == row.id))
            session.delete(row)
            # reservations, usage, settings … may still refer to it
            flush_or_conflict(
                session,
                ConflictError(f"pool {row.name!r} is still referenced", {"pool": row.id}),
            )
            emit(
                session,
                self.fleet.ids,
                self.fleet.now(),
                "pool.deleted",
                tenant_id=row.owner_tenant_id,
                subject_id=row.id,
                data={"name": row.name},
            )
            return deleted_json(row.id)

    def offer(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        pool: str,
        to: str,
        revoke: bool = False,
    ) -> PoolJson:
        """Offer a pool to another tenant (or take the offer back).

        Sharing across tenants is brokered by the operator: only root's admin offers a pool,
        so no tenant pushes pools into another's list unasked or learns which tenants exist.
        A pool's owner may take an offer back; that answer is the same whether the tenant
        exists or not.
        """
        with self.fleet.write() as session:
            caller = resolve(session, credential, self.fleet.now())
            actor = acting_for(session, caller, tenant_id)  # root's admin may act as the owner
            row = find_pool(session, actor, pool)
            actor.require("compute:pools:manage", pool_resource(row))
            if caller.is_root_admin:
                get_tenant(session, to)
            elif not revoke:
                raise ForbiddenError(
                    "offering a pool to another tenant is done by the operator (root's admin); "
                    "ask them to share this pool",
                    {"action": "compute:pools:offer", "pool": row.id},
                )
            existing = session.get(PoolOffer, (row.id, to))
            if revoke and existing is not None:
                session.delete(existing)
            elif not revoke and existing is None and to != row.owner_tenant_id:
                session.add(PoolOffer(pool_id=row.id, tenant_id=to))
            session.flush()
            return pool_json(row, offered_to(session, row.id), self.reserve)

    def list(self, credential: Credential | None, *, tenant_id: str | None = None) -> PoolPageJson:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:pools:read", tenant_resource(actor.tenant_id))
            query = select(Pool).order_by(Pool.name)
            visible = visible_pool_ids(session, actor)
            if visible is not None:
                query = query.where(col(Pool.id).in_(visible))
            pools = session.exec(query).all()
            offers = offers_by_pool(session)
            return {
                "items": [
                    pool_json(
                        p,
                        offers.get(p.id, []) if offers_for(session, actor, p) is not None else None,
                        self.reserve,
                    )
                    for p in pools
                ]
            }

    def show(
        self, credential: Credential | None, *, tenant_id: str | None = None, pool: str
    ) -> PoolJson:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            row = find_pool(session, actor, pool)
            actor.require("compute:pools:read", pool_resource(row))
            return pool_json(row, offers_for(session, actor, row), self.reserve)

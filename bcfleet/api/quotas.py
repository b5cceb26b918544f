"""Quotas: a tenant's limits per pool (set by the pool's owner) and what it uses."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import delete
from sqlmodel import Session, col, select

from bcfleet.api.auth import Actor, Credential, pool_resource, tenant_resource
from bcfleet.api.base import Area
from bcfleet.api.documents import QuotaJson, QuotaPageJson
from bcfleet.api.lookup import find_pool, get_tenant
from bcfleet.domain.bounds import QUOTA_MAX, check_whole
from bcfleet.errors import InvalidInputError, NotFoundError
from bcfleet.placement.quotas import fold_stripes, quota_usage
from bcfleet.store.models import Pool, PoolOffer, Quota
from bcfleet.store.models.capacity import QUOTA_RESOURCES


def quota_rows(
    session: Session, tenant_id: str | None = None, pool_id: str | None = None
) -> list[Quota]:
    """The quota rows of a tenant (every tenant's when None), in one pool or all."""
    query = select(Quota)
    if tenant_id is not None:
        query = query.where(Quota.tenant_id == tenant_id)
    if pool_id is not None:
        query = query.where(Quota.pool_id == pool_id)
    return list(session.exec(query).all())


def quota_limits(rows: Iterable[Quota]) -> dict[str, int | None]:
    """One tenant's limits in one pool, from its rows: each known resource with a row (None is
    a row that counts usage but no longer limits it)."""
    by_resource = {r.resource: r for r in rows}
    return {r: by_resource[r].limit for r in QUOTA_RESOURCES if r in by_resource}


def quota_json(session: Session, pool: Pool, tenant_id: str, rows: list[Quota]) -> QuotaJson:
    usage = quota_usage(session, tenant_id)
    return {
        "tenantId": tenant_id,
        "poolId": pool.id,
        "pool": pool.name,
        "limits": quota_limits(rows),
        "used": {r: usage.get((tenant_id, pool.id, r), 0) for r in QUOTA_RESOURCES},
    }


def quota_tenant(session: Session, actor: Actor, pool: Pool, tenant_id: str) -> None:
    """Whom a pool's quotas may name: root's admin, any tenant (NOT_FOUND for a missing one);
    anyone else, the pool's owner and the tenants it is offered to. Any other tenant, real
    or made up, gets the same NOT_FOUND, so quotas never tell which tenants exist."""
    if actor.is_root_admin:
        get_tenant(session, tenant_id)
        return
    offered = session.get(PoolOffer, (pool.id, tenant_id)) is not None
    if tenant_id == pool.owner_tenant_id or offered:
        return
    raise NotFoundError(
        f"tenant {tenant_id!r} is not offered pool {pool.name!r}",
        {"tenant": tenant_id, "pool": pool.id},
    )


class QuotasAPI(Area):
    def set(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        pool: str,
        limits: Mapping[str, int | None],
        managed: bool = False,
    ) -> QuotaJson:
        """Set limits (None removes a limit); a limit below what is used is allowed and blocks new charges."""
        for resource in limits:
            if resource not in QUOTA_RESOURCES:
                raise InvalidInputError(
                    f"unknown quota resource {resource!r}; use {', '.join(QUOTA_RESOURCES)}",
                    {"resource": resource},
                )
        limits = {
            resource: None if limit is None else check_whole(resource, limit, 0, QUOTA_MAX)
            for resource, limit in limits.items()
        }
        with self.fleet.write() as session:
            actor = self.actor(session, credential, None)
            row = find_pool(session, actor, pool)
            actor.require("compute:quotas:manage", pool_resource(row))
            quota_tenant(session, actor, row, tenant_id)
            fold_stripes(session, tenant_id, row.id)  # what is used, all in the rows a limit guards
            for resource, limit in sorted(limits.items()):
                quota = session.get(Quota, (tenant_id, row.id, resource), with_for_update=True)
                if quota is None:
                    quota = Quota(tenant_id=tenant_id, pool_id=row.id, resource=resource, used=0)
                quota.limit = limit
                quota.managed = quota.managed or managed
                session.add(quota)
            session.flush()
            rows = list(
                session.exec(
                    select(Quota).where(Quota.tenant_id == tenant_id, Quota.pool_id == row.id)
                ).all()
            )
            return quota_json(session, row, tenant_id, rows)

    def clear(self, credential: Credential | None, *, tenant_id: str, pool: str) -> QuotaJson:
        """Remove a tenant's limits in a pool: unused rows go, rows in use stay unlimited and
        unmanaged, so what the tenant uses is still counted."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, None)
            row = find_pool(session, actor, pool)
            actor.require("compute:quotas:manage", pool_resource(row))
            quota_tenant(session, actor, row, tenant_id)
            fold_stripes(session, tenant_id, row.id)
            mine = (col(Quota.tenant_id) == tenant_id, col(Quota.pool_id) == row.id)
            session.execute(delete(Quota).where(*mine, col(Quota.used) == 0))
            for quota in session.exec(select(Quota).where(*mine)).all():
                quota.limit, quota.managed = None, False
                session.add(quota)
            session.flush()
            rows = list(session.exec(select(Quota).where(*mine)).all())
            return quota_json(session, row, tenant_id, rows)

    def show(
        self, credential: Credential | None, *, tenant_id: str, pool: str | None = None
    ) -> QuotaPageJson:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:quotas:read", tenant_resource(actor.tenant_id))
            pools: list[Pool]
            if pool is not None:
                pools = [find_pool(session, actor, pool)]
            else:
                ids = sorted({q.pool_id for q in quota_rows(session, actor.tenant_id)})
                pools = [p for p in (session.get(Pool, i) for i in ids) if p is not None]
            items = []
            for row in pools:
                quotas = quota_rows(session, actor.tenant_id, row.id)
                items.append(quota_json(session, row, actor.tenant_id, quotas))
            return {"items": items}

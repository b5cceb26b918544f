"""Build the ObservedFleet the planner compares against, from the database; plan and apply call it.

Wide rows are read as plain column tuples (SQLAlchemy's ``select``, whose
overloads type more than four columns) rather than as ORM objects. A handful of set-based queries (one per table, never one per object), read in
the caller's transaction so the snapshot and its revision agree. Every stored
value goes through the same ``normalize_*`` helpers as the document loader, so
an applied document plans no changes.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from sqlalchemy import select as select_columns
from sqlmodel import Session, col, select

from bcfleet.api.flavors import referenced_flavors
from bcfleet.api.pools import offers_by_pool
from bcfleet.api.provider_accounts import tenant_accounts
from bcfleet.api.quotas import quota_limits, quota_rows
from bcfleet.domain.fit import scalar_totals
from bcfleet.domain.host_reserve import HostReserve
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.domain.shapes import Inventory
from bcfleet.reconcile.model import (
    FlavorSpec,
    HostCapacity,
    HostSpec,
    ObservedFlavor,
    ObservedFleet,
    ObservedHost,
    ObservedOffer,
    ObservedPool,
    ObservedProviderAccount,
    ObservedQuota,
    ObservedTenant,
    OfferSpec,
    PoolSpec,
    ProviderAccountSpec,
    QuotaSpec,
    TenantSpec,
    normalize_host_reserve,
    normalize_labels,
    normalize_overcommit,
    normalize_placement,
)
from bcfleet.reconcile.observed_compute import observe_compute, observe_size_users
from bcfleet.store.models import (
    Flavor,
    Host,
    Pool,
    ProviderAccount,
    Quota,
    Tenant,
)
from bcfleet.store.node_rows import rows_by_node
from bcfleet.store.tenant_holders import tenant_holders
from bcfleet.store.uow import current_revision

QUOTA_FIELDS = {"vcpu": "vcpu", "memoryGiB": "memory_gib", "diskGiB": "disk_gib", "gpu": "gpu"}


def observe(session: Session, *, host_reserve: HostReserve | None = None) -> ObservedFleet:
    """The state as the planner sees it, at the session's snapshot."""
    revision = current_revision(session)
    pools = _pools(session, host_reserve)
    names = {pool.id: pool.spec.name for pool in pools}
    managed_pools = {pool.id for pool in pools if pool.managed}
    return ObservedFleet(
        revision=revision,
        tenants=_tenants(session),
        provider_accounts=_accounts(session),
        pools=tuple(pools),
        offers=_offers(session, names, managed_pools),
        hosts=_hosts(session, names),
        flavors=_flavors(session, names),
        quotas=_quotas(session, names),
        compute=observe_compute(session, names),
        size_users=observe_size_users(session),
        capacity=_capacity(session, names),
    )


def _tenants(session: Session) -> tuple[ObservedTenant, ...]:
    rows = session.execute(select(col(Tenant.id), col(Tenant.name), col(Tenant.managed))).all()
    deletable = [id_ for id_, _, managed in rows if managed and id_ != ROOT_TENANT]
    held = tenant_holders(session, deletable, undeclared_only=True) if deletable else {}
    return tuple(
        ObservedTenant(TenantSpec(id_, name), bool(managed), tuple(held.get(id_, ())))
        for id_, name, managed in rows
    )


def _accounts(session: Session) -> tuple[ObservedProviderAccount, ...]:
    """Root's provider accounts: the ones a FleetConfig declares."""
    rows = tenant_accounts(session, ROOT_TENANT)
    return tuple(
        ObservedProviderAccount(
            ProviderAccountSpec(row.name, row.provider, row.token_env or "", row.endpoint),
            row.id,
            row.managed,
        )
        for row in rows
    )


def _pools(session: Session, host_reserve: HostReserve | None) -> list[ObservedPool]:
    accounts = dict(
        session.execute(select(col(ProviderAccount.id), col(ProviderAccount.name))).all()
    )
    result = []
    for row in session.exec(select(Pool)).all():
        spec = PoolSpec(
            name=row.name,
            kind=row.kind,
            owner=row.owner_tenant_id,
            gpu_model=row.gpu_model or None,
            overcommit=normalize_overcommit(row.overcommit),
            host_reserve=normalize_host_reserve(row.host_reserve, host_reserve),
            provider_account=accounts.get(row.provider_account_id or ""),
        )
        result.append(ObservedPool(spec, row.id, row.managed, row.version))
    return result


def _offers(
    session: Session, names: Mapping[str, str], managed_pools: set[str]
) -> tuple[ObservedOffer, ...]:
    return tuple(
        ObservedOffer(OfferSpec(names[pool_id], tenant), pool_id in managed_pools)
        for pool_id, tenants in offers_by_pool(session).items()
        for tenant in tenants
    )


def _hosts(session: Session, names: Mapping[str, str]) -> tuple[ObservedHost, ...]:
    query = select_columns(
        col(Host.id),
        col(Host.name),
        col(Host.pool_id),
        col(Host.labels),
        col(Host.tenant_controlled),
        col(Host.managed),
        col(Host.state),
    )
    return tuple(
        ObservedHost(
            HostSpec(name, names[pool_id], normalize_labels(labels), bool(tenant_controlled)),
            id_,
            bool(managed),
            state,
        )
        for id_, name, pool_id, labels, tenant_controlled, managed, state in session.execute(
            query
        ).all()
    )


def _flavors(session: Session, names: Mapping[str, str]) -> tuple[ObservedFlavor, ...]:
    used = referenced_flavors(session)
    query = select_columns(
        col(Flavor.id),
        col(Flavor.pool_id),
        col(Flavor.name),
        col(Flavor.vcpu),
        col(Flavor.memory_gib),
        col(Flavor.disk_gib),
        col(Flavor.gpus),
        col(Flavor.offer_id),
        col(Flavor.placement),
        col(Flavor.archived),
        col(Flavor.managed),
        col(Flavor.version),
    )
    return tuple(_flavor(row, names, used) for row in session.execute(query).all())


def _flavor(row: Any, names: Mapping[str, str], used: set[str]) -> ObservedFlavor:
    (id_, pool_id, name, vcpu, memory, disk, gpus, offer, placement, archived, managed, version) = (
        row
    )
    spec = FlavorSpec(
        pool=names[pool_id],
        name=name,
        vcpu=vcpu,
        memory_gib=memory,
        disk_gib=disk,
        gpus=gpus,
        offer_id=offer,
        placement=normalize_placement(placement),
    )
    return ObservedFlavor(
        spec, id_, bool(managed), bool(archived), referenced=id_ in used, version=version
    )


def _quotas(session: Session, names: Mapping[str, str]) -> tuple[ObservedQuota, ...]:
    """One quota per tenant and pool, its limits as the API shows them (quotas.quota_limits);
    managed when any of its rows is."""
    grouped: dict[tuple[str, str], list[Quota]] = defaultdict(list)
    for row in quota_rows(session):
        grouped[(row.tenant_id, row.pool_id)].append(row)
    observed = []
    for (tenant, pool_id), rows in grouped.items():
        limits = {QUOTA_FIELDS[r]: limit for r, limit in quota_limits(rows).items()}
        if limits:
            spec = QuotaSpec(tenant, names[pool_id], **limits)
            observed.append(ObservedQuota(spec, any(row.managed for row in rows)))
    return tuple(observed)


def _capacity(session: Session, names: Mapping[str, str]) -> tuple[HostCapacity, ...]:
    """Each host's node_resources rows with the inventory totals they were derived from; none
    for a tenant-controlled host, whose rows vps.hosts no longer writes (the plan keeps them)."""
    rows = rows_by_node(session)  # as vps.hosts reads them, in one query
    if not rows:
        return ()
    # Every host, each inventory reduced to its totals as it is read: a list of the ids would
    # be more parameters than PostgreSQL takes past 65,535 hosts, and holding every inventory
    # at once took about 18 KB a host at the peak.
    hosts = session.execute(
        select_columns(
            col(Host.id),
            col(Host.name),
            col(Host.pool_id),
            col(Host.inventory),
            col(Host.tenant_controlled),
        ),
        execution_options={"yield_per": 500},  # streamed: the ORM buffers every row otherwise
    )
    found = [
        HostCapacity(
            name,
            names[pool_id],
            tuple(sorted(rows[id_].values(), key=lambda row: row.resource)),
            {} if controlled else _totals(inventory),  # vps.hosts leaves its rows alone
        )
        for id_, name, pool_id, inventory, controlled in hosts
        if id_ in rows
    ]
    return tuple(sorted(found, key=lambda host: host.host))


def _totals(inventory: Mapping[str, Any] | None) -> dict[str, int]:
    """What the inventory reports, as vps.hosts derives rows from it; none when it is malformed."""
    if not inventory:
        return {}
    try:
        return scalar_totals(Inventory.from_json(inventory))
    except ValueError:
        return {}

"""Finding objects by id or name, as the actor may see them: what it cannot see is NOT_FOUND."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import bindparam, exists
from sqlalchemy import select as sql_select
from sqlmodel import Session, col, select

from bcfleet.api.auth import (
    Actor,
    acting_as,
    owns_pool,
    pool_visible,
    start_tenant_check,
    visible_pool,
)
from bcfleet.errors import NotFoundError
from bcfleet.ids import has_prefix
from bcfleet.placement.candidate_window import WindowSearch
from bcfleet.placement.catalog_cache import CatalogCache, CatalogEntry
from bcfleet.store.catalog_revision import (
    READ_CATALOG_AND_STATE_REVISIONS,
    READ_CATALOG_REVISION,
)
from bcfleet.store.driver_sql import DriverStatement, SentRows
from bcfleet.store.models import Flavor, Host, Pool, PoolOffer, Tenant
from bcfleet.store.new_rows import loaded_row, read_row


def get_tenant(session: Session, tenant_id: str) -> Tenant:
    tenant = session.get(Tenant, tenant_id)
    if tenant is None:
        raise NotFoundError(f"tenant {tenant_id!r} not found", {"tenant": tenant_id})
    return tenant


# Statements built once, with bind parameters: building a select per call cost more than running it.
_POOL_BY_ID = select(Pool).where(Pool.id == bindparam("ref"))
_POOL_BY_NAME = select(Pool).where(Pool.name == bindparam("ref"))
_POOLS = {
    (by_id, lock): (query.with_for_update() if lock else query)
    for by_id, query in ((True, _POOL_BY_ID), (False, _POOL_BY_NAME))
    for lock in (False, True)
}
_FLAVOR_BY_ID = select(Flavor).where(
    Flavor.pool_id == bindparam("pool"), Flavor.id == bindparam("ref")
)
_FLAVOR_BY_NAME = select(Flavor).where(
    Flavor.pool_id == bindparam("pool"), Flavor.name == bindparam("ref")
)


def find_pool(session: Session, actor: Actor, ref: str, *, lock: bool = False) -> Pool:
    """A pool by id or name; NOT_FOUND (never FORBIDDEN) for pools the actor may not see."""
    query = _POOLS[(has_prefix(ref, "pool"), lock)]
    pool: Pool | None = session.execute(query, {"ref": ref}).scalars().first()
    return visible_pool(session, actor, pool, ref)


def find_host(session: Session, actor: Actor, ref: str) -> tuple[Host, Pool]:
    """A host by id or name, with its pool; NOT_FOUND unless the actor owns the pool (owns_pool)."""
    query = select(Host).where(Host.id == ref if has_prefix(ref, "node") else Host.name == ref)
    host = session.exec(query).first()
    if host is None:
        raise NotFoundError(f"host {ref!r} not found", {"host": ref})
    pool = session.get(Pool, host.pool_id)
    if pool is None or not owns_pool(actor, pool):
        raise NotFoundError(f"host {ref!r} not found", {"host": ref})
    return host, pool


def find_flavor(
    session: Session, pool: Pool, name: str, *, include_archived: bool = False
) -> Flavor:
    """A flavor of a pool by name (or id); archived ones are NOT_FOUND unless asked for."""
    query = _FLAVOR_BY_ID if has_prefix(name, "flv") else _FLAVOR_BY_NAME
    flavor: Flavor | None = session.execute(query, {"pool": pool.id, "ref": name}).scalars().first()
    if flavor is None or (flavor.archived and not include_archived):
        raise NotFoundError(
            f"flavor {name!r} not found in pool {pool.name!r}",
            {"flavor": name, "pool": pool.id},
        )
    return flavor


_OFFERED_TO_ACTOR = exists().where(
    PoolOffer.pool_id == Pool.id,  # type: ignore[arg-type]
    PoolOffer.tenant_id == bindparam("tenant"),  # type: ignore[arg-type]
)
_POOL_COLUMNS = tuple(Pool.__table__.columns)  # type: ignore[attr-defined]
_FLAVOR_COLUMNS = tuple(Flavor.__table__.columns)  # type: ignore[attr-defined]
_POOL_KEYS = tuple(str(c.key) for c in _POOL_COLUMNS)
_FLAVOR_KEYS = tuple(str(c.key) for c in _FLAVOR_COLUMNS)
_POOL_END = len(_POOL_COLUMNS)  # the row: pool columns, flavor columns, then the offer flag
_FLAVOR_END = _POOL_END + len(_FLAVOR_COLUMNS)
# Read on the driver's cursor: loading two entities through the ORM cost a placement more than
# running the statement.
_POOL_AND_FLAVOR = {
    (pool_by_id, flavor_by_id): DriverStatement(
        sql_select(*_POOL_COLUMNS, *_FLAVOR_COLUMNS, _OFFERED_TO_ACTOR)
        .join_from(Pool.__table__, Flavor.__table__, Flavor.pool_id == Pool.id)  # type: ignore[attr-defined, arg-type]
        .where(
            col(Pool.id if pool_by_id else Pool.name) == bindparam("pool"),
            col(Flavor.id if flavor_by_id else Flavor.name) == bindparam("flavor"),
        )
        .limit(1)
    )
    for pool_by_id in (True, False)
    for flavor_by_id in (True, False)
}


def find_pool_and_flavor(
    session: Session,
    actor: Actor,
    pool_ref: str,
    flavor_ref: str,
    *,
    before_reading: Callable[[], None] = lambda: None,
    after_sending: Callable[[], None] = lambda: None,
    reading_only: bool = False,
) -> tuple[Pool, Flavor]:
    """find_pool then find_flavor (live flavors only), read in one statement.

    When the one statement finds no pool the actor may use with such a live flavor, the
    two lookups run one after the other and raise their own NOT_FOUND. before_reading runs
    once the statement is answered and before its rows are looked at (the actor's tenant
    check, auth.start_acting_for, answered in the same round trip). after_sending runs
    once the statement is sent and before it is answered: what it sends goes in the same
    round trip (on SQLite, statements run as they come).

    The objects are the session's own, as a query answers them, so a change to one is saved.
    With reading_only (a caller that only reads them, such as a placement), one the session
    does not hold yet is a copy outside it instead, made without the ORM's bookkeeping for a
    loaded row (about a third of the lookup); a change to a copy is not saved.
    """
    sent = _send_pool_and_flavor(session, actor, pool_ref, flavor_ref)
    after_sending()
    found = _read_pool_and_flavor(session, actor, sent, before_reading, reading_only)
    if found is not None:
        return found.pool, found.flavor
    pool = find_pool(session, actor, pool_ref)
    return pool, find_flavor(session, pool, flavor_ref)


@dataclass(frozen=True)
class _Found:
    """The one statement's pool and flavor, and whether the pool is offered to the actor's tenant."""

    pool: Pool
    flavor: Flavor
    offered: bool


def _send_pool_and_flavor(
    session: Session, actor: Actor, pool_ref: str, flavor_ref: str
) -> SentRows:
    query = _POOL_AND_FLAVOR[(has_prefix(pool_ref, "pool"), has_prefix(flavor_ref, "flv"))]
    params = {"pool": pool_ref, "flavor": flavor_ref, "tenant": actor.tenant_id}
    session.flush()  # as a query's autoflush would: rows added earlier in the call are seen
    return query.send_reading(session, params)


def _read_pool_and_flavor(
    session: Session,
    actor: Actor,
    sent: SentRows,
    before_reading: Callable[[], None],
    reading_only: bool,
) -> _Found | None:
    """The pool and live flavor the one statement found, if the actor may use them."""
    row = sent.rows().first()
    before_reading()
    if row is None:
        return None
    as_read = read_row if reading_only else loaded_row
    found = _Found(
        as_read(session, Pool, dict(zip(_POOL_KEYS, row[:_POOL_END], strict=True))),
        as_read(session, Flavor, dict(zip(_FLAVOR_KEYS, row[_POOL_END:_FLAVOR_END], strict=True))),
        bool(row[_FLAVOR_END]),
    )
    return found if _usable(session, actor, found.pool, found.flavor, found.offered) else None


def _usable(session: Session, actor: Actor, pool: Pool, flavor: Flavor, offered: bool) -> bool:
    """A live flavor of a pool the actor may see (offered: the pool is offered to its tenant)."""
    offered_to = (actor.tenant_id,) if offered else ()
    return not flavor.archived and pool_visible(session, actor, pool, offered_to)


def find_for_placement(
    session: Session,
    catalog: CatalogCache | None,
    actor: Actor,
    tenant_id: str | None,
    pool_ref: str,
    flavor_ref: str,
    *,
    after_sending: Callable[[], None],
    window: WindowSearch | None = None,
) -> tuple[Actor, Pool, Flavor]:
    """auth.start_acting_for then find_pool_and_flavor (reading only): the scoped actor, the
    pool and the flavor, answered from `catalog` while the catalog revision is the one they
    were found at.

    The revision is read first in the call's transaction (on PostgreSQL it rides the round
    trip of what after_sending sends); when the kept entry holds at it and the actor may use
    what it holds, that is the answer, and neither the tenant's check nor the lookup runs.
    Otherwise both run as they would without a cache, and what they found is kept under the
    revision read before them; NOT_FOUND and FORBIDDEN are never kept. With no catalog (a
    call inside an enclosing transaction, which may have changed the catalog itself) they
    run as ever.

    `window` (SQLite, with a catalog): the placement's candidate window, armed with the state
    revision read in the same statement as the catalog's.
    """
    scoped = acting_as(actor, tenant_id)
    checks_tenant = scoped is not actor
    if catalog is None:
        pool, flavor, _ = _looked_up(
            session, scoped, checks_tenant, pool_ref, flavor_ref, after_sending
        )
        return scoped, pool, flavor
    key = (scoped.tenant_id, pool_ref, flavor_ref)
    kept = catalog.get(key)
    if window is None:
        revision = READ_CATALOG_REVISION.send_reading(session, {})
    else:  # SQLite: run at once
        revision = READ_CATALOG_AND_STATE_REVISIONS.send_reading(session, {})
        read = revision.rows().first()
        if read is not None:
            window.started_at(read[1])
    if kept is not None:
        after_sending()  # in the revision's round trip
        after_sending = _confirmed
        if kept.holds(revision.rows().scalar(), checks_tenant) and _usable(
            session, scoped, kept.pool, kept.flavor, kept.offered
        ):
            return scoped, kept.pool, kept.flavor
    pool, flavor, offered = _looked_up(
        session, scoped, checks_tenant, pool_ref, flavor_ref, after_sending
    )
    read_at = revision.rows().scalar()
    if offered is not None and read_at is not None:
        catalog.keep(key, CatalogEntry(read_at, pool, flavor, offered, checks_tenant))
    return scoped, pool, flavor


def _looked_up(
    session: Session,
    actor: Actor,
    checks_tenant: bool,
    pool_ref: str,
    flavor_ref: str,
    after_sending: Callable[[], None],
) -> tuple[Pool, Flavor, bool | None]:
    """The tenant's check (when `checks_tenant`) and find_pool_and_flavor, reading only, as
    without a cache; with whether the pool is offered to the tenant when the one statement
    found them (None when the two lookups one after the other did)."""
    confirm = start_tenant_check(session, actor.tenant_id) if checks_tenant else _confirmed
    sent = _send_pool_and_flavor(session, actor, pool_ref, flavor_ref)
    after_sending()
    found = _read_pool_and_flavor(session, actor, sent, confirm, reading_only=True)
    if found is not None:
        return found.pool, found.flavor, found.offered
    pool = find_pool(session, actor, pool_ref)
    return pool, find_flavor(session, pool, flavor_ref), None


def _confirmed() -> None:
    """Nothing to check or send."""

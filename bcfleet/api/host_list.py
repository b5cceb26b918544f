"""hosts.list as a few set-based reads: hosts with their pools, capacity rows, GPUs, degraded guests.

Each read is one Core statement over the listed hosts returning plain tuples, turned
straight into the listing's JSON: no ORM entity, no query per host. Listing 5,000 hosts
this way takes tens of milliseconds; loading them as entities took over a second.

HostReads (hosts.list itself; HostsAPI inherits it) runs on a Core connection with the Core
tables, authorization included, so `fleet hosts list` never imports SQLModel or the ORM: that
import and mapping the tables were most of the command's start-up.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, cast

from sqlalchemy import Connection, Select, bindparam, func, or_, select

from bcfleet.api.auth import Credential, owns_pool, pool_resource, tenant_resource, visible_pool
from bcfleet.api.base import Area
from bcfleet.api.conditions import condition_is_true, mentions
from bcfleet.api.raw_rows import json_value, plain_rows, time_text
from bcfleet.api.views import host_fields_json, node_resource_row_json
from bcfleet.domain.states import InstanceState
from bcfleet.errors import NotFoundError
from bcfleet.ids import has_prefix
from bcfleet.store.driver_sql import DriverStatement, core_connection
from bcfleet.store.stored_json import from_driver
from bcfleet.store.tables import BOOKINGS, GPU_ATOMS, HOSTS, INSTANCES, NODE_RESOURCES, POOLS

if TYPE_CHECKING:
    from bcfleet.api.auth import Transaction
    from bcfleet.api.documents import HostListItemJson, HostPageJson, NodeResourceJson


DEGRADED = "PlacementDegraded"


@dataclass(frozen=True)
class Scope:
    """Which hosts are listed: one host (hosts.show), one pool's, one tenant's pools', or
    (all None) every host."""

    pool_id: str | None = None
    owner_tenant_id: str | None = None
    node_id: str | None = None


def _scoped(query: Select[Any], node_id: Any, scope: Scope) -> Select[Any]:
    """Keep the rows whose node (the column node_id) is one of the listed hosts."""
    if scope.node_id is not None:
        return query.where(node_id == scope.node_id)
    if scope.pool_id is not None:
        return query.join(HOSTS, HOSTS.c.id == node_id).where(HOSTS.c.pool_id == scope.pool_id)
    if scope.owner_tenant_id is not None:
        return (
            query.join(HOSTS, HOSTS.c.id == node_id)
            .join(POOLS, POOLS.c.id == HOSTS.c.pool_id)
            .where(POOLS.c.owner_tenant_id == scope.owner_tenant_id)
        )
    return query


@dataclass(frozen=True)
class _PoolRow:
    id: str
    owner_tenant_id: str


_POOL_BY = {
    by_id: DriverStatement(
        select(POOLS.c.id, POOLS.c.owner_tenant_id).where(
            (POOLS.c.id if by_id else POOLS.c.name) == bindparam("ref")
        )
    )
    for by_id in (True, False)
}


class HostReads(Area):
    """hosts.list, on Core alone (module docstring)."""

    def list(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        pool: str | None = None,
    ) -> HostPageJson:
        """Hosts by name, each as hosts.show has it without the inventory, and with:

        - `resources`: its capacity rows (allocated of floor(allocatable × ratio));
        - `gpus`: {"total": its GPUs present, "used": those booked now, by an instance or a
          reservation, present or not};
        - `degradedGuests`: its live instances with a PlacementDegraded condition;
        - `inventoryError`: why vps.hosts could not derive its capacity rows, or null.
        """
        with self.fleet.read_core() as connection:
            actor = self.actor(connection, credential, tenant_id)
            if pool is not None:
                found = _POOL_BY[has_prefix(pool, "pool")].run(connection, {"ref": pool}).first()
                row = visible_pool(
                    connection, actor, None if found is None else _PoolRow(*found), pool
                )
                if not owns_pool(actor, row):  # offered to the tenant: its hosts are the owner's
                    raise NotFoundError(
                        f"no hosts of pool {pool!r} found: a pool's hosts are its owner's",
                        {"pool": pool},
                    )
                actor.require("compute:hosts:read", pool_resource(row))
                scope = Scope(pool_id=row.id)
            else:
                actor.require("compute:hosts:read", tenant_resource(actor.tenant_id))
                # owns_pool, as a filter
                scope = Scope() if actor.is_root_admin else Scope(owner_tenant_id=actor.tenant_id)
            return {"items": list_hosts(connection, scope, self.fleet.now())}


def list_hosts(on: Transaction, scope: Scope, now: datetime) -> list[HostListItemJson]:
    """The listing's items, by host name (see HostReads.list for the fields)."""
    connection = core_connection(on)  # a joined transaction's changes are seen
    hosts_query = (
        select(
            HOSTS.c.id,
            HOSTS.c.name,
            HOSTS.c.pool_id,
            POOLS.c.name,
            HOSTS.c.labels,
            HOSTS.c.tenant_controlled,
            HOSTS.c.state,
            HOSTS.c.inventory_reported_at,
            HOSTS.c.created_at,
            HOSTS.c.inventory_error,
            HOSTS.c.conditions,
            HOSTS.c.agent_health,
        )
        .join(POOLS, POOLS.c.id == HOSTS.c.pool_id)
        .order_by(HOSTS.c.name)
    )
    if scope.node_id is not None:
        hosts_query = hosts_query.where(HOSTS.c.id == scope.node_id)
    elif scope.pool_id is not None:
        hosts_query = hosts_query.where(HOSTS.c.pool_id == scope.pool_id)
    elif scope.owner_tenant_id is not None:
        hosts_query = hosts_query.where(POOLS.c.owner_tenant_id == scope.owner_tenant_id)
    rows = plain_rows(connection, hosts_query)
    if not rows:
        return []
    resources = _resources(connection, scope)
    gpus = _gpus(connection, scope, now)
    degraded = _degraded(connection, scope)
    items: list[HostListItemJson] = []
    for (
        node,
        name,
        pool_id,
        pool,
        labels,
        controlled,
        state,
        reported,
        created,
        error,
        held,
        health,
    ) in rows:
        # Only hosts.report writes an inventory, always with its time: no time, no inventory.
        total, used = gpus.get(node, (0, 0))
        fields = host_fields_json(
            id=node,
            name=name,
            pool_id=pool_id,
            pool=pool,
            labels={} if labels == "{}" else json_value(labels) or {},
            tenant_controlled=controlled,
            state=str(state),
            inventory_reported_at=time_text(reported),
            inventory_error=error,
            created_at=time_text(created),
            conditions=[] if held in (None, "[]") else json_value(held),
            health=from_driver(health, parsed=False),  # views.health_json checks it
        )
        item = cast("HostListItemJson", fields)  # a fresh dict: completed, not copied
        item["resources"] = resources.get(node, [])
        item["gpus"] = {"total": total, "used": used}
        item["degradedGuests"] = degraded[node]
        items.append(item)
    return items


def _resources(connection: Connection, scope: Scope) -> dict[str, list[NodeResourceJson]]:
    c = NODE_RESOURCES.c
    query = _scoped(
        select(c.node_id, c.resource, c.allocatable, c.ratio, c.capacity, c.allocated),
        c.node_id,
        scope,
    ).order_by(c.node_id, c.resource)
    out: dict[str, list[NodeResourceJson]] = {}
    # unpacked by name: `node, *fields` would build a list for each of 15,000 rows
    for node, resource, allocatable, ratio, capacity, allocated in plain_rows(connection, query):
        row = node_resource_row_json(resource, allocatable, ratio, capacity, allocated)
        out.setdefault(node, []).append(row)
    return out


def _gpus(connection: Connection, scope: Scope, now: datetime) -> dict[str, tuple[int, int]]:
    """node → (GPUs present, GPUs booked now by an instance or a reservation).

    A booked GPU the latest inventory no longer reports still counts as used: the booking
    stands (the host's InventoryShortfall condition names it), so used may exceed total.
    """
    atoms, bookings = GPU_ATOMS.c, BOOKINGS.c
    present = atoms.present.is_(True)
    totals = plain_rows(
        connection,
        _scoped(select(atoms.node_id, func.count()).where(present), atoms.node_id, scope)
        .group_by(atoms.node_id),
    )  # fmt: skip
    busy = plain_rows(
        connection,
        _scoped(
            select(bookings.node_id, func.count(bookings.atom_id.distinct()))
            .join(GPU_ATOMS, atoms.id == bookings.atom_id)
            .where(
                bookings.released_at.is_(None),
                bookings.starts_at <= now,
                or_(bookings.ends_at.is_(None), bookings.ends_at > now),
            ),
            bookings.node_id,
            scope,
        ).group_by(bookings.node_id),
    )
    used, present_now = dict(busy), dict(totals)
    return {
        node: (int(present_now.get(node, 0)), int(used.get(node, 0)))
        for node in present_now.keys() | used.keys()
    }


def _degraded(connection: Connection, scope: Scope) -> Counter[str]:
    """node → live guests with a PlacementDegraded condition."""
    c = INSTANCES.c
    query = _scoped(
        select(c.node_id, c.conditions).where(
            c.node_id.is_not(None),
            c.state != InstanceState.DELETED,
            mentions(c.conditions, DEGRADED),
        ),
        c.node_id,
        scope,
    )
    return Counter(
        node
        for node, conditions in plain_rows(connection, query)
        if condition_is_true(json_value(conditions), DEGRADED)
    )

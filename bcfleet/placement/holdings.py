"""What live guests hold on their hosts, read set-based, for the inventory-truth checks.

`fleet doctor --invariants` (placement/invariants.py) reads every host's; hosts.report reads
the reporting host's, to set or clear its InventoryShortfall condition. The checks themselves
are domain/physical.py's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Select, func, or_, select

from bcfleet.domain.host_reserve import HostReserve
from bcfleet.domain.numa import HostPlacement
from bcfleet.domain.physical import Held, inventory_shortfall
from bcfleet.domain.shapes import Inventory
from bcfleet.domain.states import INSTANCE_LIVE, INVENTORY_SHORTFALL
from bcfleet.placement.conditions import clear_condition, set_condition
from bcfleet.store.tables import BOOKINGS, GPU_ATOMS, HOSTS, INSTANCES, NODE_RESOURCES, POOLS


def _only(query: Select[Any], column: Any, node_ids: Sequence[str] | None) -> Select[Any]:
    """The query, kept to the rows of node_ids when given."""
    return query if node_ids is None else query.where(column.in_(list(node_ids)))


def held_by_host(
    connection: Connection, now: datetime, node_ids: Sequence[str] | None = None
) -> dict[str, Held]:
    """node → what its live guests hold (all hosts with rows or guests, or just node_ids)."""
    allocated: dict[str, dict[str, int]] = defaultdict(dict)
    ratios: dict[str, dict[str, float]] = defaultdict(dict)
    rows = select(
        NODE_RESOURCES.c.node_id,
        NODE_RESOURCES.c.resource,
        NODE_RESOURCES.c.allocated,
        NODE_RESOURCES.c.ratio,
    )
    for node, resource, amount, ratio in connection.execute(
        _only(rows, NODE_RESOURCES.c.node_id, node_ids)
    ).all():
        allocated[node][resource] = int(amount)
        ratios[node][resource] = float(ratio)
    pinned: dict[str, set[int]] = defaultdict(set)
    guests = select(INSTANCES.c.node_id, INSTANCES.c.host_placement).where(
        INSTANCES.c.state.in_([str(s) for s in INSTANCE_LIVE]),
        INSTANCES.c.node_id.is_not(None),
        INSTANCES.c.host_placement.is_not(None),
    )
    for node, doc in connection.execute(_only(guests, INSTANCES.c.node_id, node_ids)).all():
        try:
            pinned[node].update(HostPlacement.from_json(doc or {}).cpus or ())
        except (TypeError, ValueError, AttributeError):
            continue  # doublePinnedCpus reports a placement that cannot be read
    gpus: dict[str, set[str]] = defaultdict(set)
    booked = (
        select(BOOKINGS.c.node_id, func.lower(GPU_ATOMS.c.pci_address))
        .join(GPU_ATOMS, GPU_ATOMS.c.id == BOOKINGS.c.atom_id)
        .where(
            BOOKINGS.c.released_at.is_(None),
            BOOKINGS.c.starts_at <= now,
            or_(BOOKINGS.c.ends_at.is_(None), BOOKINGS.c.ends_at > now),
        )
    )
    for node, address in connection.execute(_only(booked, BOOKINGS.c.node_id, node_ids)).all():
        gpus[node].add(str(address))
    nodes = set(allocated) | set(pinned) | set(gpus)
    return {
        node: Held(allocated[node], ratios[node], frozenset(pinned[node]), frozenset(gpus[node]))
        for node in nodes
    }


def host_inventories(
    connection: Connection, default: HostReserve, node_ids: Sequence[str] | None = None
) -> dict[str, tuple[Inventory, HostReserve]]:
    """node → its latest inventory and its reserve; hosts without a readable inventory left out
    (vps.hosts reports an unreadable one as inventory_error)."""
    query = (
        select(HOSTS.c.id, HOSTS.c.inventory, POOLS.c.host_reserve)
        .join(POOLS, POOLS.c.id == HOSTS.c.pool_id)
        .where(HOSTS.c.inventory.is_not(None))
    )
    found = {}
    for node, doc, reserve in connection.execute(_only(query, HOSTS.c.id, node_ids)).all():
        try:
            found[node] = (Inventory.from_json(doc), default.with_overrides(reserve))
        except ValueError:
            continue
    return found


def shortfalls(
    connection: Connection,
    now: datetime,
    default: HostReserve,
    node_ids: Sequence[str] | None = None,
) -> dict[str, list[str]]:
    """node → what its guests hold that its latest inventory lacks (hosts lacking nothing left out)."""
    held = held_by_host(connection, now, node_ids)
    found = {}
    for node, (inventory, reserve) in host_inventories(connection, default, node_ids).items():
        missing = inventory_shortfall(inventory, reserve, held[node]) if node in held else []
        if missing:
            found[node] = missing
    return found


def with_shortfall(
    connection: Connection,
    node_id: str,
    conditions: list[dict[str, Any]],
    now: datetime,
    default: HostReserve,
) -> list[dict[str, Any]]:
    """The host's conditions with InventoryShortfall set (naming what is missing) or cleared,
    from its stored inventory (hosts.report flushes the new one first)."""
    missing = shortfalls(connection, now, default, [node_id]).get(node_id)
    if not missing:
        return clear_condition(conditions, INVENTORY_SHORTFALL)
    message = "the latest inventory lacks what guests hold: " + "; ".join(missing)
    return set_condition(
        conditions, INVENTORY_SHORTFALL, reason="HeldNotReported", message=message, at=now
    )

"""A host's node_resources rows as the capacity decider reads them: the vps.hosts job and the plan."""

from __future__ import annotations

from sqlalchemy import select as select_columns
from sqlmodel import Session, col

from bcfleet.domain.fit import ResourceRow
from bcfleet.store.models import Host, NodeResource


def rows_by_node(
    session: Session,
    pool_ids: list[str] | None = None,
    *,
    first: str | None = None,
    last: str | None = None,
) -> dict[str, dict[str, ResourceRow]]:
    """node id → resource → its row, in one query: every host's when ``pool_ids`` is None, else
    those a vps.hosts tick syncs (the pools' hosts, not tenant-controlled), with host ids from
    ``first`` to ``last`` when given (a page of hosts). Chosen by pool and id range, never by a
    list of node ids: past 65,535 hosts that is more parameters than PostgreSQL takes in one
    statement."""
    r = NodeResource
    query = select_columns(
        col(r.node_id), col(r.resource), col(r.allocatable), col(r.ratio), col(r.capacity),
        col(r.allocated),
    )  # fmt: skip
    if pool_ids is not None:
        if not pool_ids:
            return {}
        query = query.join(Host, col(Host.id) == col(r.node_id)).where(
            col(Host.pool_id).in_(pool_ids), col(Host.tenant_controlled).is_(False)
        )
        if first is not None:
            query = query.where(col(Host.id) >= first)
        if last is not None:
            query = query.where(col(Host.id) <= last)
    result: dict[str, dict[str, ResourceRow]] = {}
    for node_id, resource, allocatable, ratio, capacity, allocated in session.execute(query):
        row = ResourceRow(resource, allocatable, ratio, capacity, allocated)
        result.setdefault(node_id, {})[resource] = row
    return result

"""A host's node_resources rows as the capacity decider reads them: the vps.hosts job and the plan."""

from __future__ import annotations

from sqlalchemy import select as select_columns
from sqlmodel import Session, col

from bcfleet.domain.fit import ResourceRow
from bcfleet.store.models import NodeResource


def rows_by_node(
    session: Session, node_ids: list[str] | None = None
) -> dict[str, dict[str, ResourceRow]]:
    """node id → resource → its row, for ``node_ids`` (every host's when None), in one query."""
    query = select_columns(
        col(NodeResource.node_id),
        col(NodeResource.resource),
        col(NodeResource.allocatable),
        col(NodeResource.ratio),
        col(NodeResource.capacity),
        col(NodeResource.allocated),
    )
    if node_ids is not None:
        if not node_ids:
            return {}
        query = query.where(col(NodeResource.node_id).in_(node_ids))
    result: dict[str, dict[str, ResourceRow]] = {}
    for node_id, resource, allocatable, ratio, capacity, allocated in session.execute(query):
        row = ResourceRow(resource, allocatable, ratio, capacity, allocated)
        result.setdefault(node_id, {})[resource] = row
    return result

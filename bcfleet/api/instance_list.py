"""instances.list as one Core read: plain rows straight to the same JSON as instance_json.

Loading 50,000 instances as ORM entities and then writing their JSON took seconds;
the columns as tuples, with the flavor's name joined in, take a fraction of that.
A condition filter is cut down in SQL (the JSON's text mentions the type) and
checked exactly on the few rows left.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import ColumnElement, String, Table, cast, select
from sqlmodel import Session

from bcfleet.api.raw_rows import json_value, plain_rows, time_text
from bcfleet.errors import InvalidInputError
from bcfleet.store.models import Flavor, Instance

INSTANCES: Table = Instance.__table__  # type: ignore[attr-defined]
FLAVORS: Table = Flavor.__table__  # type: ignore[attr-defined]
CONDITION_TYPE = re.compile(r"[A-Z][A-Za-z0-9]{0,62}")
"""A condition type as the API sets them: PlacementDegraded, Unschedulable, Preempted."""

_c = INSTANCES.c
COLUMNS = (
    _c.id,
    _c.tenant_id,
    _c.pool_id,
    _c.flavor_id,
    _c.name,
    _c.state,
    _c.shape,
    _c.node_id,
    _c.conditions,
    _c.created_at,
    _c.updated_at,
    FLAVORS.c.name,
    _c.host_placement,
    _c.purpose,
    _c.size,
    _c.ready_at,
    _c.deleted_at,
    _c.provider_server_id,
    _c.provider_status,
)


def has_condition(conditions: Iterable[Mapping[str, Any]] | None, kind: str) -> bool:
    """Whether a condition of that type is set with status True (a missing status counts as True)."""
    return any(
        c.get("type") == kind and c.get("status", "True") == "True" for c in conditions or ()
    )


def mentions(column: Any, word: str) -> Any:
    """The JSON column's text contains the word: a cheap first cut, checked exactly in Python."""
    return cast(column, String).like(f"%{word}%")


def check_condition(condition: str | None) -> None:
    if condition is not None and not CONDITION_TYPE.fullmatch(condition):
        raise InvalidInputError(
            "condition is a condition type such as PlacementDegraded", {"condition": condition}
        )


def list_instances(
    session: Session, where: list[ColumnElement[bool]], condition: str | None = None
) -> list[dict[str, Any]]:
    """The instances the clauses keep, oldest first, as instance_json writes them (with flavor)."""
    query = select(*COLUMNS).outerjoin(FLAVORS, FLAVORS.c.id == _c.flavor_id).where(*where)
    if condition is not None:
        query = query.where(mentions(_c.conditions, condition))
    session.flush()  # Core reads skip the ORM's autoflush: changes made in a joined transaction
    rows = plain_rows(session.connection(), query.order_by(_c.created_at, _c.id))
    items = []
    for (
        id_,
        tenant_id,
        pool_id,
        flavor_id,
        name,
        state,
        shape,
        node_id,
        conditions,
        created_at,
        updated_at,
        flavor,
        host_placement,
        purpose,
        size,
        ready_at,
        deleted_at,
        provider_server_id,
        provider_status,
    ) in rows:
        conditions = json_value(conditions)
        if condition is not None and not has_condition(conditions, condition):
            continue
        shape = json_value(shape)
        host_placement = json_value(host_placement)
        body: dict[str, Any] = {
            "id": id_,
            "tenantId": tenant_id,
            "poolId": pool_id,
            "flavorId": flavor_id,
            "name": name,
            "state": state,
            "shape": shape if shape is not None else {},
            "nodeId": node_id,
            "conditions": conditions if conditions is not None else [],
            "createdAt": time_text(created_at),
            "updatedAt": time_text(updated_at),
        }
        if flavor is not None:
            body["flavor"] = flavor
        if host_placement is not None:
            body["hostPlacement"] = host_placement
        if purpose != "tenant":
            body["purpose"] = purpose
            body["size"] = size
        if ready_at is not None:
            body["readyAt"] = time_text(ready_at)
        if deleted_at is not None:
            body["deletedAt"] = time_text(deleted_at)
        if provider_server_id is not None:
            body["providerServerId"] = provider_server_id
            body["providerStatus"] = provider_status
        items.append(body)
    return items

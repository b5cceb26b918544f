"""instances.list as one Core read: plain rows straight to the same JSON as instance_json.

Loading 50,000 instances as ORM entities and then writing their JSON took seconds;
the columns as tuples, with the flavor's name joined in, take a fraction of that.
A condition filter is cut down in SQL (the JSON's text mentions the type) and
checked exactly on the few rows left.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, case, func, select

from bcfleet.api.auth import Actor
from bcfleet.api.conditions import condition_is_true, mentions
from bcfleet.api.documents import InstanceJson
from bcfleet.api.host_view import host_view
from bcfleet.api.raw_rows import plain_rows, time_text
from bcfleet.domain.host_ids import HostView
from bcfleet.domain.states import InstanceState
from bcfleet.errors import InvalidInputError
from bcfleet.store.stored_json import INSTANCE_DOCUMENTS, decode, from_driver, unreadable
from bcfleet.store.tables import FLAVORS, INSTANCES

if TYPE_CHECKING:
    from sqlmodel import Session

CONDITION_TYPE = re.compile(r"[A-Z][A-Za-z0-9]{0,62}")
"""A condition type as the API sets them: PlacementDegraded, Unschedulable, Preempted."""

_c = INSTANCES.c
FIELDS = (
    "id",
    "tenant_id",
    "pool_id",
    "flavor_id",
    "name",
    "state",
    "shape",
    "node_id",
    "conditions",
    "created_at",
    "updated_at",
    "host_placement",
    "purpose",
    "size",
    "ready_at",
    "deleted_at",
    "provider_server_id",
    "provider_status",
    "idempotency_key",
    "agent_conditions",
    "balloon_bytes",
)
"""The instance columns instance_body reads."""
TIME_FIELDS = ("created_at", "updated_at", "ready_at", "deleted_at")
FIELD_NAMES = {
    "shape": "shape",
    "host_placement": "hostPlacement",
    "conditions": "conditions",
    "agent_conditions": "agentConditions",
}
_NAMES = (*FIELDS, "flavor")
COLUMNS = (*(_c[name] for name in FIELDS), FLAVORS.c.name)


def check_condition(condition: str | None) -> None:
    if condition is not None and not CONDITION_TYPE.fullmatch(condition):
        raise InvalidInputError(
            "condition is a condition type such as PlacementDegraded", {"condition": condition}
        )


def list_instances(
    session: Session,
    actor: Actor,
    where: list[ColumnElement[bool]],
    condition: str | None = None,
    limit: int | None = None,
) -> list[InstanceJson]:
    """The instances the clauses keep, oldest first, as instance_json writes them (with flavor),
    their hosts as the actor sees them (api.host_view); with a limit, at most that many, pending
    ones first and then the newest."""
    query = select(*COLUMNS).outerjoin(FLAVORS, FLAVORS.c.id == _c.flavor_id).where(*where)
    if condition is not None:
        query = query.where(mentions(_c.conditions, condition))
    session.flush()  # Core reads skip the ORM's autoflush: changes made in a joined transaction
    if limit is None:
        query = query.order_by(_c.created_at, _c.id)
    else:  # what an operator looks at first: pending ones, then the newest
        pending_first = case((_c.state == InstanceState.PENDING, 0), else_=1)
        query = query.order_by(pending_first, _c.created_at.desc(), _c.id.desc())
        if condition is None:  # a condition is checked below, after the rows are read
            query = query.limit(limit)
    connection = session.connection()
    rows = plain_rows(connection, query)
    parsed = connection.dialect.name != "sqlite"  # psycopg parses JSON; SQLite gives its text
    kept = []
    for row in rows:
        values = dict(zip(_NAMES, row, strict=True))
        for name in INSTANCE_DOCUMENTS:
            values[name] = from_driver(values[name], parsed=parsed)
        read_documents(values)
        if condition is not None and not condition_is_true(values["conditions"], condition):
            continue
        for name in TIME_FIELDS:
            values[name] = time_text(values[name])
        kept.append(values)
        if limit is not None and len(kept) >= limit:
            break
    view = host_view(session, actor, (values["node_id"] for values in kept))
    return [instance_body(values, values.pop("flavor"), view) for values in kept]


def read_documents(values: dict[str, Any]) -> None:
    """The instance's JSON documents through the guarded decoder, in place: an unreadable one
    empty, and its name under ``unreadable`` (shown as the document's field)."""
    bad = unreadable(values, INSTANCE_DOCUMENTS)
    if bad:
        values.update(decode(values, INSTANCE_DOCUMENTS)[0])
    values["unreadable"] = [FIELD_NAMES[name] for name in bad] if bad else ()


def instance_body(values: Mapping[str, Any], flavor: str | None, view: HostView) -> InstanceJson:
    """An instance's JSON from its column values (times already as text, JSON documents through
    read_documents); its node as the reader's view shows it (an opaque id for a guest tenant)."""
    body: InstanceJson = {
        "id": values["id"],
        "tenantId": values["tenant_id"],
        "poolId": values["pool_id"],
        "flavorId": values["flavor_id"],
        "name": values["name"],
        "state": str(values["state"]),
        "shape": dict(values["shape"] or {}),
        "nodeId": view.node(values["node_id"]),
        "conditions": list(values["conditions"] or []),
        "createdAt": values["created_at"],
        "updatedAt": values["updated_at"],
    }
    if flavor is not None:
        body["flavor"] = flavor
    if values["host_placement"] is not None:
        body["hostPlacement"] = dict(values["host_placement"])
    if values["purpose"] != "tenant":
        body["purpose"] = values["purpose"]
        body["size"] = values["size"]
    if values["ready_at"] is not None:
        body["readyAt"] = values["ready_at"]
    if values["deleted_at"] is not None:
        body["deletedAt"] = values["deleted_at"]
    if values["provider_server_id"] is not None:
        body["providerServerId"] = values["provider_server_id"]
        body["providerStatus"] = values["provider_status"]
    if values["idempotency_key"] is not None:
        body["idempotencyKey"] = values["idempotency_key"]
    if values.get("unreadable"):
        body["unreadable"] = list(values["unreadable"])
    if values["agent_conditions"]:
        body["agentConditions"] = list(values["agent_conditions"])
    if values["balloon_bytes"] is not None:
        body["balloonBytes"] = int(values["balloon_bytes"])
    return body


def count_instances(session: Session, where: list[ColumnElement[bool]]) -> int:
    """How many instances the clauses keep (a listing's total when it shows a page of them)."""
    total = session.connection().execute(select(func.count()).select_from(INSTANCES).where(*where))
    return int(total.scalar_one())

"""instances.list as one Core read: plain rows straight to the same JSON as instance_json.

Loading 50,000 instances as ORM entities and then writing their JSON took seconds;
the columns as tuples, with the flavor's name joined in, take a fraction of that.
A condition filter is cut down in SQL (the JSON's text mentions the type) and
checked exactly on the few rows left. Search words, sort keys and pages (an offset as the
cursor) are SQL too: the orders by name, state and time walk an index (migration 0008).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, Select, case, func, or_, select

from bcfleet.api.auth import Actor
from bcfleet.api.conditions import condition_is_true, mentions
from bcfleet.api.documents import InstanceJson
from bcfleet.api.host_view import host_view
from bcfleet.api.raw_rows import plain_rows, time_text
from bcfleet.clock import format_time
from bcfleet.domain.host_ids import HostView
from bcfleet.domain.instance_query import SORT_KEYS
from bcfleet.domain.states import InstanceState
from bcfleet.errors import InvalidInputError
from bcfleet.store.stored_json import INSTANCE_DOCUMENTS, decode, from_driver, unreadable
from bcfleet.store.tables import FLAVORS, HOSTS, INSTANCES, POOLS

if TYPE_CHECKING:
    from sqlmodel import Session

CONDITION_TYPE = re.compile(r"[A-Z][A-Za-z0-9]{0,62}")
"""A condition type as the API sets them: PlacementDegraded, Unschedulable, Preempted."""

FEW_MATCHES = 5_000
"""A search keeping at most this many instances reads their ids from ix_instances_search and
sorts those (_found_first); one keeping more walks the order's index, which soon meets a page
of them (api.instances.list counts first)."""

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


def searched(words: Sequence[str], dialect: str) -> list[ColumnElement[bool]]:
    """Each word in the instance's name or id, case-insensitive (% and _ are literal). SQLite's
    LIKE ignores the case of ASCII letters already; lower() on every row would double a scan."""
    if dialect == "sqlite":
        return [
            or_(_c.name.contains(w, autoescape=True), _c.id.contains(w, autoescape=True))
            for w in words
        ]
    return [
        or_(_c.name.icontains(w, autoescape=True), _c.id.icontains(w, autoescape=True))
        for w in words
    ]


def _ordered(query: Select[Any], actor: Actor, sort: str | None, descending: bool) -> Select[Any]:
    """The listing's order, ties by id: by a sort key (SORT_KEYS), else what an operator looks
    at first: pending ones, then the newest. A host's name orders only the hosts the caller may
    see (auth.owns_pool); the others come last, by id."""
    assert sort is None or sort in SORT_KEYS
    if sort is None:
        pending_first = case((_c.state == InstanceState.PENDING, 0), else_=1)
        if descending:  # the other way round: the oldest first, pending ones last
            return query.order_by(pending_first.desc(), _c.created_at, _c.id)
        return query.order_by(pending_first, _c.created_at.desc(), _c.id.desc())
    if sort == "host":
        query = query.outerjoin(HOSTS, HOSTS.c.id == _c.node_id)
        named: Any = HOSTS.c.name
        if not actor.is_root_admin:
            query = query.join(POOLS, POOLS.c.id == _c.pool_id)
            named = case((POOLS.c.owner_tenant_id == actor.tenant_id, HOSTS.c.name), else_=None)
        columns: list[Any] = [named.is_(None), named]
    elif sort == "pool":
        query = query.join(POOLS, POOLS.c.id == _c.pool_id)
        columns = [POOLS.c.name]
    else:
        orders: dict[str, list[Any]] = {
            "name": [_c.name],
            "tenant": [_c.tenant_id],
            "state": [_c.state, _c.created_at],
            "flavor": [FLAVORS.c.name.is_(None), FLAVORS.c.name],
            "created": [_c.created_at],
        }
        columns = orders[sort]
    columns.append(_c.id)
    return query.order_by(*(c.desc() if descending else c for c in columns))


def _pending_first(
    session: Session,
    query: Select[Any],
    where: list[ColumnElement[bool]],
    descending: bool,
    after: int,
    limit: int | None,
) -> list[tuple[Any, ...]]:
    """The rows of _ordered's default order read as two index walks (pending ones, then the
    others, each newest first) rather than one sort of every row: a page of 50,000 instances
    reads a page of rows."""
    pending = _c.state == InstanceState.PENDING
    parts = [query.where(pending), query.where(_c.state != InstanceState.PENDING)]
    by_time: list[Any] = [_c.created_at.desc(), _c.id.desc()]
    if descending:
        parts.reverse()
        by_time = [_c.created_at, _c.id]
    first = count_instances(session, [*where, pending if not descending else ~pending])
    rows: list[tuple[Any, ...]] = []
    connection = session.connection()
    for part, skip in ((parts[0], after), (parts[1], max(0, after - first))):
        if part is parts[0] and after >= first:
            continue
        wanted = None if limit is None else limit - len(rows)
        if wanted == 0:
            break
        rows += plain_rows(connection, part.order_by(*by_time).offset(skip or None).limit(wanted))
    return rows


def _found_first(
    query: Select[Any],
    actor: Actor,
    where: list[ColumnElement[bool]],
    sort: str | None,
    descending: bool,
    after: int,
    limit: int | None,
) -> Select[Any]:
    """The page of a search as two reads: the ids of the page, ordered and cut from what the
    search keeps (read from the ix_instances_search index alone: name, id, state, created_at),
    then those rows whole."""
    found = select(_c.id).where(*where)
    if sort == "flavor":
        found = found.outerjoin(FLAVORS, FLAVORS.c.id == _c.flavor_id)
    page = _ordered(found, actor, sort, descending).offset(after or None).limit(limit)
    return _ordered(query.where(_c.id.in_(page.scalar_subquery())), actor, sort, descending)


def list_instances(
    session: Session,
    actor: Actor,
    where: list[ColumnElement[bool]],
    condition: str | None = None,
    limit: int | None = None,
    *,
    sort: str | None = None,
    descending: bool = False,
    after: int = 0,
    ordered: bool = False,
    scans: bool = False,
) -> list[InstanceJson]:
    """The instances the clauses keep, as instance_json writes them (with flavor), their hosts
    as the actor sees them (api.host_view). Oldest first, unless a limit, a sort or `ordered`
    asks for an order (_ordered); then the `after` ones before are skipped and at most `limit`
    are read. `scans`: a clause (a search) reads every row anyway and keeps few (FEW_MATCHES),
    so those are sorted rather than walked to in the order's indexes."""
    query = select(*COLUMNS).outerjoin(FLAVORS, FLAVORS.c.id == _c.flavor_id).where(*where)
    if condition is not None:
        query = query.where(mentions(_c.conditions, condition))
    session.flush()  # Core reads skip the ORM's autoflush: changes made in a joined transaction
    connection = session.connection()
    if limit is None and sort is None and not ordered:
        rows = plain_rows(connection, query.order_by(_c.created_at, _c.id))
    elif condition is not None:  # the condition is checked below, on every row read
        rows = plain_rows(connection, _ordered(query, actor, sort, descending))
    elif scans:
        rows = plain_rows(connection, _found_first(query, actor, where, sort, descending,
                                                   after, limit))  # fmt: skip
    elif sort is None:
        rows = _pending_first(session, query, where, descending, after, limit)
    else:
        query = _ordered(query, actor, sort, descending)
        rows = plain_rows(connection, query.offset(after or None).limit(limit))
    parsed = connection.dialect.name != "sqlite"  # psycopg parses JSON; SQLite gives its text
    kept = []
    skip = after if condition is not None else 0
    for row in rows:
        values = dict(zip(_NAMES, row, strict=True))
        for name in INSTANCE_DOCUMENTS:
            values[name] = from_driver(values[name], parsed=parsed)
        read_documents(values)
        if condition is not None and not condition_is_true(values["conditions"], condition):
            continue
        if skip:
            skip -= 1
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


def made_json(
    made: Sequence[Mapping[str, Any]], flavor: str | None, view: HostView
) -> list[InstanceJson]:
    """Instances just written, as instance_json answers them, from the column values their rows
    were written with (placement/batch_placer.py's Batch.made, every column): no object is read
    or made. Rows that share their documents (a batch's shape, placement, conditions) share one
    check of them (read_documents), and rows that share a time one text of it."""
    checked: dict[tuple[int, ...], dict[str, Any]] = {}
    times: dict[Any, str | None] = {None: None}
    items: list[InstanceJson] = []
    for row in made:
        values = dict(row)
        key = tuple(map(id, map(values.__getitem__, INSTANCE_DOCUMENTS)))
        documents = checked.get(key)
        if documents is None:
            read_documents(values)
            documents = checked[key] = {n: values[n] for n in (*INSTANCE_DOCUMENTS, "unreadable")}
        else:
            values.update(documents)
        for name in TIME_FIELDS:
            at = values[name]
            values[name] = times[at] if at in times else times.setdefault(at, format_time(at))
        items.append(instance_body(values, flavor, view))
    return items


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

"""A batch's claims and reads on SQLite in one statement each: every host's guarded claim, every host's inventory (placement/batch_placer.py).

SQLite serializes writers and the batch's candidate query ran in the same write transaction, so
the hosts it found still hold what it read; what a batch costs there is statements, not round
trips. One UPDATE claims every host of the plan, each host's three rows under the same guard as
claims.claim_host's (`allocated + claim <= capacity`); its count of rows changed says whether
every row was taken (as it is unless the rows changed since the search). If not, it is undone
(a savepoint) and run again with RETURNING, which says which rows it took; a host whose three
rows were not all taken gets back what was (claims.return_scalars) and is refused. One SELECT reads the inventories the placement context does not hold at the
generation the candidate query read. The plan and the ids go as one JSON parameter (json_each),
so each is one statement whatever the batch's size.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from sqlalchemy import text
from sqlmodel import Session

from bcfleet.domain.fit import HostSnapshot
from bcfleet.domain.scalars import SCALARS
from bcfleet.domain.shapes import Inventory
from bcfleet.placement.claims import return_scalars, scalar_row
from bcfleet.placement.context import PlacementContext
from bcfleet.store.driver_sql import DriverStatement

_PER_ONE = "CASE resource WHEN 'vcpu' THEN :vcpu WHEN 'memoryGiB' THEN :mem ELSE :disk END"
_CLAIM = (  # UPDATE first, so that the driver counts the rows it changes (rowcount)
    f"UPDATE node_resources SET allocated = allocated + plan.k * {_PER_ONE}, "
    "generation = generation + 1 "
    "FROM (SELECT key AS node, value AS k FROM json_each(:plan)) AS plan "
    "WHERE node_resources.node_id = plan.node "
    f"AND {scalar_row('node_resources.resource')} "
    f"AND node_resources.allocated + plan.k * {_PER_ONE} <= node_resources.capacity"
)
_CLAIM_ALL = DriverStatement(text(_CLAIM))
_CLAIM_PLAN = DriverStatement(
    text(f"{_CLAIM} RETURNING node_resources.node_id, node_resources.resource")
)
_SAVEPOINT = DriverStatement(text("SAVEPOINT batch_claims"))
_RELEASE = DriverStatement(text("RELEASE batch_claims"))
_UNDO = DriverStatement(text("ROLLBACK TO batch_claims"))
_INVENTORIES = DriverStatement(
    text(
        "SELECT h.id, h.inventory_generation, CAST(h.inventory AS TEXT) FROM hosts h "
        "JOIN json_each(:ids) j ON h.id = j.value"
    )
)


def claim_plan(
    session: Session, plan: Sequence[tuple[HostSnapshot, int]], claims: Mapping[str, int]
) -> set[str]:
    """Claim `k` instances' claims on each host of the plan at once; the hosts refused."""
    params = {
        "plan": json.dumps({host.node_id: k for host, k in plan}),
        "vcpu": int(claims.get("vcpu", 0)),
        "mem": int(claims.get("memoryGiB", 0)),
        "disk": int(claims.get("diskGiB", 0)),
    }
    # Every row of every host taken (the rule on SQLite, whose candidate query's view holds)
    # is told by the count of rows changed: the statement without RETURNING, which cost a
    # third of the claim more (its rows made and read). Otherwise it is undone and the hosts
    # refused are told by the rows RETURNING names.
    _SAVEPOINT.run(session, {})
    if _CLAIM_ALL.run(session, params).rowcount == len(SCALARS) * len(plan):
        _RELEASE.run(session, {})
        return set()
    _UNDO.run(session, {})
    _RELEASE.run(session, {})
    taken: dict[str, list[str]] = {}
    for node_id, resource in _CLAIM_PLAN.run(session, params).all():
        taken.setdefault(node_id, []).append(resource)
    refused = set()
    for host, k in plan:
        rows = taken.get(host.node_id, [])
        if len(rows) < len(SCALARS):
            refused.add(host.node_id)
            return_scalars(session, host.node_id, {r: claims.get(r, 0) * k for r in rows})
    return refused


def inventories(
    session: Session, context: PlacementContext, hosts: Sequence[HostSnapshot]
) -> dict[str, Inventory]:
    """Each host's parsed inventory: the context's copy at the candidate query's generation, the
    others read in one statement and kept, as claims.host_inventory keeps them."""
    found: dict[str, Inventory] = {}
    missing = []
    for host in hosts:
        kept = context.kept_inventory(host.node_id)
        if kept is not None and kept[0] == host.inventory_generation:
            found[host.node_id] = kept[1]
        else:
            missing.append(host.node_id)
    if not missing:
        return found
    last = None
    for node_id, generation, document in _INVENTORIES.run(
        session, {"ids": json.dumps(missing)}
    ).all():
        if document is None:
            continue
        if document == last:  # hosts alike report one text: that object, whose hash is kept
            document = last  # (a text of kilobytes is compared in far less than it is hashed)
        last = document
        inventory = context.inventory_of_document(document)
        if inventory is None:
            inventory = Inventory.from_stored(json.loads(document))
        context.keep_inventory(node_id, int(generation), document, inventory)
        found[node_id] = inventory
    return found

"""Placement in batches: N instances of one shape admitted and placed in the caller's one transaction.

instances.create with a count and the spares job call place_batch. The quota is charged for
the whole batch in one guarded charge (QUOTA_EXCEEDED refuses the batch as a whole), then the
candidate search reads a page of feasible hosts, the pure domain.batch_fit.assign says how
many instances each host takes, and each host used gets ONE guarded claim for all of them
(claims.claim_host / send_claim, on PostgreSQL all sent in one round trip, hosts in id order so
two batches lock hosts alike). The NUMA chooser (instance_placer.choose_on_inventory) runs per
instance, seeing the batch's earlier guests on that host. Allocations and instances are then
written with one multi-row INSERT each. The rows are plain dicts of column values from start
to end (store/new_rows.new_values), written as they are and handed back as they were written
(Batch.made, from which the API answers and the events are made): no ORM object is made for
them. A claim a concurrent writer refused, or a host the
chooser refused, is left out and the rest searched for again.

GPU flavors and pinned flavors (whose guests change their neighbours' CPUs) are placed one by
one with the single placement's try_place, in the same transaction: correct, not fast.

What did not fit is counted with the single placement's reasons (check_fit over every host,
explain_no_fit): "3 of 10 fit: 7 refused: no host fits (5 hosts): 5 × vcpu 62 of 64 allocated".
Those instances are not made (Nova's max_count) and their quota is given back, unless
keep_pending (the spares job: they stay pending, Unschedulable, as single placements do);
with all_or_nothing the batch raises CAPACITY_UNAVAILABLE and the caller's transaction rolls
back, changing nothing (Nova's min_count = max_count).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlmodel import Session

from bcfleet.domain.batch_fit import assign, scaled
from bcfleet.domain.fit import HostSnapshot, NoFit, check_fit, explain_no_fit, weigher
from bcfleet.domain.numa import HostPlacement, NotCandidate
from bcfleet.domain.shapes import Inventory, PlacementPolicy, Shape, placement_from_json
from bcfleet.domain.states import InstanceState, PoolKind
from bcfleet.errors import CapacityUnavailableError
from bcfleet.placement.batch_claims import claim_plan, inventories
from bcfleet.placement.candidates import feasible_candidates, pool_snapshots
from bcfleet.placement.claims import (
    ReadBehindClaim,
    host_inventory,
    others_on,
    return_scalars,
    send_claim,
)
from bcfleet.placement.conditions import set_condition
from bcfleet.placement.instance_placer import (
    CANDIDATES_TO_SCORE,
    choose_on_inventory,
    placed_values,
    try_place,
)
from bcfleet.placement.quotas import charge, refund
from bcfleet.store.bulk_insert import BulkInsert
from bcfleet.store.driver_sql import DriverStatement
from bcfleet.store.engine import is_sqlite
from bcfleet.store.models import Allocation, Instance, Pool
from bcfleet.store.new_rows import new_row, new_values

if TYPE_CHECKING:
    from bcfleet.placement.handle import PlacementHandle

_INSERT_ONE_INSTANCE = DriverStatement(Instance.__table__.insert())  # type: ignore[attr-defined]
_INSERT_INSTANCES = BulkInsert(Instance.__table__)  # type: ignore[attr-defined]
_INSERT_ALLOCATIONS = BulkInsert(Allocation.__table__)  # type: ignore[attr-defined]
_COLUMNS = tuple(c.key for c in Instance.__table__.columns)  # type: ignore[attr-defined]
SEARCH_ROUNDS = 3  # the first page, all the pool, and once more after claims others won


@dataclass(frozen=True)
class Batch:
    """What place_batch made: the instances in the order asked (placed, provisioning, or
    pending with keep_pending), each as the column values its row was written with (every
    column of instances; no ORM object is made for them), how many of the batch were refused,
    and why (None: none)."""

    made: list[dict[str, Any]]
    refused: int
    reason: str | None


def place_batch(
    session: Session,
    fleet: PlacementHandle,
    *,
    tenant_id: str,
    pool: Pool,
    shape: Mapping[str, Any],
    names: Sequence[str],
    flavor_id: str | None,
    keys: Sequence[str | None] | None = None,
    input_hash: str | None = None,
    purpose: str = "tenant",
    size: str | None = None,
    all_or_nothing: bool = False,
    keep_pending: bool = False,
) -> Batch:
    """Admit len(names) instances of one shape and place as many as fit (module docstring).

    keys: each instance's own idempotency key (domain.idempotency.item_key), or None.
    """
    count = len(names)
    one = Shape.from_json(shape)
    charge(session, tenant_id, pool.id, scaled(one.quota_charge(), count))
    now = fleet.now()
    provider = pool.kind == PoolKind.PROVIDER  # the providers.reconcile job makes the servers
    # One row's values made as the model makes them, then copied for each instance: the rows
    # share the shape document and the empty conditions (none of them is changed in place;
    # conditions are set anew), so each is dumped once (store/bulk_insert.py).
    template = new_values(
        Instance,
        {
            "tenant_id": tenant_id,
            "pool_id": pool.id,
            "flavor_id": flavor_id,
            "state": InstanceState.PROVISIONING if provider else InstanceState.PENDING,
            "shape": dict(shape),
            "purpose": purpose,
            "size": size,
            "created_at": now,
            "updated_at": now,
            "input_hash": input_hash,
        },
    )
    ids = fleet.ids.new_many("ins", now, count)
    rows = [
        {
            **template,
            "id": ids[i],
            "name": name,
            "idempotency_key": keys[i] if keys is not None else None,
        }
        for i, name in enumerate(names)
    ]
    if provider:
        _insert_instances(session, rows)
        return Batch(rows, 0, None)
    policy = placement_from_json(shape.get("placement"))
    tried: dict[str, NoFit] = {}  # hosts a claim or the NUMA chooser refused, and why
    if one.gpus or (policy is not None and policy.pinned):
        placed = _one_by_one(session, fleet, pool, rows)
    else:
        placed = _at_once(session, fleet, pool, one, policy, rows, tried)
        _insert_instances(session, rows[:placed])
    refused = count - placed
    if not refused:
        return Batch(rows, 0, None)
    reason = refusal(placed, count, _why_not(session, fleet, pool, one, policy, tried))
    if all_or_nothing:
        raise CapacityUnavailableError(
            f"the batch does not fit: {reason}",
            {"count": count, "fit": placed, "refused": refused, "reason": reason},
        )
    rest = rows[placed:]
    if keep_pending:
        for row in rest:
            row["conditions"] = set_condition(
                row["conditions"], "Unschedulable", reason="NoHostFits", message=reason, at=now
            )
        _insert_instances(session, rest)
        return Batch(rows, refused, reason)
    refund(session, tenant_id, pool.id, scaled(one.quota_charge(), refused))
    return Batch(rows[:placed], refused, reason)


def refusal(placed: int, count: int, why: str) -> str:
    """The counted reason of a batch that did not fit whole: how many fit, and why not the rest."""
    return f"{placed} of {count} fit: {count - placed} refused: {why}"


def _why_not(
    session: Session,
    fleet: PlacementHandle,
    pool: Pool,
    shape: Shape,
    policy: PlacementPolicy | None,
    tried: Mapping[str, NoFit],
) -> str:
    """Why one more does not fit, host by host, as a single placement explains it."""
    reasons = [
        check_fit(host, shape, policy)
        or tried.get(host.node_id)
        or NoFit("race", "claimed concurrently")
        for host in pool_snapshots(session, pool.id, fleet.now())
    ]
    return explain_no_fit(reasons)


def _one_by_one(
    session: Session, fleet: PlacementHandle, pool: Pool, rows: list[dict[str, Any]]
) -> int:
    """GPU and pinned flavors: the single placement per instance, each row written before the
    next is placed (its neighbours see it); stops at the first that fits nowhere. How many fit.

    Each row becomes the object try_place takes and its values are read back from it, placed
    or not (pending with its Unschedulable reason). The instances not placed are written by the
    caller, when it keeps them pending.
    """
    for index, values in enumerate(rows):
        instance = new_row(Instance, values)
        fitted = try_place(session, fleet, instance, pool)
        rows[index] = {c: instance.__dict__[c] for c in _COLUMNS}  # new_row's: every column
        if not fitted:
            return index
        _insert_instances(session, [rows[index]])
    return len(rows)


def _at_once(
    session: Session,
    fleet: PlacementHandle,
    pool: Pool,
    shape: Shape,
    policy: PlacementPolicy | None,
    rows: list[dict[str, Any]],
    left_out: dict[str, NoFit],
) -> int:
    """Place the rows in order, as many as fit, with one claim per host; how many were placed.

    The allocations are written once every host is claimed, their ids made at once (in the
    order the rows were placed, as one id a placement would have made them)."""
    claims = shape.claims()
    by = weigher(fleet.settings.placement_strategy)
    placed = 0
    want = max(CANDIDATES_TO_SCORE, len(rows))
    for _ in range(SEARCH_ROUNDS):
        found = feasible_candidates(
            session,
            pool.id,
            claims,
            gpus=0,
            needs_label=policy is not None,
            want=want,
            now=fleet.now(),
            context=fleet.placement,
        )
        candidates = found.without(left_out).snapshots()
        plan = assign(candidates, shape, len(rows) - placed, by, policy)
        if not plan:
            break
        fleet.placement.advance_cursor(pool.id, plan[-1][0].node_id)
        before = placed
        placed = _claim_plan(session, fleet, pool, shape, policy, plan, rows, placed, left_out)
        if placed == len(rows) or (placed > before and len(found) < want):
            break
        want = 100_000  # the page did not hold enough: every feasible host of the pool
    if placed:
        now = fleet.now()
        allocation_ids = fleet.ids.new_many("alloc", now, placed)
        allocations = []
        for row, allocation_id in zip(rows, allocation_ids, strict=False):
            row["allocation_id"] = allocation_id
            allocations.append(_allocation(row, allocation_id, claims, pool.id))
        _INSERT_ALLOCATIONS.run(session, allocations)
    return placed


def _claim_plan(
    session: Session,
    fleet: PlacementHandle,
    pool: Pool,
    shape: Shape,
    policy: PlacementPolicy | None,
    plan: list[tuple[HostSnapshot, int]],
    rows: list[dict[str, Any]],
    placed: int,
    left_out: dict[str, NoFit],
) -> int:
    """One guarded claim per host of the plan, in host id order; the rows from `placed` on get
    the hosts that took them (their allocation ids come after, _at_once). How many rows are
    placed after it."""
    claims = shape.claims()
    now = fleet.now()
    ordered = sorted(plan, key=lambda item: item[0].node_id)  # two batches lock hosts alike
    # What placing sets (placed_values) depends on the chooser's placement and the row's
    # conditions alone: made once for rows placed alike, and shared by them (the chooser keeps
    # the placement of a guest alone on a host of a shared inventory; rows share their empty
    # conditions). Nothing changes these documents in place; each is dumped once.
    alike: dict[tuple[int, int], tuple[HostPlacement, dict[str, Any]]] = {}
    alone: dict[int, tuple[Inventory, HostPlacement]] = {}  # _choose's
    for host, on_host, inventory, others in _claimed(session, fleet, ordered, claims, left_out):
        mine: list[HostPlacement] = []
        for taken in range(on_host):
            try:
                placement = _choose(fleet, pool, inventory, others, mine, shape, policy, alone)
            except NotCandidate as refused:
                left_out[host.node_id] = refused.no_fit()
                return_scalars(session, host.node_id, scaled(claims, on_host - taken))
                break
            mine.append(placement)
            row = rows[placed]
            key = (id(placement), id(row["conditions"]))
            done = alike.get(key)
            if done is None:
                done = alike[key] = (placement, placed_values(row["conditions"], placement, now))
            row.update(done[1])
            row["node_id"] = host.node_id
            placed += 1
    return placed


def _choose(
    fleet: PlacementHandle,
    pool: Pool,
    inventory: Inventory,
    others: list[HostPlacement],
    mine: list[HostPlacement],
    shape: Shape,
    policy: PlacementPolicy | None,
    alone: dict[int, tuple[Inventory, HostPlacement]],
) -> HostPlacement:
    """The NUMA chooser's placement of the next guest on a host, seeing its other guests and
    the batch's earlier ones there. Its answer for a guest alone on a host depends on the
    host's inventory alone (shape, policy and pool are the batch's), so it is asked once per
    inventory (hosts reporting the same document share one) and kept in `alone`, as the
    chooser keeps it between calls."""
    if others or mine:
        return choose_on_inventory(fleet, pool, inventory, [*others, *mine], shape, policy)
    kept = alone.get(id(inventory))
    if kept is None:
        placement = choose_on_inventory(fleet, pool, inventory, [], shape, policy)
        kept = alone[id(inventory)] = (inventory, placement)
    return kept[1]


def _claimed(
    session: Session,
    fleet: PlacementHandle,
    plan: list[tuple[HostSnapshot, int]],
    claims: Mapping[str, int],
    left_out: dict[str, NoFit],
) -> list[tuple[HostSnapshot, int, Inventory, list[HostPlacement]]]:
    """Claim each host of the plan for its instances; those whose claim held, with the host's
    inventory and its other guests' placements, read after the claim. A refused host is left out.

    SQLite (writers serialized): each claim and read in turn, the candidate query's view still
    holding (a host that looked empty is). PostgreSQL: every claim sent, then the reads behind
    them, all answered in one round trip.
    """
    session.flush()  # the Core writes and reads below see what the ORM holds
    out: list[tuple[HostSnapshot, int, Inventory, list[HostPlacement]]] = []
    if is_sqlite(session.get_bind().engine):
        refused = claim_plan(session, plan, claims)
        claimed = [(host, k) for host, k in plan if host.node_id not in refused]
        parsed = inventories(session, fleet.placement, [host for host, _ in claimed])
        for node_id in refused:  # not on SQLite, whose candidate query's view holds
            left_out[node_id] = NoFit("race", "claimed concurrently")
        for host, on_host in claimed:
            inventory = parsed.get(host.node_id) or host_inventory(session, fleet, host.node_id)
            others = [] if host.holds_nothing else others_on(session, host.node_id, "")
            out.append((host, on_host, inventory, others))
        return out
    sent = [send_claim(session, host.node_id, scaled(claims, n)) for host, n in plan]
    behind = [
        ReadBehindClaim(session, fleet, host.node_id, "", host.holds_nothing) for host, _ in plan
    ]
    for (host, on_host), claim_sent, read in zip(plan, sent, behind, strict=True):
        claim = claim_sent.claim()
        inventory = read.inventory()
        if claim.refused is not None:
            left_out[host.node_id] = _lost(claim.refused)
            continue
        others = [] if claim.held_nothing else read.others()
        out.append((host, on_host, inventory, others))
    return out


def _lost(resource: str) -> NoFit:
    """A host whose claim another writer's got in first (the single placement's words)."""
    return NoFit(resource, f"{resource} claimed concurrently")


def _allocation(
    row: Mapping[str, Any], allocation_id: str, claims: Mapping[str, int], pool_id: str
) -> dict[str, Any]:
    """The allocation row of a placed instance's claims on its node."""
    return {
        "id": allocation_id,
        "node_id": row["node_id"],
        "consumer_kind": "instance",
        "consumer_id": row["id"],
        "tenant_id": row["tenant_id"],
        "pool_id": pool_id,
        "claims": claims,  # one dict for the batch's rows: none of them changes it
        "starts_at": row["created_at"],
        "ends_at": None,
        "released_at": None,
        "release_reason": None,
    }


def _insert_instances(session: Session, rows: Sequence[Mapping[str, Any]]) -> None:
    """The rows in one multi-row INSERT (one row: the single placement's statement)."""
    if not rows:
        return
    if len(rows) == 1:
        _INSERT_ONE_INSTANCE.send(session, {c: rows[0][c] for c in _COLUMNS})
    else:  # every row holds every column (new_values)
        _INSERT_INSTANCES.run(session, rows, _COLUMNS)

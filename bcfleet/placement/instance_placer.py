"""Instance placement: admit an instance, claim a host with guarded SQL, book GPU atoms, choose its CPUs.

The transaction code loads a snapshot, asks the pure deciders (fit, weighers, NUMA chooser),
writes with guarded SQL and, when a guard refuses (another writer got there first), rolls the
savepoint back and moves on to the next candidate. Nothing here reads the wall clock.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlmodel import Session

from bcfleet.domain.fit import HostSnapshot, NoFit, check_fit, explain_no_fit, weigher
from bcfleet.domain.numa import (
    HostPlacement,
    NotCandidate,
    choose_host_placement,
    degraded_condition,
)
from bcfleet.domain.shapes import Gpu, Inventory, PlacementPolicy, Shape, placement_from_json
from bcfleet.domain.states import InstanceState, PoolKind
from bcfleet.placement import gpus as gpu_atoms
from bcfleet.placement.candidate_window import WindowSearch
from bcfleet.placement.candidates import SearchAhead, feasible_candidates, pool_snapshots
from bcfleet.placement.claims import (
    BehindClaim,
    host_inventory,
    others_on,
    return_scalars,
    strategy_for,
)
from bcfleet.placement.conditions import clear_condition, set_condition
from bcfleet.placement.floating import refloat_guests
from bcfleet.placement.quotas import (
    FinishCharge,
    charged_already,
    refund,
    start_charge,
)
from bcfleet.store.driver_sql import DriverStatement
from bcfleet.store.models import Allocation, Instance, Pool
from bcfleet.store.new_rows import add_as_loaded, new_row, set_values
from bcfleet.store.stored_json import Written, written

if TYPE_CHECKING:
    from datetime import datetime

    from bcfleet.placement.handle import PlacementHandle

CANDIDATES_TO_SCORE = 16


class ShapeTexts(NamedTuple):
    """A flavor's shape and its claims as the stored texts of an instance's shape and its
    allocation's claims: written once for a flavor the catalog cache keeps."""

    shape: Written
    claims: Written


def shape_texts(shape: Mapping[str, Any], parsed: Shape) -> ShapeTexts:
    """The texts place_instance would write for `shape` (and its parse, `parsed`)."""
    return ShapeTexts(written(dict(shape)), written(parsed.claims()))


_INSERT_ALLOCATION = DriverStatement(Allocation.__table__.insert())  # type: ignore[attr-defined]
_INSERT_INSTANCE = DriverStatement(Instance.__table__.insert())  # type: ignore[attr-defined]
_COLUMNS = tuple(c.key for c in Instance.__table__.columns)  # type: ignore[attr-defined]


def place_instance(
    session: Session,
    fleet: PlacementHandle,
    *,
    tenant_id: str,
    pool: Pool,
    shape: Mapping[str, Any],
    name: str,
    flavor_id: str | None,
    purpose: str = "tenant",
    size: str | None = None,
    idempotency_key: str | None = None,
    input_hash: str | None = None,
    may_run_again: bool = False,
    join_session: bool = True,
    ahead: SearchAhead | None = None,
    window: WindowSearch | None = None,
    parsed: Shape | None = None,
    texts: ShapeTexts | None = None,
) -> Instance:
    """Admit (charge quota) and place an instance; pending with Unschedulable when nothing fits.

    may_run_again: the caller's attempt may raise RunAgainCarefully (store/faults.py), so the
    first host is claimed without a savepoint (try_place), and on PostgreSQL the quota charge
    is finished behind the claim, in its round trip, when the tenant's last charge in the pool
    was finished by its stripes alone (FinishCharge).
    join_session: the instance joins the session as a loaded row, so a change the caller makes
    to it is saved; without, it is the row as inserted, for a caller that only reads it.
    ahead: the candidate search's first page, when the caller sent it (SearchAhead).
    window: the handle's kept candidate window, when the caller armed it (WindowSearch).
    parsed: Shape.from_json(shape), when the caller has it already.
    texts: shape_texts(shape, parsed), when the caller keeps them (with `parsed`).
    """
    now = fleet.now()
    pool_id = pool.id  # read once: an ORM attribute is a Python call
    instance = new_row(
        Instance,
        {
            "id": fleet.new_id("ins"),
            "tenant_id": tenant_id,
            "pool_id": pool_id,
            "flavor_id": flavor_id,
            "name": name,
            "state": InstanceState.PENDING,
            "shape": dict(shape),
            "purpose": purpose,
            "size": size,
            "created_at": now,
            "updated_at": now,
            "idempotency_key": idempotency_key,
            "input_hash": input_hash,
        },
    )
    # Finished before the first claim (quota rows come first in the lock order); on PostgreSQL
    # its answer comes with the candidate search's.
    # A charge expected on the stripes alone, finished behind the claim, is sent guarded: its
    # answer need not be read before the claim's round trip commits (start_charge).
    wanted = Shape.from_json(shape) if parsed is None else parsed
    hosted = pool.kind != PoolKind.PROVIDER
    behind_claim = hosted and fleet.placement.charges_striped(tenant_id, pool_id)
    finish_charge = start_charge(
        session,
        tenant_id,
        pool_id,
        wanted.quota_charge(),
        guarded=behind_claim and may_run_again and not wanted.gpus,
    )
    # The row's documents written as text already: the kept shape's, and the claim's.
    written: dict[str, Written] = {} if texts is None else {"shape": texts.shape}
    if not hosted:
        instance.state = InstanceState.PROVISIONING  # the providers.reconcile job makes the server
    else:
        try_place(
            session,
            fleet,
            instance,
            pool,
            may_run_again=may_run_again,
            before_claim=finish_charge,
            charge_behind_claim=behind_claim,
            ahead=ahead,
            shape=wanted,
            window=window,
            written=written,
            claims_text=None if texts is None else texts.claims,
        )
    fleet.placement.remember_charge(tenant_id, pool_id, finish_charge())
    # One INSERT with the outcome, then the object joins the session as a loaded row.
    values = instance.__dict__  # new_row's: every column, nothing to load (fresh_values)
    _INSERT_INSTANCE.send(session, {**{c: values[c] for c in _COLUMNS}, **written})
    return add_as_loaded(session, instance) if join_session else instance


def try_place(
    session: Session,
    fleet: PlacementHandle,
    instance: Instance,
    pool: Pool,
    *,
    may_run_again: bool = False,
    before_claim: FinishCharge = charged_already,
    charge_behind_claim: bool = False,
    ahead: SearchAhead | None = None,
    shape: Shape | None = None,
    window: WindowSearch | None = None,
    written: dict[str, Written] | None = None,
    claims_text: Written | None = None,
) -> bool:
    """Place a pending hosted instance; on failure keep it pending with a counted Unschedulable reason.

    may_run_again (PostgreSQL): claim without a savepoint, and when a claim is refused or the
    host turns out not to fit, raise RunAgainCarefully rather than move on holding the refused
    host's row locks (_claim_on). before_claim is the charge to finish before the first claim,
    or with charge_behind_claim behind it where _claim_on may (FinishCharge).
    ahead: the first page of the search, when it was sent before (SearchAhead).
    shape: the instance's shape when the caller has it parsed already (else read from it).
    window: the kept candidate window of a plain search's first round (WindowSearch).
    written: takes the host placement's stored text (stored_json.Written), for a caller that
    inserts the instance's row itself (place_instance): its document is then not written twice.
    claims_text: the shape's claims as their stored text (ShapeTexts), for the allocation.
    """
    if shape is None:
        shape = Shape.from_json(instance.shape)
    policy = placement_from_json(instance.shape.get("placement"))
    now = fleet.now()
    strategy = weigher(fleet.settings.placement_strategy)
    tried: dict[str, NoFit] = {}
    claims = shape.claims()
    for want in (CANDIDATES_TO_SCORE, 100_000):
        candidates = feasible_candidates(
            session,
            pool.id,
            claims,
            gpus=shape.gpus,
            needs_label=policy is not None,
            want=want,
            now=now,
            context=fleet.placement,
            ahead=ahead,
            window=window,
        ).without(tried)
        for host in candidates.ranked(strategy):
            outcome = _claim_on(
                session,
                fleet,
                instance,
                pool,
                host,
                shape,
                policy,
                may_run_again=may_run_again,
                finish_charge=before_claim,
                charge_behind_claim=charge_behind_claim,
                nearby=candidates.generations(),
                claims=claims,
                written=written,
                claims_text=claims_text,
            )
            if outcome is None:
                fleet.placement.advance_cursor(pool.id, host.node_id)
                if window is not None and not tried:
                    window.claimed(session, host.node_id)
                return True
            tried[host.node_id] = outcome
        if not candidates or len(candidates) < want:
            break
    _mark_unschedulable(session, fleet, instance, pool, shape, policy, tried)
    return False


def _mark_unschedulable(
    session: Session,
    fleet: PlacementHandle,
    instance: Instance,
    pool: Pool,
    shape: Shape,
    policy: PlacementPolicy | None,
    tried: Mapping[str, NoFit],
) -> None:
    reasons: list[NoFit] = []
    for host in pool_snapshots(session, pool.id, fleet.now()):
        found = check_fit(host, shape, policy)
        reasons.append(found or tried.get(host.node_id) or NoFit("race", "claimed concurrently"))
    message = explain_no_fit(reasons)
    instance.state = InstanceState.PENDING
    instance.conditions = set_condition(
        instance.conditions, "Unschedulable", reason="NoHostFits", message=message, at=fleet.now()
    )
    instance.updated_at = fleet.now()


def _claim_on(
    session: Session,
    fleet: PlacementHandle,
    instance: Instance,
    pool: Pool,
    host: HostSnapshot,
    shape: Shape,
    policy: PlacementPolicy | None,
    *,
    may_run_again: bool = False,
    finish_charge: FinishCharge = charged_already,
    charge_behind_claim: bool = False,
    nearby: Iterable[tuple[str, int | None]] = (),
    claims: Mapping[str, int] | None = None,
    written: dict[str, Written] | None = None,
    claims_text: Written | None = None,
) -> NoFit | None:
    """Claim one host; a NoFit (and nothing written) when it cannot take the guest.

    How the claim is taken, and a refused or unfit host let go, is the engine's strategy
    (placement/claims.py): on PostgreSQL a placement moving on to the next host holds no lock
    on the last one, so two placements trying the same hosts in different orders never wait
    on each other in a cycle.
    `nearby`: the other candidates' node ids and inventory generations; `claims`: the shape's,
    when the caller has them already; `written` (try_place's) takes the host placement's text;
    `claims_text`, the claims' stored text, is written for the allocation's when given.
    """
    now = fleet.now()
    if claims is None:
        claims = shape.claims()
    instance_id = instance.id  # read once: an ORM attribute is a Python call
    strategy = strategy_for(session)
    taken = strategy.take(
        session,
        fleet,
        host,
        claims,
        instance_id,
        gpus=bool(shape.gpus),
        may_run_again=may_run_again,
        finish_charge=finish_charge,
        charge_behind_claim=charge_behind_claim,
        nearby=nearby,
    )
    failed = taken.claim.refused
    if failed is not None:
        strategy.refused(taken)
        return NoFit(failed, f"{failed} claimed concurrently")
    atoms = _take_atoms(session, host.node_id, shape.gpus, policy, now)
    if atoms is None:  # GPUs are wanted: the claim ran in a savepoint, on either engine
        strategy.refused(taken)
        return NoFit("gpu", f"0 of {shape.gpus} gpu free")
    try:
        placement = choose_placement(
            session,
            fleet,
            pool,
            host.node_id,
            shape,
            policy,
            atoms,
            instance_id,
            inventory_generation=host.inventory_generation,
            alone=taken.alone,
            read=taken.behind,
        )
    except NotCandidate as refused:
        strategy.unfit(taken)
        return refused.no_fit()
    allocation_id = fleet.new_id("alloc")
    _INSERT_ALLOCATION.send(
        session,
        {
            "id": allocation_id,
            "node_id": host.node_id,
            "consumer_kind": "instance",
            "consumer_id": instance_id,
            "tenant_id": instance.tenant_id,
            "pool_id": pool.id,
            "claims": claims if claims_text is None else claims_text,
            "starts_at": now,
            "ends_at": None,
            "released_at": None,
            "release_reason": None,
        },
    )
    if atoms:
        gpu_atoms.book(
            session,
            fleet.ids,
            atoms,
            consumer_kind="instance",
            consumer_id=instance_id,
            tenant_id=instance.tenant_id,
            start=now,
            end=None,
            at=now,
        )
    _record_placement(instance, host.node_id, allocation_id, placement, fleet)
    if written is not None:
        written["host_placement"] = fleet.placement.placement_text(placement)
    if placement.pinned and not taken.alone:
        refloat_guests(
            session, fleet, pool, host.node_id, guest_id=instance_id, placement=placement
        )
    if taken.savepoint is not None:
        taken.savepoint.release()
    return None


def _take_atoms(
    session: Session, node_id: str, count: int, policy: PlacementPolicy | None, now: Any
) -> list[gpu_atoms.AtomRef] | None:
    """Lock and re-check `count` free atoms, all on one NUMA node when the flavor is numaAffine."""
    if count == 0:
        return []
    free = gpu_atoms.free_atoms(session, node_id, now, None, lock=True)
    chosen = choose_atoms(free, count, numa_affine=bool(policy and policy.numa_affine))
    if chosen is None:
        return None
    ids = [a.id for a in chosen]
    gpu_atoms.lock_atoms(session, ids)
    return chosen if gpu_atoms.still_free(session, ids, now, None) else None


def choose_atoms(
    free: Sequence[gpu_atoms.AtomRef], count: int, *, numa_affine: bool
) -> list[gpu_atoms.AtomRef] | None:
    """Which free atoms to take: for numaAffine guests the NUMA node with the most free atoms first."""
    if len(free) < count:
        return None
    if numa_affine:
        by_node: dict[int | None, list[gpu_atoms.AtomRef]] = {}
        for atom in free:
            by_node.setdefault(atom.numa_node, []).append(atom)
        best = max(by_node.values(), key=len)
        if len(best) >= count:
            return best[:count]
    return list(free[:count])


def choose_placement(
    session: Session,
    fleet: PlacementHandle,
    pool: Pool,
    node_id: str,
    shape: Shape,
    policy: PlacementPolicy | None,
    atoms: Sequence[gpu_atoms.AtomRef],
    instance_id: str,
    *,
    inventory_generation: int | None = None,
    alone: bool = False,
    read: BehindClaim | None = None,
) -> HostPlacement:
    """The NUMA chooser over this host's inventory and its other guests' placements.

    `alone`: the caller knows the host has no other guest (their placements are not read).
    `read`: the inventory and placements sent behind the claim, when they were.
    """
    if read is not None:
        inventory = read.inventory()
        others = [] if alone else read.others()
    else:
        inventory = host_inventory(session, fleet, node_id, inventory_generation)
        others = [] if alone else others_on(session, node_id, instance_id)
    return choose_on_inventory(fleet, pool, inventory, others, shape, policy, atoms)


def choose_on_inventory(
    fleet: PlacementHandle,
    pool: Pool,
    inventory: Inventory,
    others: Sequence[HostPlacement],
    shape: Shape,
    policy: PlacementPolicy | None,
    atoms: Sequence[gpu_atoms.AtomRef] = (),
) -> HostPlacement:
    """choose_placement once the host's inventory and its other guests' placements are read
    (a batch passes the guests it placed on the host before this one among `others`)."""
    reserve = fleet.settings.host_reserve.with_overrides(pool.host_reserve).vcpu
    memory_ratio = pool.overcommit.get("memoryGiB", 1.0)
    if others or atoms:
        return choose_host_placement(
            inventory,
            shape,
            policy,
            gpus=[Gpu(a.model, a.pci_address, a.numa_node) for a in atoms],
            others=others,
            reserve_vcpu=reserve,
            memory_ratio=memory_ratio,
        )
    # Alone on the host and without GPUs, the pure chooser's answer depends on these inputs
    # only: kept for the next guest alone on a host of the same (shared) inventory.
    key = (shape, policy, reserve, memory_ratio)
    placement = fleet.placement.alone_placement(inventory, key)
    if placement is None:
        placement = choose_host_placement(
            inventory, shape, policy, reserve_vcpu=reserve, memory_ratio=memory_ratio
        )
        fleet.placement.keep_alone_placement(inventory, key, placement)
    return placement


def _record_placement(
    instance: Instance,
    node_id: str,
    allocation_id: str,
    placement: HostPlacement,
    fleet: PlacementHandle,
) -> None:
    values = placed_values(instance.conditions, placement, fleet.now())
    set_values(instance, {"node_id": node_id, "allocation_id": allocation_id, **values})


def placed_values(
    conditions: list[dict[str, Any]], placement: HostPlacement, now: datetime
) -> dict[str, Any]:
    """What placing an instance sets besides its node and allocation: its host placement, the
    running state and time, and its conditions (from `conditions`) without Unschedulable, with
    PlacementDegraded when the chooser's placement is degraded. A batch's guests placed alike
    share one answer (placement/batch_placer.py)."""
    conditions = clear_condition(conditions, "Unschedulable") if conditions else []
    degraded = degraded_condition(placement)
    if degraded is not None:
        conditions = set_condition(
            conditions,
            "PlacementDegraded",
            reason=degraded["reason"],
            message=degraded["message"],
            at=now,
        )
    elif conditions:  # none (a new instance's): nothing to clear
        conditions = clear_condition(conditions, "PlacementDegraded")
    return {
        "host_placement": placement.to_json(),
        "state": InstanceState.RUNNING,
        "updated_at": now,
        "conditions": conditions,
    }


def release_instance(
    session: Session, fleet: PlacementHandle, instance: Instance, *, reason: str
) -> None:
    """Release the allocation and GPU atoms, refund quota, mark the instance deleted (times kept for metering)."""
    now = fleet.now()
    if instance.state != InstanceState.DELETED:  # quota rows before node rows: the one lock order
        refund(
            session,
            instance.tenant_id,
            instance.pool_id,
            Shape.from_json(instance.shape).quota_charge(),
        )
    if instance.allocation_id is not None:
        allocation = session.get(Allocation, instance.allocation_id)
        if allocation is not None and allocation.released_at is None:
            return_scalars(session, allocation.node_id, allocation.claims)
            allocation.released_at = now
            allocation.ends_at = now
            allocation.release_reason = reason
            session.add(allocation)
    gpu_atoms.release_bookings(session, instance.id, now)
    _give_back_pinned_cpus(session, fleet, instance)
    instance.state = InstanceState.DELETED
    instance.deleted_at = now
    instance.updated_at = now
    session.add(instance)


def _give_back_pinned_cpus(session: Session, fleet: PlacementHandle, instance: Instance) -> None:
    """A live pinned guest leaving its host gives its CPUs back to the floating guests there."""
    placement = instance.host_placement or {}
    if instance.state == InstanceState.DELETED or instance.node_id is None:
        return
    if not placement.get("cpus"):
        return
    pool = session.get(Pool, instance.pool_id)
    if pool is not None:
        refloat_guests(session, fleet, pool, instance.node_id, guest_id=instance.id, placement=None)

"""Instance placement: admit an instance, claim a host with guarded SQL, book GPU atoms, choose its CPUs.

The transaction code loads a snapshot, asks the pure deciders (fit, weighers, NUMA chooser),
writes with guarded SQL and, when a guard refuses (another writer got there first), rolls the
savepoint back and moves on to the next candidate. Nothing here reads the wall clock.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, column, text
from sqlmodel import Session

from bcfleet.domain.fit import HostSnapshot, NoFit, check_fit, explain_no_fit, rank, weigher
from bcfleet.domain.numa import (
    HostPlacement,
    NotCandidate,
    choose_host_placement,
    degraded_condition,
)
from bcfleet.domain.scalars import SCALARS
from bcfleet.domain.shapes import Gpu, Inventory, PlacementPolicy, Shape, placement_from_json
from bcfleet.domain.states import INSTANCE_LIVE, InstanceState, PoolKind
from bcfleet.placement import gpus as gpu_atoms
from bcfleet.placement.candidates import SearchAhead, feasible_hosts, pool_snapshots
from bcfleet.placement.conditions import clear_condition, set_condition
from bcfleet.placement.floating import refloat_guests
from bcfleet.placement.quotas import (
    FinishCharge,
    charged_already,
    refund,
    start_charge,
)
from bcfleet.store.driver_sql import DriverStatement, SentRows
from bcfleet.store.engine import is_sqlite
from bcfleet.store.faults import RunAgainCarefully
from bcfleet.store.models import Allocation, Instance, Pool
from bcfleet.store.new_rows import add_as_loaded, new_row
from bcfleet.store.uow import CoreSavepoint

if TYPE_CHECKING:
    from bcfleet.fleet import Fleet

CANDIDATES_TO_SCORE = 16
_INSERT_ALLOCATION = DriverStatement(Allocation.__table__.insert())  # type: ignore[attr-defined]
_INSERT_INSTANCE = DriverStatement(Instance.__table__.insert())  # type: ignore[attr-defined]
_COLUMNS = tuple(c.key for c in Instance.__table__.columns)  # type: ignore[attr-defined]


def place_instance(
    session: Session,
    fleet: Fleet,
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
) -> Instance:
    """Admit (charge quota) and place an instance; pending with Unschedulable when nothing fits.

    may_run_again: the caller's attempt may raise RunAgainCarefully (store/faults.py), so the
    first host is claimed without a savepoint (try_place), and on PostgreSQL the quota charge
    is finished behind the claim, in its round trip, when the tenant's last charge in the pool
    was finished by its stripes alone (FinishCharge).
    join_session: the instance joins the session as a loaded row, so a change the caller makes
    to it is saved; without, it is the row as inserted, for a caller that only reads it.
    ahead: the candidate search's first page, when the caller sent it (SearchAhead).
    """
    now = fleet.now()
    instance = new_row(
        Instance,
        {
            "id": fleet.new_id("ins"),
            "tenant_id": tenant_id,
            "pool_id": pool.id,
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
    finish_charge = start_charge(session, tenant_id, pool.id, Shape.from_json(shape).quota_charge())
    if pool.kind == PoolKind.PROVIDER:
        instance.state = InstanceState.PROVISIONING  # the providers.reconcile job makes the server
    else:
        try_place(
            session,
            fleet,
            instance,
            pool,
            may_run_again=may_run_again,
            before_claim=finish_charge,
            charge_behind_claim=fleet.placement.charges_striped(tenant_id, pool.id),
            ahead=ahead,
        )
    fleet.placement.remember_charge(tenant_id, pool.id, finish_charge())
    # One INSERT with the outcome, then the object joins the session as a loaded row.
    _INSERT_INSTANCE.send(session, {c: getattr(instance, c) for c in _COLUMNS})
    return add_as_loaded(session, instance) if join_session else instance


def try_place(
    session: Session,
    fleet: Fleet,
    instance: Instance,
    pool: Pool,
    *,
    may_run_again: bool = False,
    before_claim: FinishCharge = charged_already,
    charge_behind_claim: bool = False,
    ahead: SearchAhead | None = None,
) -> bool:
    """Place a pending hosted instance; on failure keep it pending with a counted Unschedulable reason.

    may_run_again (PostgreSQL): claim without a savepoint, and when a claim is refused or the
    host turns out not to fit, raise RunAgainCarefully rather than move on holding the refused
    host's row locks (_claim_on). before_claim is the charge to finish before the first claim,
    or with charge_behind_claim behind it where _claim_on may (FinishCharge).
    ahead: the first page of the search, when it was sent before (SearchAhead).
    """
    shape = Shape.from_json(instance.shape)
    policy = placement_from_json(instance.shape.get("placement"))
    now = fleet.now()
    strategy = weigher(fleet.settings.placement_strategy)
    tried: dict[str, NoFit] = {}
    for want in (CANDIDATES_TO_SCORE, 100_000):
        candidates = [
            h
            for h in feasible_hosts(
                session,
                pool.id,
                shape.claims(),
                gpus=shape.gpus,
                needs_label=policy is not None,
                want=want,
                now=now,
                context=fleet.placement,
                ahead=ahead,
            )
            if h.node_id not in tried
        ]
        for host in rank(candidates, strategy):
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
            )
            if outcome is None:
                fleet.placement.advance_cursor(pool.id, host.node_id)
                return True
            tried[host.node_id] = outcome
        if not candidates or len(candidates) < want:
            break
    _mark_unschedulable(session, fleet, instance, pool, shape, policy, tried)
    return False


def _mark_unschedulable(
    session: Session,
    fleet: Fleet,
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


# All of a node's scalar claims in one guarded statement (SQLite, whose writers are serialized):
# every row is updated, or none is when any of them would go over its capacity.
_CLAIM_ALL = DriverStatement(
    text(
        "UPDATE node_resources SET allocated = allocated + CASE resource "
        "WHEN 'vcpu' THEN :vcpu WHEN 'memoryGiB' THEN :mem ELSE :disk END, "
        "generation = generation + 1 "
        "WHERE node_id = :node AND resource IN ('vcpu', 'memoryGiB', 'diskGiB') "
        "AND NOT EXISTS (SELECT 1 FROM node_resources o WHERE o.node_id = :node AND "
        "o.resource IN ('vcpu', 'memoryGiB', 'diskGiB') AND o.allocated + CASE o.resource "
        "WHEN 'vcpu' THEN :vcpu WHEN 'memoryGiB' THEN :mem ELSE :disk END > o.capacity)"
    )
)


_CLAIM_ONE = text(
    "UPDATE node_resources SET allocated = allocated + :n, generation = generation + 1 "
    "WHERE node_id = :node AND resource = :r AND allocated + :n <= capacity"
)

# PostgreSQL: the node's rows locked in the lock order (vcpu, memoryGiB, diskGiB) by the CTE,
# then each claimed under its own guard, re-checked on the row's newest version; the rows
# returned are the ones claimed.
_CLAIM_LOCKED = DriverStatement(
    text(
        "WITH wanted (resource, n, rank) AS (VALUES ('vcpu', :vcpu, 0), ('memoryGiB', :mem, 1), "
        "('diskGiB', :disk, 2)), "
        "locked AS MATERIALIZED (SELECT r.resource FROM node_resources r "
        "JOIN wanted w ON w.resource = r.resource WHERE r.node_id = :node AND w.n > 0 "
        "ORDER BY w.rank FOR UPDATE OF r) "
        "UPDATE node_resources SET allocated = allocated + w.n, generation = generation + 1 "
        "FROM wanted w JOIN locked l ON l.resource = w.resource "
        "WHERE node_resources.node_id = :node AND node_resources.resource = w.resource "
        "AND node_resources.allocated + w.n <= node_resources.capacity "
        "RETURNING node_resources.resource, node_resources.allocated - w.n"
    )
)


@dataclass(frozen=True)
class Claim:
    """What a claim on one host did.

    `refused`: the first resource whose guard refused (and nothing is claimed), or None.
    `held_nothing`: every scalar row had nothing allocated before the claim, read under the
    row locks the claim took, so no other guest is on the host (PostgreSQL; False on SQLite,
    whose callers know it from the candidate query of the same write transaction).
    """

    refused: str | None
    held_nothing: bool = False


def claim_scalars(session: Session, node_id: str, claims: Mapping[str, int]) -> str | None:
    """Guarded claims on one node: the first resource whose guard refused, or None (claim_host)."""
    return claim_host(session, node_id, claims).refused


def claim_host(session: Session, node_id: str, claims: Mapping[str, int]) -> Claim:
    """Guarded claims on one node (vcpu first: placements on a host take turns on its vcpu row).

    Each engine claims in one statement: on SQLite every row or none; on PostgreSQL the rows
    are locked in the lock order and those taken are given back when another refused.
    """
    if not is_sqlite(session.get_bind().engine):
        return send_claim(session, node_id, claims).claim()
    wanted = _wanted(claims)
    if not wanted:
        return Claim(None)
    params = _claim_params(node_id, wanted)
    if len(wanted) == len(SCALARS):
        if _CLAIM_ALL.run(session, params).rowcount == len(SCALARS):
            return Claim(None)
        return Claim(_refusing_resource(session, node_id, claims))
    return Claim(_claim_each(session, node_id, wanted))


def _wanted(claims: Mapping[str, int]) -> dict[str, int]:
    return {r: int(claims.get(r, 0)) for r in SCALARS if int(claims.get(r, 0)) > 0}


def _claim_params(node_id: str, wanted: Mapping[str, int]) -> dict[str, Any]:
    return {
        "node": node_id,
        "vcpu": wanted.get("vcpu", 0),
        "mem": wanted.get("memoryGiB", 0),
        "disk": wanted.get("diskGiB", 0),
    }


class SentClaim:
    """A claim sent on PostgreSQL (claim_host's statement), its outcome read by claim().

    Statements sent after it and before claim() go to the server in its round trip, and run
    after it: under the row locks it took.
    """

    def __init__(self, session: Session, node_id: str, wanted: dict[str, int]) -> None:
        self._session, self._node_id, self._wanted = session, node_id, wanted
        self._rows = (
            _CLAIM_LOCKED.send_reading(session, _claim_params(node_id, wanted)) if wanted else None
        )

    def claim(self) -> Claim:
        """What claim_host answers: the claim, or the refusing resource with nothing kept."""
        if self._rows is None:
            return Claim(None)
        wanted = self._wanted
        before = {str(resource): int(allocated) for resource, allocated in self._rows.rows().all()}
        if len(before) == len(wanted):
            held_nothing = len(before) == len(SCALARS) and not any(before.values())
            return Claim(None, held_nothing)
        return_scalars(
            self._session, self._node_id, {r: n for r, n in wanted.items() if r in before}
        )
        return Claim(next(r for r in SCALARS if r in wanted and r not in before))


def send_claim(session: Session, node_id: str, claims: Mapping[str, int]) -> SentClaim:
    """claim_host on PostgreSQL, sent now and read by SentClaim.claim()."""
    return SentClaim(session, node_id, _wanted(claims))


def _claim_each(session: Session, node_id: str, wanted: Mapping[str, int]) -> str | None:
    """One guarded UPDATE per row in the lock order, the rows taken given back when one refuses."""
    taken: dict[str, int] = {}
    for resource, amount in wanted.items():
        updated = session.connection().execute(
            _CLAIM_ONE, {"n": amount, "node": node_id, "r": resource}
        )
        if updated.rowcount == 0:
            return_scalars(session, node_id, taken)  # all or nothing
            return resource
        taken[resource] = amount
    return None


def _refusing_resource(session: Session, node_id: str, claims: Mapping[str, int]) -> str:
    """The first scalar (in claim order) whose row cannot take its claim."""
    rows = dict(
        session.execute(
            text("SELECT resource, capacity - allocated FROM node_resources WHERE node_id = :n"),
            {"n": node_id},
        ).all()
    )
    for resource in SCALARS:
        if int(claims.get(resource, 0)) > int(rows.get(resource, 0)):
            return resource
    return SCALARS[0]


def lock_node_rows(session: Session, node_id: str) -> None:
    """Lock a node's rows in the order claims take them (PostgreSQL; SQLite writers are serialized)."""
    if is_sqlite(session.get_bind().engine):
        return
    for resource in SCALARS:
        session.execute(
            text(
                "SELECT allocated FROM node_resources WHERE node_id = :n AND resource = :r FOR UPDATE"
            ),
            {"n": node_id, "r": resource},
        )


def return_scalars(session: Session, node_id: str, claims: Mapping[str, int]) -> None:
    """Give claims back to a node's rows (never below zero)."""
    for resource in SCALARS:
        amount = int(claims.get(resource, 0))
        if amount > 0:
            session.execute(
                text(
                    "UPDATE node_resources SET allocated = CASE WHEN allocated >= :n THEN allocated - :n "
                    "ELSE 0 END, generation = generation + 1 WHERE node_id = :node AND resource = :r"
                ),
                {"n": amount, "node": node_id, "r": resource},
            )


def _claim_on(
    session: Session,
    fleet: Fleet,
    instance: Instance,
    pool: Pool,
    host: HostSnapshot,
    shape: Shape,
    policy: PlacementPolicy | None,
    *,
    may_run_again: bool = False,
    finish_charge: FinishCharge = charged_already,
    charge_behind_claim: bool = False,
) -> NoFit | None:
    """Claim one host; a NoFit (and nothing written) when it cannot take the guest.

    finish_charge runs before anything is claimed or a savepoint taken, or, with
    charge_behind_claim on the path that sends the claim without a savepoint, behind the claim
    and in its round trip (FinishCharge).

    On PostgreSQL, and for a guest with GPUs, the claim runs inside a savepoint (claims,
    atom locks, bookings) whose rollback also lets go of the row locks a refused claim took:
    a placement moving on to the next host holds no lock on the last one, so two placements
    trying the same hosts in different orders never wait on each other in a cycle. On
    SQLite, whose writers are serialized, a guest without GPUs skips the savepoint's round
    trips: its claim is the only write before the allocation and all or nothing by itself.
    On PostgreSQL with may_run_again, a guest without GPUs skips them too: a refusal then
    raises RunAgainCarefully, and the whole transaction (locks, claims, quota charge) is
    rolled back before the call runs again with savepoints, so no lock is held while another
    host is tried.
    """
    now = fleet.now()
    claims = shape.claims()
    sqlite = is_sqlite(session.get_bind().engine)
    # SQLite has no round trips; GPU atoms are locked before the reads. Otherwise the host's
    # inventory (and guests, unless it looked empty) are read in the claim's round trip.
    sends_claim = not sqlite and not shape.gpus
    # No savepoint on SQLite (its claim is all or nothing) nor on a first run that may run again.
    bare = sqlite or may_run_again
    charge_after_send = charge_behind_claim and bare and sends_claim
    if not charge_after_send:
        finish_charge()  # before the savepoint: a rollback to it keeps the charge
    savepoint = None if bare and not shape.gpus else CoreSavepoint(session)
    if savepoint is None:
        session.flush()  # the Core writes below and others_on see what the ORM holds
    behind: _ReadBehindClaim | None = None
    if not sends_claim:
        claim = claim_host(session, host.node_id, claims)
    else:
        sent = send_claim(session, host.node_id, claims)
        behind = _ReadBehindClaim(session, fleet, host.node_id, instance.id, host.holds_nothing)
        if charge_after_send:
            finish_charge(behind_claim=True)
        claim = sent.claim()
    failed = claim.refused
    if failed is not None:
        if savepoint is not None:
            savepoint.rollback()
        elif not sqlite:
            raise RunAgainCarefully  # this host's row locks are held: start over, careful
        return NoFit(failed, f"{failed} claimed concurrently")
    # No other guest on the host, so none of their placements to read. SQLite: the candidate
    # query read the host in this write transaction, which no other writer can interleave with.
    alone = host.holds_nothing if sqlite else claim.held_nothing
    atoms = _take_atoms(session, host.node_id, shape.gpus, policy, now)
    if atoms is None:
        assert savepoint is not None  # no atoms are wanted without GPUs
        savepoint.rollback()
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
            instance.id,
            inventory_generation=host.inventory_generation,
            alone=alone,
            read=behind,
        )
    except NotCandidate as refused:
        if savepoint is not None:
            savepoint.rollback()
        elif not sqlite:
            raise RunAgainCarefully from None  # as a refused claim: no locks kept, start over
        else:
            return_scalars(session, host.node_id, claims)
        return refused.no_fit()
    allocation_id = fleet.new_id("alloc")
    _INSERT_ALLOCATION.send(
        session,
        {
            "id": allocation_id,
            "node_id": host.node_id,
            "consumer_kind": "instance",
            "consumer_id": instance.id,
            "tenant_id": instance.tenant_id,
            "pool_id": pool.id,
            "claims": claims,
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
            consumer_id=instance.id,
            tenant_id=instance.tenant_id,
            start=now,
            end=None,
            at=now,
        )
    _record_placement(instance, host.node_id, allocation_id, placement, fleet)
    if placement.pinned and not alone:
        refloat_guests(
            session, fleet, pool, host.node_id, guest_id=instance.id, placement=placement
        )
    if savepoint is not None:
        savepoint.release()
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


_LIVE_IN = ", ".join(f"'{state.value}'" for state in INSTANCE_LIVE)
_OTHERS_ON = DriverStatement(
    text(
        "SELECT host_placement FROM instances WHERE node_id = :node AND id != :exclude "
        f"AND state IN ({_LIVE_IN}) AND host_placement IS NOT NULL"
    ).columns(column("host_placement", JSON))
)


def others_on(session: Session, node_id: str, exclude: str) -> list[HostPlacement]:
    """The placements of the host's other live guests (read after the vcpu row was claimed).

    Read on the driver's cursor: callers have flushed the session (CoreSavepoint does,
    resize's ORM reads do).
    """
    return _placements(_OTHERS_ON.run(session, {"node": node_id, "exclude": exclude}).scalars())


def _placements(docs: Sequence[Any]) -> list[HostPlacement]:
    return [HostPlacement.from_json(doc) for doc in docs if doc]


class _ReadBehindClaim:
    """What choose_placement reads, sent behind a claim (PostgreSQL, a guest without GPUs):
    the host's inventory, and its other guests' placements unless the candidate query found it
    empty. They run after the claim, under its row locks, and are answered in its round trip.
    A host that had guests after all (the claim says so) has them read then.
    """

    def __init__(
        self, session: Session, fleet: Fleet, node_id: str, exclude: str, looked_empty: bool
    ) -> None:
        self._session, self._fleet, self._node_id, self._exclude = session, fleet, node_id, exclude
        self._kept = fleet.placement.kept_inventory(node_id)
        self._inventory = _send_inventory_read(session, node_id, self._kept)
        self._others = (
            None
            if looked_empty
            else _OTHERS_ON.send_reading(session, {"node": node_id, "exclude": exclude})
        )

    def inventory(self) -> Inventory:
        return _inventory_read(self._fleet, self._node_id, self._kept, self._inventory)

    def others(self) -> list[HostPlacement]:
        if self._others is None:
            return others_on(self._session, self._node_id, self._exclude)
        return _placements(self._others.rows().scalars())


def choose_placement(
    session: Session,
    fleet: Fleet,
    pool: Pool,
    node_id: str,
    shape: Shape,
    policy: PlacementPolicy | None,
    atoms: Sequence[gpu_atoms.AtomRef],
    instance_id: str,
    *,
    inventory_generation: int | None = None,
    alone: bool = False,
    read: _ReadBehindClaim | None = None,
) -> HostPlacement:
    """The NUMA chooser over this host's inventory and its other guests' placements.

    `alone`: the caller knows the host has no other guest (their placements are not read).
    `read`: the inventory and placements sent behind the claim, when they were.
    """
    reserve = fleet.settings.host_reserve.with_overrides(pool.host_reserve).vcpu
    if read is not None:
        inventory = read.inventory()
        others = [] if alone else read.others()
    else:
        inventory = host_inventory(session, fleet, node_id, inventory_generation)
        others = [] if alone else others_on(session, node_id, instance_id)
    return choose_host_placement(
        inventory,
        shape,
        policy,
        gpus=[Gpu(a.model, a.pci_address, a.numa_node) for a in atoms],
        others=others,
        reserve_vcpu=reserve,
        memory_ratio=pool.overcommit.get("memoryGiB", 1.0),
    )


# The document as text, unless the kept copy is of the current generation: hosts of one hardware
# model report the same inventory, and share one parsed copy (keyed by the text).
_INVENTORY_UNLESS_KEPT = DriverStatement(
    text(
        "SELECT inventory_generation, CASE WHEN inventory_generation = :kept THEN NULL "
        "ELSE CAST(inventory AS TEXT) END FROM hosts WHERE id = :n"
    )
)


def host_inventory(
    session: Session, fleet: Fleet, node_id: str, known_generation: int | None = None
) -> Inventory:
    """The host's parsed inventory, kept in the fleet's placement context by its generation.

    known_generation is the one this transaction's candidate query read; SQLite serializes
    writers, so it still holds. On PostgreSQL the generation is read again after the claim
    (with the document in the same statement when the kept copy is older).
    """
    kept = fleet.placement.kept_inventory(node_id)
    if kept is not None and known_generation == kept[0] and is_sqlite(session.get_bind().engine):
        return kept[1]
    return _inventory_read(fleet, node_id, kept, _send_inventory_read(session, node_id, kept))


def _send_inventory_read(
    session: Session, node_id: str, kept: tuple[int, Inventory] | None
) -> SentRows:
    params = {"n": node_id, "kept": kept[0] if kept is not None else -1}
    return _INVENTORY_UNLESS_KEPT.send_reading(session, params)


def _inventory_read(
    fleet: Fleet, node_id: str, kept: tuple[int, Inventory] | None, sent: SentRows
) -> Inventory:
    """The inventory _send_inventory_read asked for: the kept copy when it is current."""
    generation, document = sent.rows().one()
    if document is None and kept is not None and kept[0] == generation:
        return kept[1]
    assert document is not None
    inventory = fleet.placement.inventory_of_document(document)
    if inventory is None:
        # Validated when it was reported (the inventory schema) and by vps.hosts before the
        # host had any capacity rows, so it is built here without checking it again.
        inventory = Inventory.from_stored(json.loads(document))
    fleet.placement.keep_inventory(node_id, int(generation), document, inventory)
    return inventory


def _record_placement(
    instance: Instance, node_id: str, allocation_id: str, placement: HostPlacement, fleet: Fleet
) -> None:
    now = fleet.now()
    instance.node_id = node_id
    instance.allocation_id = allocation_id
    instance.host_placement = placement.to_json()
    instance.state = InstanceState.RUNNING
    instance.updated_at = now
    conditions = clear_condition(instance.conditions, "Unschedulable")
    degraded = degraded_condition(placement)
    if degraded is not None:
        conditions = set_condition(
            conditions,
            "PlacementDegraded",
            reason=degraded["reason"],
            message=degraded["message"],
            at=now,
        )
    else:
        conditions = clear_condition(conditions, "PlacementDegraded")
    instance.conditions = conditions


def release_instance(session: Session, fleet: Fleet, instance: Instance, *, reason: str) -> None:
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


def _give_back_pinned_cpus(session: Session, fleet: Fleet, instance: Instance) -> None:
    """A live pinned guest leaving its host gives its CPUs back to the floating guests there."""
    placement = instance.host_placement or {}
    if instance.state == InstanceState.DELETED or instance.node_id is None:
        return
    if not placement.get("cpus"):
        return
    pool = session.get(Pool, instance.pool_id)
    if pool is not None:
        refloat_guests(session, fleet, pool, instance.node_id, guest_id=instance.id, placement=None)

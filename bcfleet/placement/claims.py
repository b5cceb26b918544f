"""One host's claim, engine by engine: the guarded claim statements, the reads sent behind a
claim, and the claim strategy of each engine; instance_placer._claim_on asks the session's.

The engines differ in what a claim may cost and hold. SQLite serializes writers and has no
round trips: its claim is one statement, all rows or none, needs no savepoint (unless GPU atoms
are booked too), and a host the candidate query found empty is empty still. PostgreSQL has
concurrent writers and a round trip per statement: its claim locks the host's rows in the lock
order, the reads a placement needs (inventory, other guests) are sent behind it and answered in
its round trip, and a refused host is let go by a savepoint's rollback, or, on a first run that
may run again, by rolling back the whole transaction (RunAgainCarefully) so that no row lock is
held while another host is tried. Each strategy says this once (SqliteClaims, PostgresClaims);
the caller never asks which engine it is on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import JSON, column, text
from sqlmodel import Session

from bcfleet.domain.fit import HostSnapshot
from bcfleet.domain.numa import HostPlacement
from bcfleet.domain.scalars import SCALARS
from bcfleet.domain.shapes import Inventory
from bcfleet.domain.states import INSTANCE_LIVE
from bcfleet.placement.quotas import FinishCharge
from bcfleet.store.driver_sql import DriverStatement, SentRows
from bcfleet.store.engine import is_sqlite
from bcfleet.store.faults import RunAgainCarefully, refuse_unless
from bcfleet.store.uow import CoreSavepoint

if TYPE_CHECKING:
    from bcfleet.placement.handle import PlacementHandle


def scalar_row(column: str) -> str:
    """SQL true for a node_resources row of a scalar (SCALARS): a CASE, not `column IN (...)`,
    for which SQLite builds an in-memory table on every run once the list has three values."""
    return f"CASE {column} " + " ".join(f"WHEN '{s}' THEN 1" for s in SCALARS) + " ELSE 0 END"


# All of a node's scalar claims in one guarded statement (SQLite, whose writers are serialized):
# every row is updated, or none is when any of them would go over its capacity. The scalar rows
# are picked by CASEs (scalar_row; the subquery's guard is one too), with no IN list.
_CLAIM_ALL = DriverStatement(
    text(
        "UPDATE node_resources SET allocated = allocated + CASE resource "
        "WHEN 'vcpu' THEN :vcpu WHEN 'memoryGiB' THEN :mem ELSE :disk END, "
        "generation = generation + 1 "
        f"WHERE node_id = :node AND {scalar_row('resource')} "
        "AND NOT EXISTS (SELECT 1 FROM node_resources o WHERE o.node_id = :node AND "
        "CASE o.resource WHEN 'vcpu' THEN o.allocated + :vcpu > o.capacity "
        "WHEN 'memoryGiB' THEN o.allocated + :mem > o.capacity "
        "WHEN 'diskGiB' THEN o.allocated + :disk > o.capacity ELSE 0 END)"
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


# PostgreSQL, a claim sent with no one to read its answer (PostgresClaims, claim_unread): the
# host's three rows locked in the lock order and each claimed only while nothing is allocated
# on it, and the transaction failed (refuse_unless) unless all three were claimed and the
# host's inventory is still of the generation the placement chose from.
_CLAIM_ALONE_GUARDED = DriverStatement(
    text(
        "WITH wanted (resource, n, rank) AS (VALUES ('vcpu', :vcpu, 0), ('memoryGiB', :mem, 1), "
        "('diskGiB', :disk, 2)), "
        "locked AS MATERIALIZED (SELECT r.resource FROM node_resources r "
        "JOIN wanted w ON w.resource = r.resource WHERE r.node_id = :node "
        "ORDER BY w.rank FOR UPDATE OF r), "
        "claimed AS (UPDATE node_resources SET allocated = w.n, generation = generation + 1 "
        "FROM wanted w JOIN locked l ON l.resource = w.resource "
        "WHERE node_resources.node_id = :node AND node_resources.resource = w.resource "
        "AND node_resources.allocated = 0 AND w.n <= node_resources.capacity "
        "RETURNING node_resources.resource) "
        "SELECT "
        + refuse_unless(
            "count(*) = 3 AND (SELECT h.inventory_generation FROM hosts h WHERE h.id = :node) "
            "= :generation",
            "the claim of a host alone",
            "count(*)",
        )
        + " FROM claimed"
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
    return _claim_on_sqlite(session, node_id, claims)


def _claim_on_sqlite(session: Session, node_id: str, claims: Mapping[str, int]) -> Claim:
    """claim_host on SQLite: every row or none, in one statement when all three are wanted."""
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
    """The scalars claimed, by how much (those above 0, in SCALARS order)."""
    wanted = {}
    for resource in SCALARS:
        amount = int(claims.get(resource, 0))
        if amount > 0:
            wanted[resource] = amount
    return wanted


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


class BehindClaim(Protocol):
    """What choose_placement reads of a claimed host without GPUs: its inventory, and its other
    guests' placements (read only when it may have some)."""

    def inventory(self) -> Inventory: ...

    def others(self) -> list[HostPlacement]: ...


class KeptAlone:
    """A host claimed alone by a guarded claim (_CLAIM_ALONE_GUARDED): its inventory the kept
    copy, of the generation the guard checks, and no other guest, which the guard checks too."""

    __slots__ = ("_inventory",)

    def __init__(self, inventory: Inventory) -> None:
        self._inventory = inventory

    def inventory(self) -> Inventory:
        return self._inventory

    def others(self) -> list[HostPlacement]:
        return []


class ReadBehindClaim:
    """What choose_placement reads, sent behind a claim (PostgreSQL, a guest without GPUs):
    the host's inventory, and its other guests' placements unless the candidate query found it
    empty. They run after the claim, under its row locks, and are answered in its round trip.
    A host that had guests after all (the claim says so) has them read then.
    """

    def __init__(
        self,
        session: Session,
        fleet: PlacementHandle,
        node_id: str,
        exclude: str,
        looked_empty: bool,
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


# The document as text, unless the kept copy is of the current generation: hosts of one hardware
# model report the same inventory, and share one parsed copy (keyed by the text).
_INVENTORY_UNLESS_KEPT = DriverStatement(
    text(
        "SELECT inventory_generation, CASE WHEN inventory_generation = :kept THEN NULL "
        "ELSE CAST(inventory AS TEXT) END FROM hosts WHERE id = :n"
    )
)


INVENTORIES_AHEAD_MAX = 16  # a candidate page's hosts (instance_placer.CANDIDATES_TO_SCORE)


@lru_cache(maxsize=INVENTORIES_AHEAD_MAX)
def _inventories_of(count: int) -> DriverStatement:
    """The generation and document of `count` hosts (one parameter each, on either engine)."""
    ids = ", ".join(f":i{i}" for i in range(count))
    return DriverStatement(
        text(
            "SELECT id, inventory_generation, CAST(inventory AS TEXT) FROM hosts "
            f"WHERE id IN ({ids}) AND inventory IS NOT NULL"
        )
    )


class InventoriesAhead:
    """The documents of hosts a placement saw whose kept inventory is missing or older, read in
    one statement and kept in the fleet's placement context (keep()), so that placements on
    the hosts after it find theirs kept: on SQLite they read none, on PostgreSQL they claim
    unread (PostgresClaims). On PostgreSQL it is sent behind the claim and answered in its
    round trip; on SQLite it runs at once."""

    def __init__(
        self,
        session: Session,
        fleet: PlacementHandle,
        hosts: Iterable[tuple[str, int | None]],
        claimed: str | None = None,
    ) -> None:
        self._fleet = fleet
        context = fleet.placement
        wanted: list[str] = []
        for node_id, generation in hosts:  # node id, inventory generation the search read
            if node_id == claimed:
                continue  # read by the claim's own ReadBehindClaim
            kept = context.kept_inventory(node_id)
            if kept is None or kept[0] != generation:
                wanted.append(node_id)
                if len(wanted) == INVENTORIES_AHEAD_MAX:
                    break
        self._sent = (
            _inventories_of(len(wanted)).send_reading(
                session, {f"i{i}": node_id for i, node_id in enumerate(wanted)}
            )
            if wanted
            else None
        )

    def keep(self) -> None:
        if self._sent is None:
            return
        context = self._fleet.placement
        for node_id, generation, document in self._sent.rows().all():
            inventory = context.inventory_of_document(document)
            if inventory is None:
                inventory = Inventory.from_stored(json.loads(document))  # as _inventory_read
            context.keep_inventory(node_id, int(generation), document, inventory)


def host_inventory(
    session: Session, fleet: PlacementHandle, node_id: str, known_generation: int | None = None
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
    fleet: PlacementHandle, node_id: str, kept: tuple[int, Inventory] | None, sent: SentRows
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


class Taken:
    """A claim a strategy took on one host: the claim, the savepoint it runs in (if any), the
    reads sent behind it (if any), and whether the host holds no other guest."""

    __slots__ = ("alone", "behind", "claim", "claims", "node_id", "savepoint", "session")

    def __init__(
        self,
        session: Session,
        node_id: str,
        claims: Mapping[str, int],
        claim: Claim,
        savepoint: CoreSavepoint | None,
        behind: BehindClaim | None,
        alone: bool,
    ) -> None:
        self.session, self.node_id, self.claims = session, node_id, claims
        self.claim, self.savepoint, self.behind, self.alone = claim, savepoint, behind, alone


class ClaimStrategy(Protocol):
    """How one engine claims a host, and lets go of a host that cannot take the guest."""

    def take(
        self,
        session: Session,
        fleet: PlacementHandle,
        host: HostSnapshot,
        claims: Mapping[str, int],
        instance_id: str,
        *,
        gpus: bool,
        may_run_again: bool,
        finish_charge: FinishCharge,
        charge_behind_claim: bool,
        nearby: Iterable[tuple[str, int | None]] = (),
    ) -> Taken:
        """Claim the host; finish_charge runs before anything is claimed or a savepoint taken,
        or, where the strategy sends the claim and charge_behind_claim asks, behind the claim
        and in its round trip. `nearby`: the other candidates' node ids and the inventory
        generations the search read, whose inventories a strategy may read ahead."""
        ...

    def refused(self, taken: Taken) -> None:
        """The claim was refused (nothing is claimed): let go of the host."""
        ...

    def unfit(self, taken: Taken) -> None:
        """The claim was taken but the host cannot take the guest: give it back."""
        ...


class SqliteClaims:
    """SQLite: one all-or-nothing claim, no savepoint without GPUs, nothing sent behind it."""

    def take(
        self,
        session: Session,
        fleet: PlacementHandle,
        host: HostSnapshot,
        claims: Mapping[str, int],
        instance_id: str,  # noqa: ARG002
        *,
        gpus: bool,
        may_run_again: bool,  # noqa: ARG002 - writers are serialized: nothing to run again for
        finish_charge: FinishCharge,
        charge_behind_claim: bool,  # noqa: ARG002 - nothing is sent, so nothing goes behind
        nearby: Iterable[tuple[str, int | None]] = (),
    ) -> Taken:
        finish_charge()  # before the savepoint: a rollback to it keeps the charge
        savepoint = CoreSavepoint(session) if gpus else None
        if savepoint is None:
            session.flush()  # the Core writes after the claim see what the ORM holds
        kept = fleet.placement.kept_inventory(host.node_id)
        if kept is None or kept[0] != host.inventory_generation:
            # This host's and the other candidates' in one statement (host_inventory finds it).
            InventoriesAhead(
                session, fleet, [(host.node_id, host.inventory_generation), *nearby]
            ).keep()
        claim = _claim_on_sqlite(session, host.node_id, claims)
        # The candidate query read the host in this write transaction, which no other writer
        # can interleave with: a host that looked empty is.
        return Taken(session, host.node_id, claims, claim, savepoint, None, host.holds_nothing)

    def refused(self, taken: Taken) -> None:
        if taken.savepoint is not None:
            taken.savepoint.rollback()

    def unfit(self, taken: Taken) -> None:
        if taken.savepoint is not None:
            taken.savepoint.rollback()
        else:
            return_scalars(taken.session, taken.node_id, taken.claims)


class PostgresClaims:
    """PostgreSQL: the claim locks the host's rows; without GPUs it is sent with the reads
    behind it; a host let go releases its locks by a savepoint's rollback, or, on a first run
    that may run again (no savepoint), by RunAgainCarefully.

    On such a first run, a host that looked empty and whose inventory is kept at the generation
    the search read is claimed unread (claim_unread): the claim is guarded on the server, so
    the placement's rows and COMMIT go in the claim's round trip; a refused guard fails the
    transaction and the call runs again carefully (store/faults.py, refuse_unless).
    """

    def take(
        self,
        session: Session,
        fleet: PlacementHandle,
        host: HostSnapshot,
        claims: Mapping[str, int],
        instance_id: str,
        *,
        gpus: bool,
        may_run_again: bool,
        finish_charge: FinishCharge,
        charge_behind_claim: bool,
        nearby: Iterable[tuple[str, int | None]] = (),
    ) -> Taken:
        # GPU atoms are locked before the reads; otherwise the host's inventory (and guests,
        # unless it looked empty) are read in the claim's round trip.
        charge_after_send = charge_behind_claim and may_run_again and not gpus
        if not charge_after_send:
            finish_charge()  # before the savepoint: a rollback to it keeps the charge
        savepoint = None if may_run_again and not gpus else CoreSavepoint(session)
        if savepoint is None:
            session.flush()  # the Core writes below and others_on see what the ORM holds
        node_id = host.node_id
        if savepoint is None:
            unread = claim_unread(session, fleet, host, claims)
            if unread is not None:
                if charge_after_send:
                    finish_charge(behind_claim=True)  # guarded (start_charge): nothing to read
                return Taken(session, node_id, claims, Claim(None, True), None, unread, True)
        sent = send_claim(session, node_id, claims)
        behind = ahead = None
        if not gpus:
            behind = ReadBehindClaim(session, fleet, node_id, instance_id, host.holds_nothing)
            if may_run_again:
                ahead = InventoriesAhead(session, fleet, nearby, node_id)
            if charge_after_send:
                finish_charge(behind_claim=True)
        claim = sent.claim()
        if ahead is not None:
            ahead.keep()
        # No other guest: read under the row locks the claim took.
        return Taken(session, node_id, claims, claim, savepoint, behind, claim.held_nothing)

    def refused(self, taken: Taken) -> None:
        if taken.savepoint is None:
            raise RunAgainCarefully from None  # this host's row locks are held: start over, careful
        taken.savepoint.rollback()

    def unfit(self, taken: Taken) -> None:
        self.refused(taken)  # the claim's locks go with the savepoint, or with the transaction


def claim_unread(
    session: Session, fleet: PlacementHandle, host: HostSnapshot, claims: Mapping[str, int]
) -> KeptAlone | None:
    """Send a guarded claim of a host that looked empty, when its kept inventory is of the
    generation the search read and all three scalars are claimed; None (nothing sent) else.

    Nothing reads its answer: the guard (_CLAIM_ALONE_GUARDED) fails the transaction when the
    host is no longer empty, was claimed meanwhile, or reported another inventory.
    """
    wanted = _wanted(claims)
    if len(wanted) != len(SCALARS) or not host.holds_nothing:
        return None
    kept = fleet.placement.kept_inventory(host.node_id)
    if kept is None or kept[0] != host.inventory_generation:
        return None
    params = _claim_params(host.node_id, wanted)
    params["generation"] = kept[0]
    _CLAIM_ALONE_GUARDED.send(session, params)
    return KeptAlone(kept[1])


SQLITE_CLAIMS = SqliteClaims()
POSTGRES_CLAIMS = PostgresClaims()


def strategy_for(session: Session) -> ClaimStrategy:
    """The claim strategy of the session's engine."""
    return SQLITE_CLAIMS if is_sqlite(session.get_bind().engine) else POSTGRES_CLAIMS

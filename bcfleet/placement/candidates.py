"""Candidate hosts from SQL: feasible for the scalars in the WHERE clause, a bounded page from a rotating start.

Like kube-scheduler's percentageOfNodesToScore, placement does not weigh every host of a large
pool: it collects up to `want` feasible hosts starting after a rotating cursor (so successive
placements look at different parts of the pool), then the weigher ranks those. The counted
explanation of a failure, which needs every host, is only computed when nothing fits.
"""

from __future__ import annotations

import random
from collections.abc import Container, Hashable, Iterator, Mapping, Sequence
from operator import itemgetter
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, String, column, text
from sqlmodel import Session, col, select

from bcfleet.domain.fit import (
    HostSnapshot,
    ResourceRow,
    Weigher,
    carries_placement,
    free_fractions,
    rank,
    rank_by_fractions,
    rank_counted,
)
from bcfleet.domain.scalars import SCALARS
from bcfleet.domain.states import HostState
from bcfleet.placement.context import PlacementContext
from bcfleet.placement.gpus import free_counts
from bcfleet.store.driver_sql import DriverStatement, SentRows
from bcfleet.store.engine import is_sqlite
from bcfleet.store.models import Host, NodeResource

if TYPE_CHECKING:
    from bcfleet.placement.candidate_window import WindowSearch

PAGE = 32

_COUNT_HOSTS = text("SELECT count(*) FROM hosts WHERE pool_id = :pool")
_NTH_HOST = text("SELECT id FROM hosts WHERE pool_id = :pool ORDER BY id LIMIT 1 OFFSET :n")


def first_cursor(session: Session, pool_id: str) -> str:
    """Where a fleet handle's first search of a pool starts: after a host drawn at random.

    Processes placing at once in one pool then start apart, instead of all claiming the first
    hosts in id order (and queueing on their rows) until their cursors drift apart.
    """
    count = int(session.execute(_COUNT_HOSTS, {"pool": pool_id}).scalar_one())
    if count < 2:
        return ""
    found = session.execute(_NTH_HOST, {"pool": pool_id, "n": random.randrange(count)}).scalar()
    return str(found or "")


_COLUMNS = ", ".join(
    f"{a}.allocatable, {a}.ratio, {a}.capacity, {a}.allocated" for a in ("v", "m", "d")
)
_FEASIBLE = (
    "SELECT h.id, {labels} AS labels, h.inventory_generation, " + _COLUMNS + " FROM hosts h "
    "JOIN node_resources v ON v.node_id = h.id AND v.resource = 'vcpu' "
    "JOIN node_resources m ON m.node_id = h.id AND m.resource = 'memoryGiB' "
    "JOIN node_resources d ON d.node_id = h.id AND d.resource = 'diskGiB' "
    "WHERE h.pool_id = :pool AND h.state = 'ready' AND h.id > :after AND h.id <= :before "
    "AND v.allocated + :vcpu <= v.capacity AND m.allocated + :mem <= m.capacity "
    "AND d.allocated + :disk <= d.capacity ORDER BY h.id LIMIT :limit"
)
# Statements built once (SQLAlchemy's construction of the aliased join cost more than running
# it) and run on the driver's cursor. A host's labels are only read when a placement policy
# asks for its capability label (HostSnapshot.applies_placement); other searches read NULL and
# parse no JSON.
FEASIBLE_PAGE = {
    True: DriverStatement(
        text(_FEASIBLE.format(labels="h.labels")).columns(
            column("id", String), column("labels", JSON)
        )
    ),
    # NULL labels: no column to convert, so the rows are the driver's as they are.
    False: DriverStatement(text(_FEASIBLE.format(labels="NULL")).columns(column("id", String))),
}
MAX_ID = "~"  # sorts after every prefixed ULID id


def _page_params(
    pool_id: str, claims: Mapping[str, int], after: str, before: str | None, limit: int
) -> dict[str, Any]:
    return {
        "pool": pool_id,
        "after": after,
        "before": before or MAX_ID,
        "limit": limit,
        "vcpu": int(claims.get("vcpu", 0)),
        "mem": int(claims.get("memoryGiB", 0)),
        "disk": int(claims.get("diskGiB", 0)),
    }


def _feasible_page(session: Session, params: Mapping[str, Any], *, with_labels: bool) -> list[Any]:
    return FEASIBLE_PAGE[with_labels].run(session, params).all()


class SearchAhead:
    """A search's first page sent before the flavor it depends on is read (PostgreSQL).

    A placement reads its actor, pool and flavor in one round trip and searches in the next.
    A fleet handle that placed before with the same pool and flavor references (the key)
    sends that search's first page again, from the pool's cursor now, behind the lookup and
    in its round trip. The search takes the sent rows only when the page it reads first is
    the very one sent (the same statement and parameters: pool, claims, cursor, limit);
    otherwise they are dropped and it reads its own. Only the first page the search reads
    is answered, and remembered for the key's next placement. Nothing is sent or remembered
    on SQLite, which has no round trips.
    """

    def __init__(self, context: PlacementContext, key: Hashable) -> None:
        self._context = context
        self._key = key
        self._sent: tuple[bool, dict[str, Any], SentRows] | None = None
        self._answered = False

    def send(self, session: Session) -> None:
        """Send the key's remembered first page, if any, from the pool's cursor now."""
        if is_sqlite(session.get_bind().engine):
            self._answered = True  # the search reads its own pages, and nothing is remembered
            return
        remembered = self._context.first_page(self._key)
        if remembered is None:
            return
        with_labels, params = remembered
        cursor = self._context.cursor(params["pool"])
        if cursor is None:
            return
        params = {**params, "after": cursor}
        self._sent = (
            with_labels,
            params,
            FEASIBLE_PAGE[with_labels].send_reading(session, params),
        )

    def page(self, session: Session, params: dict[str, Any], *, with_labels: bool) -> list[Any]:
        """The search's page: the one sent ahead when it is this one (once), else read now."""
        sent, self._sent = self._sent, None
        if self._answered:
            return _feasible_page(session, params, with_labels=with_labels)
        self._answered = True
        self._context.remember_first_page(self._key, with_labels, params)
        if sent is not None and sent[0] == with_labels and sent[1] == params:
            return sent[2].rows().all()
        return _feasible_page(session, params, with_labels=with_labels)


_VCPU, _MEMORY, _DISK = SCALARS  # the page's column groups v, m and d, in this order
_NO_LABELS: Mapping[str, str] = MappingProxyType({})
# A ResourceRow from its five fields in order, in C: the named tuple's own __new__ is a Python
# function, called three times for each scalar of a snapshot.
_row = tuple.__new__
_NODE_ID = itemgetter(0)
_NODE_AND_GENERATION = itemgetter(0, 2)
# Capacity and allocated of each scalar (v, m, d): zipped, a host as fit.free_fractions takes it.
_SCALAR_COUNTS = (itemgetter(5, 6), itemgetter(9, 10), itemgetter(13, 14))
_NO_GPUS = (0, 0)


def _snapshot(row: Any, gpus: tuple[int, int]) -> HostSnapshot:
    """A candidate as the fit check and weighers see it; its labels are empty unless the
    search read them."""
    node_id, labels, generation, va, vr, vc, vu, ma, mr, mc, mu, da, dr, dc, du = row
    return HostSnapshot.of_candidate(
        node_id,
        {
            _VCPU: _row(ResourceRow, (_VCPU, va, vr, vc, vu)),
            _MEMORY: _row(ResourceRow, (_MEMORY, ma, mr, mc, mu)),
            _DISK: _row(ResourceRow, (_DISK, da, dr, dc, du)),
        },
        gpus_total=gpus[1],
        gpus_free=gpus[0],
        labels=dict(labels) if labels else _NO_LABELS,
        inventory_generation=int(generation),
    )


def row_fractions(rows: Sequence[Any]) -> list[float]:
    """The free fraction of each page row (fit.free_fractions), in the rows' order."""
    return free_fractions(zip(*(map(scalar, rows) for scalar in _SCALAR_COUNTS), strict=True))


class Candidates:
    """The feasible hosts a search found, kept as its page rows (and GPU counts, when GPUs are
    wanted). They are ranked from the rows (fit.rank_counted), or from their free fractions
    when the search kept those with them (a candidate window's), and a host's HostSnapshot is
    made only when it is claimed: a placement claims one of its 16 candidates, most times."""

    __slots__ = ("_fractions", "_gpus", "rows")

    def __init__(
        self,
        rows: list[Any],
        gpus: Mapping[str, tuple[int, int]],
        fractions: Sequence[float] | None = None,
    ) -> None:
        self.rows = rows
        self._gpus = gpus
        self._fractions = fractions  # each row's free fraction, when known already

    def __len__(self) -> int:
        return len(self.rows)

    def without(self, node_ids: Container[str]) -> Candidates:
        """These candidates but those of the given node ids."""
        if not node_ids:
            return self
        return Candidates([row for row in self.rows if row[0] not in node_ids], self._gpus)

    def snapshot(self, row: Any) -> HostSnapshot:
        """One candidate's snapshot, from its page row."""
        return _snapshot(row, self._gpus.get(row[0], _NO_GPUS))

    def snapshots(self) -> list[HostSnapshot]:
        """Every candidate's snapshot, in the search's order (a batch weighs them all)."""
        gpus = self._gpus
        return [_snapshot(row, gpus.get(row[0], _NO_GPUS)) for row in self.rows]

    def ranked(self, by: Weigher) -> Iterator[HostSnapshot]:
        """The candidates best first by the weigher (fit.rank's order), each snapshot made as
        it is reached."""
        rows = self.rows
        if self._fractions is not None:
            ordered = rank_by_fractions(rows, map(_NODE_ID, rows), self._fractions, by)
        else:
            counts = zip(*(map(scalar, rows) for scalar in _SCALAR_COUNTS), strict=True)
            ordered = rank_counted(rows, map(_NODE_ID, rows), counts, by)
        if ordered is None:  # a weigher of something else than the rows' free fraction
            yield from rank(self.snapshots(), by)
            return
        for row in ordered:
            yield self.snapshot(row)

    def generations(self) -> Iterator[tuple[str, int]]:
        """Each candidate's node id and the inventory generation the search read."""
        return map(_NODE_AND_GENERATION, self.rows)


def _wanted_row(
    row: Any, gpus: int, counts: Mapping[str, tuple[int, int]], needs_label: bool
) -> bool:
    """Whether a feasible row is a candidate: its free GPUs and placement label, when asked."""
    if gpus > counts.get(row[0], _NO_GPUS)[0]:
        return False
    return not needs_label or carries_placement(row[1] or _NO_LABELS)


def feasible_candidates(
    session: Session,
    pool_id: str,
    claims: Mapping[str, int],
    *,
    gpus: int,
    needs_label: bool,
    want: int,
    now: Any,
    context: PlacementContext,
    ahead: SearchAhead | None = None,
    window: WindowSearch | None = None,
) -> Candidates:
    """Up to `want` hosts of the pool where the claims and GPUs fit now, from the rotating cursor.

    `ahead`: the placement's first page, when it was sent before (SearchAhead).
    `window`: the handle's kept candidate window, for a plain search (no GPUs, no label).
    """
    cursor = context.cursor(pool_id)
    if cursor is None:
        cursor = first_cursor(session, pool_id) if context.random_start else ""
        context.advance_cursor(pool_id, cursor)
    found: list[Any] = []
    gpu_counts: dict[str, tuple[int, int]] = {}
    filtered = gpus > 0 or needs_label
    if filtered:
        window = None
    for after, before in ((cursor, None), ("", cursor or None)):
        last = after
        while len(found) < want:
            # Without a GPU or label filter every row is a candidate: fetch no more than wanted.
            limit = PAGE if filtered else min(PAGE, want - len(found))
            params = _page_params(pool_id, claims, last, before, limit)
            if window is not None:
                page = window.page(session, params)
            elif ahead is not None:
                page = ahead.page(session, params, with_labels=needs_label)
            else:
                page = _feasible_page(session, params, with_labels=needs_label)
            if not page:
                break
            last = page[-1][0]
            if filtered:
                if gpus > 0:
                    gpu_counts.update(free_counts(session, [r[0] for r in page], now))
                found += [r for r in page if _wanted_row(r, gpus, gpu_counts, needs_label)]
            else:
                found += page
            if len(page) < limit:
                break
        if len(found) >= want or before is None and not cursor:
            break
    found = found[:want]
    return Candidates(found, gpu_counts, window.fractions(found) if window is not None else None)


def pool_snapshots(session: Session, pool_id: str, now: Any) -> list[HostSnapshot]:
    """Every host of the pool as the fit check sees it (for the counted explanation of a failure)."""
    hosts = session.execute(
        select(Host.id, Host.labels, Host.state)
        .where(Host.pool_id == pool_id)
        .order_by(col(Host.id))
    ).all()
    node_ids = [h[0] for h in hosts]
    rows: dict[str, dict[str, ResourceRow]] = {n: {} for n in node_ids}
    for row in session.scalars(
        select(NodeResource)
        .join(Host, col(Host.id) == col(NodeResource.node_id))
        .where(Host.pool_id == pool_id)  # by pool: a list of its node ids grows with the pool
    ).all():
        if row.node_id in rows:  # a host adopted since the read above is not in this answer
            rows[row.node_id][row.resource] = ResourceRow(
                row.resource, row.allocatable, row.ratio, row.capacity, row.allocated
            )
    counts = free_counts(session, node_ids, now)
    return [
        HostSnapshot(
            node_id=node_id,
            rows=rows[node_id],
            gpus_total=counts.get(node_id, (0, 0))[1],
            gpus_free=counts.get(node_id, (0, 0))[0],
            draining=state != HostState.READY,
            labels=dict(labels or {}),
        )
        for node_id, labels, state in hosts
    ]

"""Each pool's GpuSnapshot, kept in the fleet's placement context and refreshed node by node; reservations and preview read it.

Building a snapshot of a 5,000-node pool means reading 40,000 atoms and as many
bookings: about 100 ms on SQLite before any planning, and a SQL aggregate of
free GPUs per node over the window costs as much (both measured in
bench/bench_reservations.py). So the snapshot is built once per fleet handle and
refreshed with GpuSnapshot.with_bookings for just the nodes whose bookings
changed since, found through the booking versions of gpu_versions. Loading keeps
the window filter that is always true of a request: bookings that ended before
now cannot overlap any window.

The cache only guides planning: every booking is re-checked under row locks
(atoms present, node ready, no overlapping live booking) before it is written,
and a caller whose plans all fail that check asks for a rebuild and plans once
more. A rebuild also follows any change to the pool's hosts (added, removed,
draining, inventory reported) or a new GPU atom, and a version row that went
backwards or was recreated. A transaction that has written bookings itself reads
its own uncommitted rows, so what it builds then is used but never cached.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import case, func, or_, type_coerce
from sqlalchemy import select as sql_select
from sqlalchemy.types import NullType
from sqlmodel import Session, col, select

from bcfleet.domain.gpu_plan import AtomBooking as PlanBooking
from bcfleet.domain.gpu_plan import GpuNode, GpuSnapshot
from bcfleet.domain.states import HostState, ReservationState
from bcfleet.placement.context import PlacementContext, PoolView
from bcfleet.placement.gpu_versions import changed_since, pool_version, wrote_bookings
from bcfleet.store.id_chunks import id_chunks
from bcfleet.store.models import Booking, GpuAtom, Host, Reservation

REBUILD_SHARE = 0.25  # refresh more than this share of the nodes: rebuild instead


def pool_snapshot(
    session: Session,
    context: PlacementContext,
    pool_id: str,
    now: datetime,
    *,
    rebuild: bool = False,
) -> GpuSnapshot:
    """The pool's GPU nodes and live bookings as of this transaction (kept in the fleet's context)."""
    fingerprint = _fingerprint(session, pool_id)
    token, version = pool_version(session, pool_id)
    cached = context.gpu_pool(pool_id)
    stale = (
        rebuild
        or cached is None
        or cached.fingerprint != fingerprint
        or (cached.token is not None and cached.token != token)
        or cached.version > version
    )
    if stale:
        view = _build(session, pool_id, now, fingerprint, token, version)
    else:
        assert cached is not None
        view = _refresh(session, cached, pool_id, now, token, version)
    if wrote_bookings(session):
        return view.snapshot  # built on this transaction's uncommitted writes: never shared
    context.keep_gpu_pool(pool_id, view, replace=stale)
    return view.snapshot


def _fingerprint(session: Session, pool_id: str) -> tuple[Any, ...]:
    """What changes when hosts come, go, drain or report, or when any new GPU atom appears."""
    draining = case((col(Host.state) != HostState.READY, col(Host.id)))
    hosts = session.execute(
        sql_select(  # sqlmodel's select types four columns at most
            func.count(),
            func.coalesce(func.sum(Host.inventory_generation), 0),
            func.max(Host.id),
            func.count(draining),
            func.min(draining),
            func.max(draining),
            select(func.max(GpuAtom.id)).scalar_subquery(),
        ).where(col(Host.pool_id) == pool_id, col(Host.tenant_controlled).is_(False))
    ).one()
    return tuple(hosts)


def _refresh(
    session: Session, cached: PoolView, pool_id: str, now: datetime, token: str | None, version: int
) -> PoolView:
    """Reload the nodes changed since the cached version (all since 0 when versions began after)."""
    if version == cached.version:
        return cached
    changed = [n for n in changed_since(session, pool_id, cached.version) if n in cached.node_ids]
    if len(changed) > REBUILD_SHARE * max(len(cached.node_ids), 1):
        return _build(session, pool_id, now, cached.fingerprint, token, version)
    bookings = load_bookings(session, now, node_ids=changed)
    snapshot = cached.snapshot.with_bookings(changed, bookings)
    return PoolView(snapshot, cached.node_ids, cached.fingerprint, token, version)


def _build(
    session: Session,
    pool_id: str,
    now: datetime,
    fingerprint: tuple[Any, ...],
    token: str | None,
    version: int,
) -> PoolView:
    nodes = load_nodes(session, pool_id)
    snapshot = GpuSnapshot(nodes, load_bookings(session, now, pool_id=pool_id))
    return PoolView(snapshot, frozenset(n.id for n in nodes), fingerprint, token, version)


def load_nodes(session: Session, pool_id: str) -> list[GpuNode]:
    """The pool's hosts (not tenant-controlled) with their present GPU atoms in index order."""
    connection = session.connection()
    hosts = connection.execute(
        sql_select(col(Host.id), col(Host.name), col(Host.state)).where(
            col(Host.pool_id) == pool_id, col(Host.tenant_controlled).is_(False)
        )
    ).all()
    atoms: dict[str, list[str]] = {host_id: [] for host_id, _, _ in hosts}
    for atom_id, node_id in connection.execute(
        sql_select(col(GpuAtom.id), col(GpuAtom.node_id))
        .join(Host, col(Host.id) == col(GpuAtom.node_id))
        .where(col(Host.pool_id) == pool_id, col(GpuAtom.present).is_(True))
        .order_by(col(GpuAtom.node_id), col(GpuAtom.index))
    ).all():
        if node_id in atoms:
            atoms[node_id].append(str(atom_id))
    return [
        GpuNode(host_id, name, tuple(atoms[host_id]), draining=state != HostState.READY)
        for host_id, name, state in hosts
    ]


def load_bookings(
    session: Session,
    now: datetime,
    *,
    pool_id: str | None = None,
    node_ids: Sequence[str] | None = None,
) -> list[PlanBooking]:
    """Live bookings that have not ended by now, of a pool or of some nodes (bound a chunk of
    node ids at a time: store.id_chunks), for the planners.

    A spot booking is freeable while its reservation is placed, binding or active and has not
    been preempted already (a cut-back victim is never cut twice).
    """
    raw = NullType()  # times are converted below, once per distinct value, not once per row
    query = (
        sql_select(
            col(Booking.atom_id),
            col(Booking.consumer_id),
            type_coerce(col(Booking.starts_at), raw),
            type_coerce(col(Booking.ends_at), raw),
            col(Booking.spot),
            col(Reservation.state),
            type_coerce(col(Reservation.deadline), raw),
        )
        .join(Reservation, col(Reservation.id) == col(Booking.consumer_id), isouter=True)
        .where(
            col(Booking.released_at).is_(None),
            or_(col(Booking.ends_at).is_(None), col(Booking.ends_at) > now),
        )
    )
    if pool_id is not None:
        query = query.join(Host, col(Host.id) == col(Booking.node_id)).where(
            col(Host.pool_id) == pool_id
        )
    connection = session.connection()
    if node_ids is None:
        return list(_plan_bookings(connection.execute(query).all()))
    return [
        booking
        for chunk in id_chunks(node_ids)
        for booking in _plan_bookings(
            connection.execute(query.where(col(Booking.node_id).in_(chunk))).all()
        )
    ]


def _plan_bookings(rows: Iterable[Any]) -> Iterable[PlanBooking]:
    times: dict[Any, datetime | None] = {None: None}
    for atom_id, holder, start, end, spot, state, preempted_at in rows:
        if state is None:
            state = ReservationState.ACTIVE  # an instance's booking
        elif preempted_at is not None:
            state = "preempted"
        for value in (start, end):
            if value not in times:
                times[value] = _utc(value)
        begins = times[start]
        assert begins is not None
        yield PlanBooking(str(atom_id), holder, begins, times[end], bool(spot), state)


def _utc(value: Any) -> datetime:
    """A stored time as aware UTC: SQLite gives text, PostgreSQL a naive datetime (both UTC)."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    assert isinstance(value, datetime)
    return value.replace(tzinfo=UTC)

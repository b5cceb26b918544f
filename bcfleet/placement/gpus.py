"""GPU atoms in time: find free atoms, lock them, and book [start, end) windows that never overlap."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, func, or_
from sqlmodel import Session, col, select

from bcfleet.ids import IdFactory
from bcfleet.placement.gpu_versions import touch_nodes
from bcfleet.store.engine import is_sqlite
from bcfleet.store.id_chunks import id_chunks
from bcfleet.store.models import Booking, GpuAtom


@dataclass(frozen=True)
class AtomRef:
    id: int
    node_id: str
    index: int
    pci_address: str
    numa_node: int | None
    model: str


def overlapping(start: datetime, end: datetime | None):  # type: ignore[no-untyped-def]
    """SQL condition: a live booking overlapping [start, end) (None = open-ended on either side)."""
    live = col(Booking.released_at).is_(None)
    ends_after_start = or_(col(Booking.ends_at).is_(None), col(Booking.ends_at) > start)
    if end is None:
        return and_(live, ends_after_start)
    return and_(live, ends_after_start, col(Booking.starts_at) < end)


def free_atoms(
    session: Session, node_id: str, start: datetime, end: datetime | None, *, lock: bool = False
) -> list[AtomRef]:
    """The node's present atoms with no live booking overlapping the window, by index."""
    busy = select(Booking.atom_id).where(Booking.node_id == node_id, overlapping(start, end))
    query = (
        select(GpuAtom)
        .where(
            col(GpuAtom.node_id) == node_id,
            col(GpuAtom.present).is_(True),
            col(GpuAtom.id).not_in(busy),
        )
        .order_by(col(GpuAtom.index))
    )
    if lock and not is_sqlite(session.get_bind().engine):
        query = query.with_for_update()
    return [_ref(a) for a in session.scalars(query).all()]


def free_counts(
    session: Session, node_ids: Sequence[str], start: datetime
) -> dict[str, tuple[int, int]]:
    """node → (free, total) present atoms from start on, for the candidates of an open-ended
    claim; the node ids are bound a chunk at a time (store.id_chunks)."""
    counts: dict[str, tuple[int, int]] = {}
    for chunk in id_chunks(node_ids):
        totals = session.execute(
            select(GpuAtom.node_id, func.count())
            .where(col(GpuAtom.node_id).in_(chunk), col(GpuAtom.present).is_(True))
            .group_by(GpuAtom.node_id)
        ).all()
        busy = dict(
            session.execute(
                select(Booking.node_id, func.count(func.distinct(Booking.atom_id)))
                .where(col(Booking.node_id).in_(chunk), overlapping(start, None))
                .group_by(Booking.node_id)
            ).all()
        )
        for node, total in totals:
            counts[node] = (int(total) - int(busy.get(node, 0)), int(total))
    return counts


def lock_atoms(session: Session, atom_ids: Sequence[int]) -> None:
    """Lock atom rows in id order (PostgreSQL) so that a re-check after it sees every committed booking."""
    if atom_ids and not is_sqlite(session.get_bind().engine):
        session.execute(
            select(GpuAtom.id)
            .where(col(GpuAtom.id).in_(sorted(atom_ids)))
            .order_by(col(GpuAtom.id))
            .with_for_update()
        )


def book(
    session: Session,
    ids: IdFactory,
    atoms: Sequence[AtomRef],
    *,
    consumer_kind: str,
    consumer_id: str,
    tenant_id: str,
    start: datetime,
    end: datetime | None,
    spot: bool = False,
    at: datetime,
) -> list[Booking]:
    """Book locked, re-checked atoms for the window; the caller locked them with lock_atoms first."""
    rows = [
        Booking(
            id=ids.new("bkg", at),
            atom_id=a.id,
            node_id=a.node_id,
            consumer_kind=consumer_kind,
            consumer_id=consumer_id,
            tenant_id=tenant_id,
            spot=spot,
            starts_at=start,
            ends_at=end,
        )
        for a in atoms
    ]
    session.add_all(rows)
    touch_nodes(session, (a.node_id for a in atoms))  # last: the version row is the final lock
    return rows


def still_free(
    session: Session, atom_ids: Sequence[int], start: datetime, end: datetime | None
) -> bool:
    """After locking: no live booking overlaps the window on any of these atoms."""
    clash = session.execute(
        select(func.count())
        .select_from(Booking)
        .where(col(Booking.atom_id).in_(atom_ids), overlapping(start, end))
    ).scalar_one()
    return int(clash) == 0


def release_bookings(session: Session, consumer_id: str, at: datetime) -> int:
    """End a consumer's live bookings at `at` (open-ended ones get that end)."""
    rows = session.scalars(
        select(Booking).where(
            col(Booking.consumer_id) == consumer_id, col(Booking.released_at).is_(None)
        )
    ).all()
    for row in rows:
        row.released_at = at
        if row.ends_at is None or row.ends_at > at:
            row.ends_at = max(at, row.starts_at)
        session.add(row)
    touch_nodes(session, (row.node_id for row in rows))
    return len(rows)


def _ref(atom: GpuAtom) -> AtomRef:
    assert atom.id is not None
    return AtomRef(atom.id, atom.node_id, atom.index, atom.pci_address, atom.numa_node, atom.model)

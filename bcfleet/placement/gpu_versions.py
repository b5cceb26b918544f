"""GPU booking versions: every booking writer touches the nodes it changed; cached snapshots reload them.

touch_nodes is called last in a transaction's GPU work (after quota, node and atom
locks): it bumps the pool's version row, which PostgreSQL then holds until commit,
so versions commit in order. A reader that sees version V therefore sees every
booking change up to V, and reloads just the nodes whose version is above the one
its cached snapshot was built at. SQLite writers are serialized anyway.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable

from sqlalchemy import text
from sqlmodel import Session, col, select

from bcfleet.store.models import Host
from bcfleet.store.models.reservations import GpuNodeVersion, GpuPoolVersion

TOUCHED = "bcfleet.gpu_bookings_touched"  # session.info: this transaction wrote bookings


def wrote_bookings(session: Session) -> bool:
    """Whether this transaction changed bookings (so what it reads is not yet everyone's)."""
    return bool(session.info.get(TOUCHED))


def touch_nodes(session: Session, node_ids: Iterable[str]) -> None:
    """Record that these nodes' GPU bookings changed in this transaction."""
    ids = sorted(set(node_ids))
    if not ids:
        return
    session.info[TOUCHED] = True
    by_pool: dict[str, list[str]] = {}
    for node_id, pool_id in session.execute(
        select(Host.id, Host.pool_id).where(col(Host.id).in_(ids))
    ).all():
        by_pool.setdefault(pool_id, []).append(node_id)
    for pool_id in sorted(by_pool):
        version = session.execute(
            text(
                "INSERT INTO gpu_pool_versions (pool_id, version, token) VALUES (:p, 1, :t) "
                "ON CONFLICT (pool_id) DO UPDATE SET version = gpu_pool_versions.version + 1 "
                "RETURNING version"
            ),
            {"p": pool_id, "t": secrets.token_hex(8)},
        ).scalar_one()
        session.execute(
            text(
                "INSERT INTO gpu_node_versions (node_id, pool_id, version) VALUES (:n, :p, :v) "
                "ON CONFLICT (node_id) DO UPDATE SET version = excluded.version, "
                "pool_id = excluded.pool_id"
            ),
            [{"n": node_id, "p": pool_id, "v": int(version)} for node_id in by_pool[pool_id]],
        )


def pool_version(session: Session, pool_id: str) -> tuple[str | None, int]:
    """(token, version) of the pool's bookings; (None, 0) before any booking was written."""
    row = session.get(GpuPoolVersion, pool_id, populate_existing=True)
    return (None, 0) if row is None else (row.token, row.version)


def changed_since(session: Session, pool_id: str, version: int) -> list[str]:
    """The pool's nodes whose bookings changed after `version`."""
    return list(
        session.execute(
            select(GpuNodeVersion.node_id).where(
                col(GpuNodeVersion.pool_id) == pool_id, col(GpuNodeVersion.version) > version
            )
        )
        .scalars()
        .all()
    )

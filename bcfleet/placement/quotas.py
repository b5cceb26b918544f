"""Quota charges in SQL: used + charge <= limit in the UPDATE's WHERE, so concurrent admissions never overrun."""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache

from sqlalchemy import TextClause, text
from sqlmodel import Session

from bcfleet.errors import QuotaExceededError
from bcfleet.store.engine import is_sqlite
from bcfleet.store.models import Quota

_ENSURE_ROW = text(
    'INSERT INTO quotas (tenant_id, pool_id, resource, "limit", used, managed) '
    "VALUES (:t, :p, :r, NULL, 0, false) ON CONFLICT DO NOTHING"
)


def _ensure_rows(session: Session, tenant_id: str, pool_id: str, resources: list[str]) -> None:
    """Quota rows exist for every charged resource (no limit: unlimited), whoever races to make them."""
    session.execute(_ENSURE_ROW, [{"t": tenant_id, "p": pool_id, "r": r} for r in resources])


@lru_cache(maxsize=64)
def _charge_all(count: int) -> TextClause:
    """One guarded UPDATE charging `count` resources: every row is charged, or none is."""
    amount = "CASE {col} " + " ".join(f"WHEN :r{i} THEN :n{i}" for i in range(count)) + " END"
    names = ", ".join(f":r{i}" for i in range(count))
    return text(
        f"UPDATE quotas SET used = used + {amount.format(col='resource')} "
        f"WHERE tenant_id = :t AND pool_id = :p AND resource IN ({names}) "
        "AND (SELECT count(*) FROM quotas c WHERE c.tenant_id = :t AND c.pool_id = :p "
        f"AND c.resource IN ({names})) = {count} "
        "AND NOT EXISTS (SELECT 1 FROM quotas q WHERE q.tenant_id = :t AND q.pool_id = :p "
        f'AND q.resource IN ({names}) AND q."limit" IS NOT NULL '
        f'AND q.used + {amount.format(col="q.resource")} > q."limit")'
    )


def _charge_at_once(
    session: Session, tenant_id: str, pool_id: str, wanted: Mapping[str, int]
) -> bool:
    """SQLite (writers serialized): all rows in one statement; False when any is missing or would overrun."""
    params: dict[str, object] = {"t": tenant_id, "p": pool_id}
    for i, resource in enumerate(sorted(wanted)):
        params[f"r{i}"], params[f"n{i}"] = resource, wanted[resource]
    updated = session.execute(_charge_all(len(wanted)), params)
    return bool(updated.rowcount == len(wanted))  # type: ignore[attr-defined]


def charge(session: Session, tenant_id: str, pool_id: str, amounts: Mapping[str, int]) -> None:
    """Charge the tenant's quota in the pool; QUOTA_EXCEEDED (and nothing charged) when any would overrun."""
    wanted = {r: n for r, n in amounts.items() if n > 0}
    if not wanted:
        return
    sqlite = is_sqlite(session.get_bind().engine)
    if sqlite and _charge_at_once(session, tenant_id, pool_id, wanted):
        return
    _ensure_rows(session, tenant_id, pool_id, sorted(wanted))
    if sqlite and _charge_at_once(session, tenant_id, pool_id, wanted):
        return
    for resource in sorted(wanted):  # a fixed order: concurrent chargers lock rows alike
        amount = wanted[resource]
        updated = session.execute(
            text(
                "UPDATE quotas SET used = used + :n WHERE tenant_id = :t AND pool_id = :p "
                'AND resource = :r AND ("limit" IS NULL OR used + :n <= "limit")'
            ),
            {"n": amount, "t": tenant_id, "p": pool_id, "r": resource},
        )
        if updated.rowcount == 0:  # type: ignore[attr-defined]
            row = session.get(Quota, (tenant_id, pool_id, resource))
            limit, used = (row.limit, row.used) if row else (0, 0)
            raise QuotaExceededError(
                f"quota exceeded for {resource} in this pool: {used} of {limit} used, {amount} more requested",
                {"resource": resource, "limit": limit, "used": used, "requested": amount},
            )


def lock_quotas(session: Session, tenant_id: str, pool_id: str) -> None:
    """Lock all of a tenant's quota rows in a pool, in resource order (PostgreSQL).

    The lock order of every writer is: quota rows (sorted), then node rows (vcpu, memoryGiB,
    diskGiB), then GPU atoms (by id), and last the pool's booking version row (gpu_versions).
    A caller that both charges and refunds takes them all first.
    """
    if not is_sqlite(session.get_bind().engine):
        session.execute(
            text(
                "SELECT resource FROM quotas WHERE tenant_id = :t AND pool_id = :p ORDER BY resource FOR UPDATE"
            ),
            {"t": tenant_id, "p": pool_id},
        )


def refund(session: Session, tenant_id: str, pool_id: str, amounts: Mapping[str, int]) -> None:
    """Give back what a charge took (never below zero)."""
    for resource in sorted(amounts):
        amount = amounts[resource]
        if amount <= 0:
            continue
        session.execute(
            text(
                "UPDATE quotas SET used = CASE WHEN used >= :n THEN used - :n ELSE 0 END "
                "WHERE tenant_id = :t AND pool_id = :p AND resource = :r"
            ),
            {"n": amount, "t": tenant_id, "p": pool_id, "r": resource},
        )


def quota_charge_of(shape: Mapping[str, int]) -> dict[str, int]:
    """What a shape counts against quota (document 000): vcpu, memoryGiB, diskGiB, and gpu when gpus > 0."""
    charge_ = {
        "vcpu": int(shape.get("vcpu", 0)),
        "memoryGiB": int(shape.get("memoryGiB", 0)),
        "diskGiB": int(shape.get("diskGiB", 0)),
    }
    if int(shape.get("gpus", 0)) > 0:
        charge_["gpu"] = int(shape["gpus"])
    return charge_

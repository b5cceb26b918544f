"""Quota charges in SQL: used + charge <= limit in the UPDATE's WHERE; unlimited rows charged on stripes (PostgreSQL)."""

from __future__ import annotations

import random
from collections.abc import Mapping
from functools import lru_cache
from typing import Protocol

from sqlalchemy import bindparam, text
from sqlmodel import Session

from bcfleet.errors import QuotaExceededError
from bcfleet.store.driver_sql import DriverStatement, SentRows
from bcfleet.store.engine import is_sqlite
from bcfleet.store.faults import RunAgainCarefully, refuse_unless
from bcfleet.store.models import Quota

_ENSURE_ROW = text(
    'INSERT INTO quotas (tenant_id, pool_id, resource, "limit", used, managed) '
    "VALUES (:t, :p, :r, NULL, 0, false) ON CONFLICT DO NOTHING"
)


def _ensure_rows(session: Session, tenant_id: str, pool_id: str, resources: list[str]) -> None:
    """Quota rows exist for every charged resource (no limit: unlimited), whoever races to make them."""
    session.execute(_ENSURE_ROW, [{"t": tenant_id, "p": pool_id, "r": r} for r in resources])


@lru_cache(maxsize=64)
def _charge_all(count: int) -> DriverStatement:
    """One UPDATE charging `count` resources: all of them, when each has its row and its limit
    takes the charge, or none.

    The guard is a subquery that reads only bound values, so SQLite evaluates it once for the
    statement, not once a row. The rows are picked by a CASE rather than `resource IN (...)`,
    and the outcome is read from the count of rows changed rather than RETURNING: SQLite
    builds an in-memory table for either on every run.
    """
    amount = "CASE resource " + " ".join(f"WHEN :r{i} THEN :n{i}" for i in range(count)) + " END"
    picked = "CASE resource " + " ".join(f"WHEN :r{i} THEN 1" for i in range(count)) + " ELSE 0 END"
    taken = (
        "CASE o.resource "
        + " ".join(
            f'WHEN :r{i} THEN (o."limit" IS NULL OR o.used + :n{i} <= o."limit")'
            for i in range(count)
        )
        + " ELSE 0 END"
    )
    return DriverStatement(
        text(
            f"UPDATE quotas SET used = used + {amount} "
            f"WHERE tenant_id = :t AND pool_id = :p AND {picked} "
            "AND (SELECT count(*) FROM quotas o WHERE o.tenant_id = :t AND o.pool_id = :p "
            f"AND {taken}) = {count}"
        )
    )


def _charge_at_once(
    session: Session, tenant_id: str, pool_id: str, wanted: Mapping[str, int]
) -> bool:
    """SQLite (writers serialized): every row in one statement; whether they were charged.

    When not, nothing was: a resource has no row yet, or its limit refused the charge.
    """
    params: dict[str, object] = {"t": tenant_id, "p": pool_id}
    for (resource_name, amount_name), resource in zip(
        _param_names(len(wanted)), sorted(wanted), strict=True
    ):
        params[resource_name], params[amount_name] = resource, wanted[resource]
    return _charge_all(len(wanted)).run(session, params).rowcount == len(wanted)


@lru_cache(maxsize=64)
def _param_names(count: int) -> tuple[tuple[str, str], ...]:
    """_charge_all's parameter names of each resource and its amount (r0 and n0, …)."""
    return tuple((f"r{i}", f"n{i}") for i in range(count))


def charge(session: Session, tenant_id: str, pool_id: str, amounts: Mapping[str, int]) -> None:
    """Charge the tenant's quota in the pool; QUOTA_EXCEEDED when any would overrun.

    Rows charged before the refusal stay charged in the transaction: the error ends it, or the
    savepoint the caller placed around it (jobs/spares.py), and the rollback takes them back.
    """
    start_charge(session, tenant_id, pool_id, amounts)()


class FinishCharge(Protocol):
    """Finishes a charge start_charge began (QUOTA_EXCEEDED there); called again, it does nothing.

    It answers whether the charge's first statement left nothing to finish: on PostgreSQL,
    whether every row charged had no limit and was charged on its stripes (True on SQLite,
    which charges at once). A caller may expect the tenant's next charge in the pool to go
    the same way (PlacementContext.charges_striped).
    behind_claim: the caller sent a claim (node row locks) after the charge's first statement
    and before this. When that statement left something to finish, finishing would lock quota
    rows after node rows, against the lock order (lock_quotas), so RunAgainCarefully is raised
    instead: the call runs again and finishes its charge before any claim.
    """

    def __call__(self, *, behind_claim: bool = False) -> bool: ...


def start_charge(
    session: Session,
    tenant_id: str,
    pool_id: str,
    amounts: Mapping[str, int],
    *,
    guarded: bool = False,
) -> FinishCharge:
    """charge() in two steps: the call returned finishes it (FinishCharge).

    On PostgreSQL the stripe upsert is sent to wait for the caller's next statement (a
    placement's candidate search, or its claim: one round trip for both). The caller finishes
    the charge before it takes a lock that comes after the quota rows' in the lock order (node
    rows, GPU atoms, see lock_quotas), as what finish does (the rows with a limit) locks quota
    rows, or behind that lock with behind_claim.

    guarded (PostgreSQL, a caller that may run again carefully): every row is expected to be
    charged on its stripes (PlacementContext.charges_striped), so the upsert is sent guarded
    and its answer never read; when a row has a limit (or none yet) the transaction fails and
    the call runs again (store/faults.py, refuse_unless), and finishing has nothing to do.
    """
    wanted = {r: n for r, n in amounts.items() if n > 0}
    if not wanted:
        return charged_already
    if is_sqlite(session.get_bind().engine):
        if not _charge_at_once(session, tenant_id, pool_id, wanted):
            # Rows made, then charged one by one: QUOTA_EXCEEDED at the first refusal.
            _ensure_rows(session, tenant_id, pool_id, sorted(wanted))
            _charge_rows(session, tenant_id, pool_id, wanted)
        return charged_already
    if guarded:
        _stripe_upsert(len(wanted), guarded=True).send(
            session, _stripe_params(tenant_id, pool_id, wanted)
        )
        return charged_already
    sent = _send_to_stripe(session, tenant_id, pool_id, wanted)
    outcome: bool | None = None

    def finish(*, behind_claim: bool = False) -> bool:
        nonlocal outcome
        if outcome is not None:
            return outcome
        striped = set(sent.rows().scalars())
        rest = {r: n for r, n in wanted.items() if r not in striped}
        if rest and behind_claim:
            raise RunAgainCarefully
        outcome = not rest
        if rest:
            _ensure_rows(session, tenant_id, pool_id, sorted(rest))
            striped = _add_to_stripe(session, tenant_id, pool_id, rest)
            _charge_rows(
                session, tenant_id, pool_id, {r: n for r, n in rest.items() if r not in striped}
            )
        return outcome

    return finish


def charged_already(*, behind_claim: bool = False) -> bool:  # noqa: ARG001 - FinishCharge
    """A charge finished already (nothing to charge, charged on SQLite at once, or by the caller)."""
    return True


_CHARGE_ROW = text(
    "UPDATE quotas SET used = used + :n WHERE tenant_id = :t AND pool_id = :p "
    'AND resource = :r AND ("limit" IS NULL OR used + :n <= "limit")'
)


def _charge_rows(session: Session, tenant_id: str, pool_id: str, wanted: Mapping[str, int]) -> None:
    """One guarded UPDATE per quota row, in resource order; QUOTA_EXCEEDED at the first refusal."""
    for resource in sorted(wanted):  # a fixed order: concurrent chargers lock rows alike
        amount = wanted[resource]
        params = {"n": amount, "t": tenant_id, "p": pool_id, "r": resource}
        if session.connection().execute(_CHARGE_ROW, params).rowcount == 0:
            row = session.get(Quota, (tenant_id, pool_id, resource))
            limit, used = (row.limit, row.used) if row else (0, 0)
            raise QuotaExceededError(
                f"quota exceeded for {resource} in this pool: {used} of {limit} used, {amount} more requested",
                {"resource": resource, "limit": limit, "used": used, "requested": amount},
            )


STRIPES = 32


@lru_cache(maxsize=64)
def _stripe_upsert(count: int, *, guarded: bool = False) -> DriverStatement:
    """Add to one stripe of each unlimited row among `count` resources (PostgreSQL), in one statement.

    The quota rows are read FOR SHARE: chargers do not wait for one another, while setting a
    limit (FOR UPDATE, then folding the stripes into the row) waits for every charge in flight,
    and a charge that waited sees the limit and is left to the guarded row UPDATE. The resources
    it returns are charged; a missing row or one with a limit is not.

    The stripe is the first one (from a random start) whose row of the first resource no other
    charge holds (SKIP LOCKED), or the random one while none is free or made yet: concurrent
    chargers of one tenant then seldom wait on one another's stripe.

    guarded: it returns nothing, and fails the transaction unless every resource was charged
    (refuse_unless): a charge sent with no one to read its answer.
    """
    values = ", ".join(f"(:r{i}, :n{i})" for i in range(count))
    upsert = (
        "INSERT INTO quota_stripes (tenant_id, pool_id, resource, stripe, used) "
        "SELECT :t, :p, w.resource, coalesce((SELECT stripe FROM free), :s), w.n "
        "FROM wanted w JOIN open_rows o ON o.resource = w.resource "
        "ORDER BY w.resource "
        "ON CONFLICT (tenant_id, pool_id, resource, stripe) "
        "DO UPDATE SET used = quota_stripes.used + excluded.used RETURNING resource"
    )
    if guarded:
        guard = refuse_unless(f"count(*) = {count}", "the stripe charge", "count(*)")
        upsert = f", charged AS ({upsert}) SELECT {guard} FROM charged"
    else:
        upsert = " " + upsert
    return DriverStatement(
        text(
            "WITH wanted (resource, n) AS (VALUES " + values + "), "
            "open_rows AS MATERIALIZED (SELECT q.resource FROM quotas q WHERE q.tenant_id = :t AND q.pool_id = :p "
            'AND q.resource IN (SELECT resource FROM wanted) AND q."limit" IS NULL '
            "ORDER BY q.resource FOR SHARE), "
            "free AS MATERIALIZED (SELECT f.stripe FROM quota_stripes f WHERE f.tenant_id = :t "
            f"AND f.pool_id = :p AND f.resource = :r0 ORDER BY (f.stripe + :s) % {STRIPES} "
            "LIMIT 1 FOR UPDATE SKIP LOCKED)" + upsert
        )
    )


def _add_to_stripe(
    session: Session, tenant_id: str, pool_id: str, amounts: Mapping[str, int]
) -> set[str]:
    """Add amounts (negative to give back) to a random stripe of the unlimited rows; the resources done."""
    return set(_send_to_stripe(session, tenant_id, pool_id, amounts).rows().scalars())


def _send_to_stripe(
    session: Session, tenant_id: str, pool_id: str, amounts: Mapping[str, int]
) -> SentRows:
    """_add_to_stripe, its answer (the resources done) read when the caller needs it."""
    return _stripe_upsert(len(amounts)).send_reading(
        session, _stripe_params(tenant_id, pool_id, amounts)
    )


def _stripe_params(tenant_id: str, pool_id: str, amounts: Mapping[str, int]) -> dict[str, object]:
    params: dict[str, object] = {"t": tenant_id, "p": pool_id, "s": random.randrange(STRIPES)}
    for i, resource in enumerate(sorted(amounts)):
        params[f"r{i}"], params[f"n{i}"] = resource, int(amounts[resource])
    return params


def lock_quotas(session: Session, tenant_id: str, pool_id: str) -> list[str]:
    """Lock all of a tenant's quota rows in a pool, in resource order (PostgreSQL); the resources locked.

    The lock order of every writer is: quota rows (sorted), then their stripes, then node rows
    (vcpu, memoryGiB, diskGiB), then GPU atoms (by id), and last the pool's booking version
    row (gpu_versions).
    A caller that both charges and refunds takes them all first.
    """
    if is_sqlite(session.get_bind().engine):
        return []
    return list(
        session.execute(
            text(
                "SELECT resource FROM quotas WHERE tenant_id = :t AND pool_id = :p ORDER BY resource FOR UPDATE"
            ),
            {"t": tenant_id, "p": pool_id},
        ).scalars()
    )


def fold_stripes(session: Session, tenant_id: str, pool_id: str) -> None:
    """Move the stripes of the tenant's quota rows in a pool into the rows (before a limit is set or cleared).

    The rows are locked FOR UPDATE first, which waits for every charge in flight (they hold
    them FOR SHARE) and holds new ones back until commit, so the sum counts every charge.
    """
    locked = lock_quotas(session, tenant_id, pool_id)
    if not locked:
        return
    mine = "tenant_id = :t AND pool_id = :p AND resource IN :rs"
    params = {"t": tenant_id, "p": pool_id, "rs": locked}
    session.execute(
        text(
            "UPDATE quotas SET used = used + s.total FROM (SELECT resource, sum(used) AS total "
            f"FROM quota_stripes WHERE {mine} GROUP BY resource) s "
            "WHERE quotas.tenant_id = :t AND quotas.pool_id = :p AND quotas.resource = s.resource"
        ).bindparams(bindparam("rs", expanding=True)),
        params,
    )
    session.execute(
        text(f"DELETE FROM quota_stripes WHERE {mine}").bindparams(bindparam("rs", expanding=True)),
        params,
    )


def quota_usage(
    session: Session, tenant_id: str | None = None, *, pool_id: str | None = None
) -> dict[tuple[str, str, str], int]:
    """What each quota counts as used: its row's `used` and its stripes, by (tenant, pool, resource)."""
    where = " AND ".join(
        f"{name} = :{name}"
        for name, value in (("tenant_id", tenant_id), ("pool_id", pool_id))
        if value
    )
    totals: dict[tuple[str, str, str], int] = {}
    for table in ("quotas", "quota_stripes"):
        rows = session.execute(
            text(
                f"SELECT tenant_id, pool_id, resource, used FROM {table}"
                + (f" WHERE {where}" if where else "")
            ),
            {"tenant_id": tenant_id, "pool_id": pool_id},
        ).all()
        for tenant, pool, resource, used in rows:
            key = (tenant, pool, resource)
            totals[key] = totals.get(key, 0) + int(used)
    return totals


def refund(session: Session, tenant_id: str, pool_id: str, amounts: Mapping[str, int]) -> None:
    """Give back what a charge took (a row with a limit never below zero)."""
    given = {r: n for r, n in amounts.items() if n > 0}
    if not given:
        return
    if not is_sqlite(session.get_bind().engine):
        striped = _add_to_stripe(session, tenant_id, pool_id, {r: -n for r, n in given.items()})
        given = {r: n for r, n in given.items() if r not in striped}
    for resource in sorted(given):
        session.execute(
            text(
                "UPDATE quotas SET used = CASE WHEN used >= :n THEN used - :n ELSE 0 END "
                "WHERE tenant_id = :t AND pool_id = :p AND resource = :r"
            ),
            {"n": given[resource], "t": tenant_id, "p": pool_id, "r": resource},
        )

"""The `spares` job (every 30 s): keep each enabled size's spare instances in the tenant's serverless pool.

`run_spares(fleet, now)` is what the scheduler and `fleet jobs tick` call. Per
tenant with compute settings it runs one transaction: lock the tenant's compute
changes (so a deploy taking a spare and this job never pass each other), load
its live spares, ask the pure `plan_spares` what to delete and how many to
place, take the quota rows it will touch (placement's one lock order: quota
rows, then node rows, then GPU atoms), then delete (releasing host capacity
and quota) and place through hosted placement with the size's service shape, a size's
missing spares as one batch (placement/batch_placer.py).
It records when it looked at the tenant, which is what NO_CAPACITY's
Retry-After counts from. A placement
refused by quota is rolled back alone (a savepoint) and counted; a spare no
host fits stays pending with its Unschedulable reason, counts as kept, and is
placed by hosted placement's retry of pending instances.

Faults stay local (bcfleet/jobs/faults.py): a spare whose release raises (a row written by
hand, say) is rolled back alone (a savepoint) and carries a JobFailed condition; a tenant whose
pass raises otherwise is rolled back alone and its fault shows as `lastError` in its compute
settings. Both are named by `fleet doctor`, count as `failed`, and the others are tended.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from sqlmodel import Session, col, select

from bcfleet.domain.spares_plan import SpareView, plan_spares
from bcfleet.domain.states import InstanceState
from bcfleet.errors import QuotaExceededError
from bcfleet.jobs.faults import Failed, FaultLog, Item, ends_the_run
from bcfleet.placement.quotas import lock_quotas
from bcfleet.placement.serverless import (
    is_ready,
    live_spares,
    place_spare,
    place_spares,
    release,
)
from bcfleet.placement.tenant_compute import load_settings, lock_compute
from bcfleet.store.models import Instance, Pool
from bcfleet.store.models.compute import ComputeSettingsRow

if TYPE_CHECKING:
    from bcfleet.jobs.handle import JobHandle

JOB_NAME = "spares"
COUNTS = ("tenants", "placed", "unschedulable", "released", "quotaExceeded", "failed")


def run_spares(fleet: JobHandle, now: datetime) -> dict[str, int]:
    """Tend every tenant's spares, each in its own transaction; counts as in COUNTS."""
    with fleet.read() as session:
        tenants = session.exec(
            select(ComputeSettingsRow.tenant_id).order_by(col(ComputeSettingsRow.tenant_id))
        ).all()
    totals: Counter[str] = Counter(dict.fromkeys(COUNTS, 0))
    faults = FaultLog(fleet, JOB_NAME, ("tenant", "instance"))
    faults.prune("instance", Instance.id, col(Instance.state) != InstanceState.DELETED)
    faults.prune(
        "tenant", ComputeSettingsRow.tenant_id, col(ComputeSettingsRow.tenant_id).is_not(None)
    )
    for tenant_id in tenants:
        work = partial(tend_tenant, fleet=fleet, tenant_id=tenant_id, now=now, faults=faults)
        result = faults.run(Item("tenant", tenant_id, tenant_id), work)
        if not isinstance(result, Failed):
            totals.update(result)
        totals["tenants"] += 1
    totals["failed"] = faults.failed
    return {name: totals[name] for name in COUNTS}


def _view(spare: Instance) -> SpareView:
    return SpareView(
        id=spare.id,
        size=spare.size,
        pool_id=spare.pool_id,
        placed=spare.node_id is not None,
        ready=is_ready(spare),
        order=f"{spare.created_at.isoformat()} {spare.id}",
        stopped=spare.state == InstanceState.STOPPED,
    )


def tend_tenant(
    session: Session,
    fleet: JobHandle,
    tenant_id: str,
    now: datetime,
    faults: FaultLog | None = None,
) -> Counter[str]:
    """One tenant's spares, in the caller's transaction; each release in a savepoint of its own."""
    lock_compute(session, tenant_id)
    row, settings = load_settings(session, tenant_id)
    spares = {s.id: s for s in live_spares(session, tenant_id)}
    plan = plan_spares(settings, [_view(s) for s in spares.values()])
    pools = {spares[spare_id].pool_id for spare_id, _ in plan.release}
    if plan.place and settings.serverless_pool:
        pools.add(settings.serverless_pool)
    for pool_id in sorted(pools):  # refunds and charges both: quota rows first, all of them
        lock_quotas(session, tenant_id, pool_id)
    counts: Counter[str] = Counter()
    for spare_id, reason in plan.release:
        released = _release(session, fleet, spares[spare_id], f"spare: {reason}", faults)
        counts["released"] += int(released)
    pool = session.get(Pool, settings.serverless_pool) if settings.serverless_pool else None
    if pool is not None:
        for size, count in plan.place.items():
            counts.update(_place(session, fleet, tenant_id, pool, size, count))
    if row is not None:
        row.spares_checked_at = now
        session.add(row)
    return counts


def _release(
    session: Session, fleet: JobHandle, spare: Instance, reason: str, faults: FaultLog | None
) -> bool:
    """Release one spare; with a FaultLog, a failure stays on that spare and the pass goes on."""
    if faults is None:
        release(session, fleet, spare, reason=reason)
        return True
    item = Item("instance", spare.id, spare.tenant_id)
    savepoint = session.begin_nested()
    try:
        release(session, fleet, spare, reason=reason)
        session.flush()
    except Exception as error:
        savepoint.rollback()
        if ends_the_run(error):
            raise
        faults.keep(session, item, error)
        return False
    savepoint.commit()
    faults.clear(session, item)
    return True


def _place(
    session: Session, fleet: JobHandle, tenant_id: str, pool: Pool, size: str, count: int
) -> Counter[str]:
    """A size's missing spares as one batch (one claim per host); when the quota does not take
    the whole batch, one by one, as many as it takes."""
    counts: Counter[str] = Counter()
    if count <= 0:
        return counts
    savepoint = session.begin_nested()
    try:
        batch = place_spares(session, fleet, tenant_id=tenant_id, pool=pool, size=size, count=count)
    except QuotaExceededError:
        savepoint.rollback()
        return _place_one_by_one(session, fleet, tenant_id, pool, size, count)
    savepoint.commit()
    placed = sum(1 for spare in batch.made if spare["node_id"] is not None)
    counts["placed"] += placed
    counts["unschedulable"] += len(batch.made) - placed
    return counts


def _place_one_by_one(
    session: Session, fleet: JobHandle, tenant_id: str, pool: Pool, size: str, count: int
) -> Counter[str]:
    counts: Counter[str] = Counter()
    for _ in range(count):
        savepoint = session.begin_nested()
        try:
            spare = place_spare(session, fleet, tenant_id=tenant_id, pool=pool, size=size)
        except QuotaExceededError:
            savepoint.rollback()
            counts["quotaExceeded"] += 1
            break
        savepoint.commit()
        counts["placed" if spare.node_id is not None else "unschedulable"] += 1
    return counts

"""The scale-out soak's checks: the database against what the clients were told, invariants, job runs.

Each check returns a list of problems (empty: it holds):
- acknowledged: every acknowledged write is there, once (instances, reservations, services,
  environments, deletes, cancels, starts, moves);
- duplicates: nothing the clients asked for once is there twice (unanswered places included;
  no instance serves two services);
- idempotency: every answer to one idempotency key named the same reservation, and the
  database holds exactly one reservation per key the clients sent;
- invariants: bcfleet.placement.invariants.check_all, and no quota used beyond its limit;
- jobs: each job ran once per due time: a recorded run (ok or error) never starts before the
  due time the run before it set (its start + the interval).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import timedelta
from itertools import pairwise
from typing import Any

from sqlmodel import Session, col, select

from bcfleet.fleet import Fleet
from bcfleet.placement.invariants import check_all
from bcfleet.store.models import Instance, Quota, Reservation
from bcfleet.store.models.compute import FleetEnvironment, Service
from bcfleet.store.models.jobs import JobRun
from bench.scaleout_fleet import TENANT
from bench.scaleout_load import Ledger


def _instances(session: Session, ledger: Ledger) -> tuple[list[str], list[str]]:
    acknowledged, duplicates = [], []
    rows = session.exec(select(Instance).where(Instance.tenant_id == TENANT)).all()
    by_name: dict[str, list[Instance]] = defaultdict(list)
    for row in rows:
        by_name[row.name].append(row)
    for name, instance_id in ledger.placed.items():
        found = [r.id for r in by_name.get(name, [])]
        if found != [instance_id]:
            acknowledged.append(f"instance {name}: acknowledged as {instance_id}, found {found}")
    for name in ledger.unacknowledged_places:
        if len(by_name.get(name, [])) > 1:
            duplicates.append(f"instance {name}: asked once, {len(by_name[name])} rows")
    states = {r.id: r.state for r in rows}
    for instance_id in ledger.deleted:
        if states.get(instance_id) != "deleted":
            acknowledged.append(
                f"instance {instance_id}: delete acknowledged, state {states.get(instance_id)}"
            )
    return acknowledged, duplicates


def _reservations(session: Session, ledger: Ledger) -> tuple[list[str], list[str]]:
    acknowledged, idempotency = [], []
    rows = session.exec(select(Reservation).where(Reservation.tenant_id == TENANT)).all()
    by_key: dict[str, list[Reservation]] = defaultdict(list)
    for row in rows:
        if row.idempotency_key is not None:
            by_key[row.idempotency_key].append(row)
    for key, answered in ledger.reserved.items():
        found = [r.id for r in by_key.get(key, [])]
        if len(found) > 1:
            idempotency.append(f"key {key}: {len(found)} reservations {found}")
        if len(answered) > 1:
            idempotency.append(f"key {key}: answered with {sorted(answered)}")
        if answered and found != sorted(answered):
            acknowledged.append(f"key {key}: acknowledged {sorted(answered)}, found {found}")
    states = {r.id: r.state for r in rows}
    for reservation_id in ledger.cancelled:
        if states.get(reservation_id) not in ("cancelled", "released"):
            acknowledged.append(
                f"reservation {reservation_id}: cancel acknowledged, state {states.get(reservation_id)}"
            )
    return acknowledged, idempotency


def _services(session: Session, ledger: Ledger) -> tuple[list[str], list[str]]:
    acknowledged, duplicates = [], []
    rows = session.exec(select(Service).where(Service.tenant_id == TENANT)).all()
    by_name = {r.name: r for r in rows}
    for name, service_id in ledger.services.items():
        row = by_name.get(name)
        if row is None or row.id != service_id:
            acknowledged.append(
                f"service {name}: acknowledged as {service_id}, found {row and row.id}"
            )
    by_id = {r.id: r for r in rows}
    for service_id in ledger.deployed:
        row = by_id.get(service_id)
        if row is None or not row.deployed or row.instance_id is None:
            acknowledged.append(
                f"service {service_id}: start acknowledged, not deployed on an instance"
            )
    serving = Counter(r.instance_id for r in rows if r.instance_id is not None)
    duplicates += [f"instance {i}: serves {n} services" for i, n in serving.items() if n > 1]
    return acknowledged, duplicates


def _environments(session: Session, ledger: Ledger) -> list[str]:
    rows = session.exec(select(FleetEnvironment).where(FleetEnvironment.tenant_id == TENANT)).all()
    by_name = {r.name: r for r in rows}
    problems = []
    for name, environment_id in ledger.environments.items():
        row = by_name.get(name)
        if row is None or row.id != environment_id:
            problems.append(f"environment {name}: acknowledged as {environment_id}, missing")
        elif row.size not in ledger.environment_sizes[environment_id]:
            problems.append(
                f"environment {name}: size {row.size}, acknowledged {sorted(ledger.environment_sizes[environment_id])}"
            )
    return problems


def _quota_limits(session: Session) -> list[str]:
    rows = session.exec(select(Quota).where(col(Quota.limit).is_not(None))).all()
    return [
        f"quota {q.tenant_id}/{q.pool_id}/{q.resource}: used {q.used} over limit {q.limit}"
        for q in rows
        if q.limit is not None and q.used > q.limit
    ]


def _invariants(session: Session) -> list[str]:
    report = check_all(session)
    found = [f"{name}: {p}" for name, items in report["problems"].items() for p in items]
    return found + _quota_limits(session)


def _jobs(session: Session, interval: float) -> tuple[list[str], dict[str, int]]:
    ran = col(JobRun.outcome).in_(("ok", "error"))  # 'skipped: not available' ran nothing
    query = select(JobRun).where(ran).order_by(col(JobRun.job), col(JobRun.started_at))
    runs = session.exec(query).all()
    problems, counts = [], Counter(r.job for r in runs)
    every = timedelta(seconds=interval)
    for before, after in pairwise(runs):
        if before.job == after.job and after.started_at < before.started_at + every:
            problems.append(
                f"job {after.job}: run {after.id} ({after.holder}) started "
                f"{(after.started_at - before.started_at).total_seconds():.3f} s after run "
                f"{before.id} ({before.holder}), before its due time"
            )
    return problems, dict(counts)


def verify(url: str, ledger: Ledger, *, job_interval: float) -> dict[str, Any]:
    """Every check's problems, and the number of job runs per job."""
    fleet = Fleet.open(url)
    try:
        with fleet.read() as session:
            placed, placed_twice = _instances(session, ledger)
            reserved, idempotency = _reservations(session, ledger)
            services, served_twice = _services(session, ledger)
            environments = _environments(session, ledger)
            invariants = _invariants(session)
            jobs, job_runs = _jobs(session, job_interval)
    finally:
        fleet.close()
    problems = {
        "acknowledged": placed + reserved + services + environments,
        "duplicates": placed_twice + served_twice,
        "idempotency": idempotency,
        "invariants": invariants,
        "jobs": jobs,
    }
    return {"problems": problems, "jobRuns": job_runs}

"""Builders for metering tests: allocations, instances and reservations inserted as rows, as placement leaves them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from sqlmodel import select

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.domain.usage import (
    MeterRate,
    UsageRecord,
    meters_for_instance,
    meters_for_reservation,
    meters_for_spare,
    usage_records,
)
from bcfleet.fleet import Fleet
from bcfleet.store.models import Allocation, Host, Instance, Pool, Reservation, Tenant
from bcfleet.store.models.usage import DeadLetter, UsageWindow

OP = LOCAL_OPERATOR


def tenant(fleet: Fleet, tenant_id: str = "acme") -> str:
    with fleet.write() as session:
        if session.get(Tenant, tenant_id) is None:
            session.add(Tenant(id=tenant_id, name=tenant_id, created_at=fleet.now()))
    return tenant_id


def pool(
    fleet: Fleet, name: str = "vps-fra", *, gpu_model: str | None = "L40S", kind: str = "vps-host"
) -> str:
    """A pool row owned by root; returns its id."""
    pool_id = fleet.new_id("pool")
    with fleet.write() as session:
        session.add(
            Pool(
                id=pool_id,
                name=name,
                kind=kind,
                owner_tenant_id="root",
                gpu_model=gpu_model,
                created_at=fleet.now(),
            )
        )
    return pool_id


def node(fleet: Fleet, pool_id: str, name: str = "fra-01") -> str:
    node_id = fleet.new_id("node")
    with fleet.write() as session:
        session.add(Host(id=node_id, name=name, pool_id=pool_id, created_at=fleet.now()))
    return node_id


@dataclass(frozen=True)
class Placed:
    """What the builder inserted, with the records the domain arithmetic expects of it."""

    subject: str
    rates: tuple[MeterRate, ...]
    start: datetime
    end: datetime | None

    def expected(self, until: datetime) -> tuple[UsageRecord, ...]:
        return usage_records(self.subject, self.rates, self.start, self.end, until=until)


def instance(
    fleet: Fleet,
    pool_id: str,
    node_id: str,
    *,
    start: datetime,
    end: datetime | None = None,
    tenant_id: str = "acme",
    vcpu: int = 4,
    memory_gib: int = 8,
    gpus: int = 0,
    purpose: str = "tenant",
    gpu_model: str | None = "L40S",
) -> Placed:
    """A hosted instance placed at start (its allocation) and, when end is given, deleted then."""
    instance_id = fleet.new_id("ins")
    allocation_id = fleet.new_id("alloc")
    shape = {"vcpu": vcpu, "memoryGiB": memory_gib, "diskGiB": 40, "gpus": gpus}
    with fleet.write() as session:
        session.add(
            Allocation(
                id=allocation_id,
                node_id=node_id,
                consumer_kind="instance",
                consumer_id=instance_id,
                tenant_id=tenant_id,
                pool_id=pool_id,
                claims={"vcpu": vcpu, "memoryGiB": memory_gib, "diskGiB": 40},
                starts_at=start,
                released_at=end,
                release_reason="deleted" if end else None,
            )
        )
        session.add(
            Instance(
                id=instance_id,
                tenant_id=tenant_id,
                pool_id=pool_id,
                name=instance_id,
                state="deleted" if end else "running",
                shape=shape,
                node_id=node_id,
                allocation_id=allocation_id,
                purpose=purpose,
                size="large" if purpose != "tenant" else None,
                created_at=start,
                updated_at=end or start,
                deleted_at=end,
            )
        )
    if purpose in ("spare", "service"):
        rates = meters_for_spare()
    else:
        rates = meters_for_instance(_Shape(vcpu, memory_gib, gpus), gpu_model)
    return Placed(instance_id, rates, start, end)


@dataclass(frozen=True)
class _Shape:
    vcpu: int
    memory_gib: int
    gpus: int


def provider_instance(
    fleet: Fleet, pool_id: str, *, start: datetime, tenant_id: str = "acme"
) -> str:
    """A provider instance: no allocation, so nothing to meter."""
    instance_id = fleet.new_id("ins")
    with fleet.write() as session:
        session.add(
            Instance(
                id=instance_id,
                tenant_id=tenant_id,
                pool_id=pool_id,
                name=instance_id,
                state="running",
                shape={"vcpu": 2, "memoryGiB": 4, "diskGiB": 40, "offerId": "cx23"},
                created_at=start,
                updated_at=start,
            )
        )
    return instance_id


def reservation(
    fleet: Fleet,
    pool_id: str,
    *,
    starts_at: datetime,
    ends_at: datetime,
    activated_at: datetime | None,
    released_at: datetime | None = None,
    tenant_id: str = "acme",
    gpus: int = 1,
    nodes: int = 1,
    spot: bool = False,
    state: str | None = None,
    gpu_model: str | None = "L40S",
    deadline: datetime | None = None,
) -> Placed:
    """A reservation row as the lifecycle leaves it (active, released, or requeued when never activated)."""
    reservation_id = fleet.new_id("rsv")
    if state is None:
        state = "released" if released_at else ("active" if activated_at else "pending")
    with fleet.write() as session:
        session.add(
            Reservation(
                id=reservation_id,
                tenant_id=tenant_id,
                pool_id=pool_id,
                gpus=gpus,
                nodes=nodes,
                spot=spot,
                state=state,
                requested_start=starts_at,
                duration_seconds=int((ends_at - starts_at).total_seconds()),
                starts_at=starts_at if activated_at or state != "pending" else None,
                ends_at=ends_at if activated_at or state != "pending" else None,
                deadline=deadline,
                created_at=starts_at,
                updated_at=starts_at,
                activated_at=activated_at,
                released_at=released_at,
            )
        )
    end = ends_at if released_at is None else min(ends_at, released_at)
    rates = meters_for_reservation(gpus * nodes, gpu_model, spot) if activated_at else ()
    return Placed(reservation_id, rates, activated_at or starts_at, end)


def usage_rows(
    fleet: Fleet, subject: str | None = None
) -> list[tuple[str, str, datetime, Decimal]]:
    """Every written window as (subject, meter, window_start, quantity), sorted."""
    with fleet.read() as session:
        query = select(UsageWindow)
        if subject is not None:
            query = query.where(UsageWindow.subject_id == subject)
        rows = session.exec(query).all()
    return sorted((r.subject_id, r.meter, r.window_start, r.quantity) for r in rows)


def dead_rows(fleet: Fleet) -> list[DeadLetter]:
    with fleet.read() as session:
        return list(session.exec(select(DeadLetter).order_by(DeadLetter.id)).all())  # type: ignore[arg-type]


def as_rows(records: Any) -> list[tuple[str, str, datetime, Decimal]]:
    """Domain UsageRecords in usage_rows' shape, for comparing."""
    return sorted((r.subject, r.meter, r.window_start, r.quantity) for r in records)


def standard_meters(fleet: Fleet, *extra: str) -> None:
    names = ["vps.vcpu.hours", "vps.memory.gib.hours", "credits", "gpu.l40s.hours", *extra]
    fleet.api.meters.ensure(OP, names)


def meter_until(fleet: Fleet, until: datetime) -> dict[str, int]:
    """Run vps.usage at the moment every window ending by `until` has settled."""
    from bcfleet.jobs.vps_usage import SETTLE, run_vps_usage

    return run_vps_usage(fleet, until + SETTLE)


def expected_rows(
    placed: list[Placed], until: datetime
) -> list[tuple[str, str, datetime, Decimal]]:
    """What the domain arithmetic says every placed subject bills by `until`."""
    return as_rows([record for p in placed for record in p.expected(until)])

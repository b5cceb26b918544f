"""Serverless instances of document 004's sizes in SQL: their shape, the spares of a size, taking one.

Called by the `spares` job (keeping each size's spares, placed in batches) and by the services
API (a deploy takes a ready spare at once). A spare is an instance with
purpose 'spare' and a size; it is ready once its host agent said so
(`ready_at`). Taking it is a guarded UPDATE (`… WHERE purpose = 'spare'`), so
two deploys never take the same spare, on SQLite or PostgreSQL: the loser of
a race moves on to the next candidate.

Disk: the document gives a size's vCPU and memory only. A service replica also
needs a root disk for its image and scratch space; every size gets
SERVICE_DISK_GIB (20 GiB), which is what placement claims on the host.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import update
from sqlmodel import Session, col, select

from bcfleet.domain.sizes import SIZES, parse_size
from bcfleet.domain.states import InstanceState
from bcfleet.placement.batch_placer import Batch, place_batch
from bcfleet.placement.instance_placer import place_instance, release_instance
from bcfleet.store.models import Instance, Pool

if TYPE_CHECKING:
    from bcfleet.placement.handle import PlacementHandle

SERVICE_DISK_GIB = 20
"""The root disk of a service replica, the same for every size."""

SPARE = "spare"
SERVICE = "service"
TAKE_CANDIDATES = 8


def service_shape(size: str) -> dict[str, Any]:
    """The instance shape of a size: its service vCPU and memory, SERVICE_DISK_GIB, no GPU."""
    compute = SIZES[parse_size(size)].service
    return {
        "vcpu": compute.vcpu,
        "memoryGiB": compute.memory_gib,
        "diskGiB": SERVICE_DISK_GIB,
        "gpus": 0,
    }


def live_spares(session: Session, tenant_id: str) -> list[Instance]:
    """The tenant's spares that are not deleted, oldest first."""
    return list(
        session.exec(
            select(Instance)
            .where(
                Instance.tenant_id == tenant_id,
                Instance.purpose == SPARE,
                Instance.state != InstanceState.DELETED,
            )
            .order_by(col(Instance.created_at), col(Instance.id))
        ).all()
    )


def is_ready(instance: Instance) -> bool:
    return instance.state == InstanceState.RUNNING and instance.ready_at is not None


def place_spare(
    session: Session, fleet: PlacementHandle, *, tenant_id: str, pool: Pool, size: str
) -> Instance:
    """Admit and place one spare of a size (pending with Unschedulable when no host fits)."""
    return place_instance(
        session,
        fleet,
        tenant_id=tenant_id,
        pool=pool,
        shape=service_shape(size),
        name=f"spare-{size}",
        flavor_id=None,
        purpose=SPARE,
        size=size,
    )


def place_spares(
    session: Session,
    fleet: PlacementHandle,
    *,
    tenant_id: str,
    pool: Pool,
    size: str,
    count: int,
) -> Batch:
    """Admit and place `count` spares of a size as one batch (placement/batch_placer.py): the
    quota charged for all at once (QUOTA_EXCEEDED: none placed), those no host fits pending
    with Unschedulable, as place_spare leaves one."""
    return place_batch(
        session,
        fleet,
        tenant_id=tenant_id,
        pool=pool,
        shape=service_shape(size),
        names=[f"spare-{size}"] * count,
        flavor_id=None,
        purpose=SPARE,
        size=size,
        keep_pending=True,
    )


def place_for_service(
    session: Session,
    fleet: PlacementHandle,
    *,
    tenant_id: str,
    pool: Pool,
    size: str,
    service_name: str,
) -> Instance:
    """Start an instance from scratch for one service (a streaming deploy that found no spare)."""
    return place_instance(
        session,
        fleet,
        tenant_id=tenant_id,
        pool=pool,
        shape=service_shape(size),
        name=f"svc-{service_name}",
        flavor_id=None,
        purpose=SERVICE,
        size=size,
    )


def _take(
    session: Session, fleet: PlacementHandle, tenant_id: str, size: str, *, ready: bool
) -> Instance | None:
    ready_filter = (
        col(Instance.ready_at).is_not(None) if ready else col(Instance.ready_at).is_(None)
    )
    candidates = session.exec(
        select(Instance.id)
        .where(
            Instance.tenant_id == tenant_id,
            Instance.purpose == SPARE,
            Instance.size == size,
            Instance.state == InstanceState.RUNNING,
            ready_filter,
        )
        .order_by(col(Instance.created_at), col(Instance.id))
        .limit(TAKE_CANDIDATES)
    ).all()
    now = fleet.now()
    for instance_id in candidates:
        taken = session.execute(
            update(Instance)
            .where(
                col(Instance.id) == instance_id,
                col(Instance.purpose) == SPARE,
                col(Instance.state) == InstanceState.RUNNING,
            )
            .values(purpose=SERVICE, updated_at=now)
            .execution_options(synchronize_session=False)
        )
        if taken.rowcount == 1:  # type: ignore[attr-defined]
            return session.get(Instance, instance_id, populate_existing=True)
    return None


def take_ready_spare(
    session: Session, fleet: PlacementHandle, *, tenant_id: str, size: str
) -> Instance | None:
    """Assign a ready spare of the size to a service (purpose 'service'); None when none is free."""
    return _take(session, fleet, tenant_id, parse_size(size), ready=True)


def take_booting_spare(
    session: Session, fleet: PlacementHandle, *, tenant_id: str, size: str
) -> Instance | None:
    """Assign a placed spare that is still booting; None when there is none."""
    return _take(session, fleet, tenant_id, parse_size(size), ready=False)


def release(session: Session, fleet: PlacementHandle, instance: Instance, *, reason: str) -> None:
    """Delete a spare or service instance: its host capacity and quota go back."""
    if instance.state != InstanceState.DELETED:
        release_instance(session, fleet, instance, reason=reason)

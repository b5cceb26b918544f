"""Short, guarded write transactions of providers.reconcile: record a server, write a problem, forget a server.

Each re-reads the instance under a row lock and decides from what it finds
then, not from the job's earlier snapshot: the instance may have been deleted,
or recorded by another pass, while the provider was answering.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from sqlmodel import col, select

from bcfleet.domain.provider_plan import SERVER_GONE
from bcfleet.domain.states import INSTANCE_LIVE, InstanceState
from bcfleet.placement.conditions import clear_condition, set_condition
from bcfleet.store.event_log import emit
from bcfleet.store.id_chunks import id_chunks
from bcfleet.store.models import Instance

if TYPE_CHECKING:
    from bcfleet.jobs.handle import JobHandle

PROBLEM = "ProviderError"


def record_server(fleet: JobHandle, instance_id: str, server_id: str, status: str) -> bool:
    """Store the server on its instance; False when the instance is deleted (or gone) by now.

    A deleted instance still gets the server's id, so that if deleting the
    server fails the next pass finds it in its cleanup set.
    """
    now = fleet.now()
    with fleet.write() as session:
        instance = session.get(Instance, instance_id, with_for_update=True)
        if instance is None:
            return False
        instance.provider_server_id = server_id
        instance.provider_status = status
        instance.updated_at = now
        session.add(instance)
        if instance.state not in INSTANCE_LIVE:
            return False
        instance.conditions = clear_condition(instance.conditions, PROBLEM)
        if instance.state == InstanceState.PROVISIONING and status == "running":
            instance.state = InstanceState.RUNNING
            instance.ready_at = now
            emit(session, fleet.ids, now, "instance.running", tenant_id=instance.tenant_id,
                 subject_id=instance.id, data={"providerServerId": server_id})  # fmt: skip
        return True


def mark_problem(fleet: JobHandle, instance_id: str, reason: str, message: str) -> None:
    """Set the ProviderError condition on a live instance (an event only when the reason changes)."""
    now = fleet.now()
    with fleet.write() as session:
        instance = session.get(Instance, instance_id, with_for_update=True)
        if instance is None or instance.state not in INSTANCE_LIVE:
            return
        before = next((c for c in instance.conditions if c.get("type") == PROBLEM), None)
        instance.conditions = set_condition(
            instance.conditions, PROBLEM, reason=reason, message=message, at=now
        )
        instance.updated_at = now
        session.add(instance)
        if before is None or before.get("reason") != reason:
            emit(session, fleet.ids, now, "instance.provider_error", tenant_id=instance.tenant_id,
                 subject_id=instance.id, data={"reason": reason, "message": message})  # fmt: skip


def forget_servers(fleet: JobHandle, instance_ids: Sequence[str]) -> int:
    """Mark deleted instances' servers gone; returns how many instances changed."""
    if not instance_ids:
        return 0
    now = fleet.now()
    with fleet.write() as session:
        rows = [
            row
            for chunk in id_chunks(sorted(instance_ids))
            for row in session.exec(
                select(Instance)
                .where(col(Instance.id).in_(chunk), Instance.state == InstanceState.DELETED)
                .with_for_update()
            ).all()
        ]
        changed = 0
        for instance in rows:
            if instance.provider_status != SERVER_GONE:
                instance.provider_status = SERVER_GONE
                instance.updated_at = now
                session.add(instance)
                changed += 1
        return changed

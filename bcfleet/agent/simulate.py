"""The simulated host agent, for demos and tests: it reports placed instances ready a boot delay after placement.

A real agent says an instance is ready once its VM has booted. The simulated one
says so for every placed, running instance whose allocation started at least
`boot_seconds` (default `settings.spare_boot_seconds`) before `now`, on the hosts its
credential owns. It says so as a real agent does: through `instances.report_state`,
under the guest's opaque id, with the caller's credential, so the same authorization
applies and the same `instance.ready` event is emitted (one writer of readiness). It
never reads the wall clock for the boot delay: whoever calls it says what time it is,
so a test advances a FakeClock and calls it again.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlmodel import col

from bcfleet.domain.guest_view import opaque_guest_id
from bcfleet.domain.states import AgentReport, InstanceState
from bcfleet.store.models import Allocation, Instance

if TYPE_CHECKING:
    from collections.abc import Collection

    from bcfleet.api.auth import Credential
    from bcfleet.fleet import Fleet


def booted_guests(fleet: Fleet, now: datetime, boot_seconds: float) -> list[tuple[str, str]]:
    """(host id, instance id) of the running, not yet ready guests placed `boot_seconds` before now.

    The simulated hypervisor's knowledge: which of its VMs have had time to boot.
    """
    booted_before = now - timedelta(seconds=boot_seconds)
    query = (
        select(col(Instance.node_id), col(Instance.id))
        .join(Allocation, col(Allocation.id) == col(Instance.allocation_id))
        .where(
            col(Instance.state) == InstanceState.RUNNING,
            col(Instance.ready_at).is_(None),
            col(Instance.node_id).is_not(None),
            col(Allocation.released_at).is_(None),
            col(Allocation.starts_at) <= booted_before,
        )
        .order_by(col(Instance.node_id), col(Instance.id))
    )
    with fleet.read() as session:
        return [(str(host), str(instance)) for host, instance in session.execute(query)]


def boot_instances(
    fleet: Fleet,
    credential: Credential,
    now: datetime,
    *,
    boot_seconds: float | None = None,
    host_ids: Collection[str] | None = None,
) -> int:
    """Report "ready" for every booted guest on the credential's hosts; returns how many became ready.

    `host_ids`: the hosts this agent runs, as a real agent is told its host (default: the
    hosts the credential owns, from `hosts.list`).
    """
    boot = fleet.settings.spare_boot_seconds if boot_seconds is None else boot_seconds
    if host_ids is None:
        host_ids = {h["id"] for h in fleet.api.hosts.list(credential)["items"]}
    readied = 0
    for host, instance in booted_guests(fleet, now, boot):
        if host not in host_ids:
            continue
        answer = fleet.api.instances.report_state(
            credential,
            host=host,
            instance_id=opaque_guest_id(host, instance),
            state=AgentReport.READY,
        )
        readied += answer.get("readyAt") is not None
    return readied

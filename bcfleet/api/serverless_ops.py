"""Putting services on instances of their size, inside the caller's transaction; the services and environments APIs call it.

A deploy takes a ready spare at once or fails with NO_CAPACITY naming the size
(document 004: "fails … instead of waiting for an instance to start"). The
Retry-After is about the time one replacement takes: until the `spares` job's
next look at this tenant, then the simulated or real boot, jittered upwards.
When no replacement is coming (no serverless pool, the size off, or 0 spares
for it) there is no Retry-After: retrying would not help, raising the spares
would.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from sqlmodel import Session

from bcfleet.domain.retry_after import (
    no_capacity_error,
    retry_after_seconds,
    retry_after_without_spares,
    seconds_until_next_tick,
)
from bcfleet.domain.sizes import parse_size
from bcfleet.placement.serverless import release, take_ready_spare
from bcfleet.placement.tenant_compute import load_settings
from bcfleet.store.models import Instance
from bcfleet.store.models.compute import Service

if TYPE_CHECKING:
    from bcfleet.api.handle import ApiHandle

SPARES_JOB = "spares"


def spares_interval(fleet: ApiHandle) -> float:
    """Seconds between two runs of the spares job."""
    return fleet.settings.job_intervals.get(SPARES_JOB, 30.0)


def idle_retry_after(fleet: ApiHandle) -> int:
    """Retry-After of a NO_CAPACITY answer when no replacement spare is coming."""
    return retry_after_without_spares(spares_interval(fleet))


def retry_after_for(
    session: Session, fleet: ApiHandle, tenant_id: str, size: str, rng: random.Random
) -> int:
    """Seconds until a replacement spare of the size should be ready; the spares job's
    interval when none is coming (0 spares, the size off, no serverless pool)."""
    row, settings = load_settings(session, tenant_id)
    setting = settings.setting(size)
    if row is None or settings.serverless_pool is None or not setting.enabled:
        return idle_retry_after(fleet)
    if setting.spares == 0:
        return idle_retry_after(fleet)
    interval = spares_interval(fleet)
    to_tick = seconds_until_next_tick(fleet.now(), row.spares_checked_at, interval)
    return retry_after_seconds(
        boot_seconds=fleet.settings.spare_boot_seconds, seconds_to_next_tick=to_tick, rng=rng
    )


def take_or_fail(
    session: Session, fleet: ApiHandle, tenant_id: str, size: str, rng: random.Random
) -> Instance:
    """A ready spare of the size, now assigned; NO_CAPACITY with instance_size and Retry-After otherwise."""
    name = parse_size(size)
    instance = take_ready_spare(session, fleet, tenant_id=tenant_id, size=name)
    if instance is None:
        raise no_capacity_error(name, retry_after_for(session, fleet, tenant_id, name, rng))
    return instance


def attach(service: Service, instance: Instance, fleet: ApiHandle) -> None:
    """Make the instance the one serving the service."""
    now = fleet.now()
    instance.name = f"svc-{service.name}"
    instance.updated_at = now
    service.instance_id = instance.id
    service.updated_at = now


def detach(session: Session, fleet: ApiHandle, service: Service, *, reason: str) -> None:
    """Release the instance serving the service, if any."""
    if service.instance_id is not None:
        instance = session.get(Instance, service.instance_id)
        if instance is not None:
            release(session, fleet, instance, reason=reason)
    service.instance_id = None
    service.updated_at = fleet.now()


def rehome(
    session: Session, fleet: ApiHandle, service: Service, size: str, rng: random.Random
) -> None:
    """Move a deployed serverless service onto a ready spare of another size, releasing its old instance.

    NO_CAPACITY (and nothing moved) when the new size has no free instance.
    Undeployed and managed services have no instance to move.
    """
    if not (service.deployed and service.hosting == "serverless"):
        return
    spare = take_or_fail(session, fleet, service.tenant_id, size, rng)
    detach(session, fleet, service, reason=f"service moved to size {parse_size(size)}")
    attach(service, spare, fleet)

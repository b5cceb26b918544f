"""Compute settings and the users of sizes between their tables and the domain; the settings, services, indexes and environments APIs call it.

Loading a tenant's settings and locking its compute changes live in
`bcfleet.placement.tenant_compute`, because the spares job needs them too.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any, Literal, TypeVar

from sqlalchemy.exc import InvalidRequestError
from sqlmodel import Session, col, select

from bcfleet.api.auth import Actor, acting_for, owned_resource
from bcfleet.domain.compute_settings import (
    ComputeSettings,
    EnvironmentUse,
    IndexUse,
    ServiceUse,
    SizeUsers,
    can_use_size,
    effective_service_size,
)
from bcfleet.domain.sizes import label, parse_size
from bcfleet.errors import InvalidInputError, NotFoundError
from bcfleet.ids import has_prefix
from bcfleet.placement.tenant_compute import lock_compute
from bcfleet.store.models.compute import (
    ComputeSettingsRow,
    FleetEnvironment,
    PipelineIndex,
    Service,
)

Owned = TypeVar("Owned", Service, PipelineIndex, FleetEnvironment)


def sizes_json(settings: ComputeSettings) -> dict[str, dict[str, Any]]:
    """The `sizes` column: {size: {enabled, spares}} for every size of the catalogue."""
    return {s.size: {"enabled": s.enabled, "spares": s.spares} for s in settings.sizes}


def write_settings(
    session: Session,
    row: ComputeSettingsRow | None,
    tenant_id: str,
    settings: ComputeSettings,
    *,
    now: datetime,
    managed: bool | None = None,
) -> ComputeSettingsRow:
    """Store settings: a new row at version 1, or the row with its version bumped."""
    if row is None:
        row = ComputeSettingsRow(tenant_id=tenant_id, updated_at=now, version=0)
    row.sizes = sizes_json(settings)
    row.default_size = settings.default_size
    row.serverless_pool_id = settings.serverless_pool
    row.version += 1
    row.updated_at = now
    if managed is not None:
        row.managed = managed
    session.add(row)
    return row


def load_size_users(session: Session, tenant_id: str) -> SizeUsers:
    """What can hold a size in one tenant, in the caller's transaction (three set-based queries)."""
    return size_users_by_tenant(session, tenant_id).get(tenant_id, SizeUsers())


def size_users_by_tenant(session: Session, tenant_id: str | None = None) -> dict[str, SizeUsers]:
    """What can hold a size, per tenant (one tenant, or every tenant for None), in three queries:
    deployed serverless services, indexes with a pod size, and environments."""
    services = select(Service).where(
        Service.deployed == True,  # noqa: E712
        Service.hosting == "serverless",
    )
    indexes = select(PipelineIndex).where(col(PipelineIndex.pod_size).is_not(None))
    environments = select(FleetEnvironment)
    if tenant_id is not None:
        services = services.where(Service.tenant_id == tenant_id)
        indexes = indexes.where(PipelineIndex.tenant_id == tenant_id)
        environments = environments.where(FleetEnvironment.tenant_id == tenant_id)
    found: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for service in session.exec(services).all():
        found[service.tenant_id]["services"].append(service_use(service))
    for i in session.exec(indexes).all():
        found[i.tenant_id]["indexes"].append(
            IndexUse(i.id, i.workspace, i.name, i.pod_size, i.deployed)
        )
    for e in session.exec(environments).all():
        found[e.tenant_id]["environments"].append(EnvironmentUse(e.id, e.name, e.size))
    return {
        tenant: SizeUsers(
            services=tuple(uses["services"]),
            indexes=tuple(uses["indexes"]),
            environments=tuple(uses["environments"]),
        )
        for tenant, uses in sorted(found.items())
    }


def service_use(service: Service) -> ServiceUse:
    hosting: Literal["serverless", "managed"] = (
        "managed" if service.hosting == "managed" else "serverless"
    )
    return ServiceUse(
        id=service.id,
        workspace=service.workspace,
        name=service.name,
        hosting=hosting,
        deployed=service.deployed,
        size=service.size,
        environment=service.environment_id,
    )


def require_usable(settings: ComputeSettings, size: object, current: str | None = None) -> str:
    """The parsed size if this user may take it (enabled, or already its size); else INVALID_INPUT."""
    name = parse_size(size)
    if not can_use_size(settings, name, current):
        raise InvalidInputError(
            f"Size {label(name)} is turned off for your organization: "
            "choose an enabled size, or ask an organization admin to turn it on.",
            {"field": "size", "size": name, "enabled": list(settings.enabled_sizes())},
        )
    return name


def find_owned(
    session: Session,
    actor: Actor,
    model: type[Owned],
    object_id: str,
    what: str,
) -> tuple[Actor, Owned]:
    """An object of one tenant by id; NOT_FOUND when missing or another tenant's (root's admin sees all).

    Returns the actor scoped to the object's tenant with the object.
    """
    row = session.get(model, object_id)
    if row is None or (row.tenant_id != actor.tenant_id and not actor.is_root_admin):
        raise NotFoundError(f"{what} {object_id!r} not found", {what: object_id})
    return acting_for(session, actor, row.tenant_id), row


def lock_and_refresh(session: Session, row: Owned) -> Owned:
    """Lock the tenant's compute changes, then read the object again as of the lock.

    On PostgreSQL another transaction may have changed it between the first
    read and the lock (two deploys of one service); NOT_FOUND if it was deleted.
    """
    lock_compute(session, row.tenant_id)
    try:
        session.refresh(row)
    except InvalidRequestError as exc:
        raise NotFoundError(f"{row.id!r} not found", {"id": row.id}) from exc
    return row


def owned_for(
    session: Session,
    actor: Actor,
    model: type[Owned],
    object_id: str,
    what: str,
    action: str,
    *,
    changes: bool,
) -> tuple[Actor, Owned]:
    """find_owned, then authorize the action on the object, then (for changes) lock and re-read it."""
    scoped, row = find_owned(session, actor, model, object_id, what)
    scoped.require(action, owned_resource(row.tenant_id, what, row.id))
    if changes:
        lock_and_refresh(session, row)
    return scoped, row


def find_environment(session: Session, tenant_id: str, ref: str) -> FleetEnvironment:
    """An environment of the tenant by id or name."""
    column = FleetEnvironment.id if has_prefix(ref, "env") else FleetEnvironment.name
    found = session.exec(
        select(FleetEnvironment).where(FleetEnvironment.tenant_id == tenant_id, column == ref)
    ).first()
    if found is None:
        raise NotFoundError(f"environment {ref!r} not found", {"environment": ref})
    return found


def effective_size(session: Session, service: Service) -> str:
    """The size a service runs on: its environment's, else its own (Large for a legacy service)."""
    environments: tuple[EnvironmentUse, ...] = ()
    if service.environment_id is not None:
        environment = session.get(FleetEnvironment, service.environment_id)
        if environment is not None:
            environments = (EnvironmentUse(environment.id, environment.name, environment.size),)
    return effective_service_size(service_use(service), environments)

"""Compute settings (document 004) for FleetConfig: observed for plans, saved by apply.

Observing reads every tenant's saved settings and everything that can hold a
size (deployed serverless services, indexes with a pod size, environments) in
four set-based queries. Applying saves a tenant's section through the settings
API as one change naming every size, so the API's own rules (default size,
SIZE_IN_USE as of the transaction) decide again.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from sqlmodel import Session, col, select

from bcfleet.domain.compute_settings import ComputeChange, SizeChange
from bcfleet.reconcile.model import (
    SIZES,
    ComputeSpec,
    EnvironmentUse,
    IndexUse,
    ObservedCompute,
    ServiceUse,
    SizeName,
    SizeUsers,
    normalize_sizes,
)
from bcfleet.store.models.compute import (
    ComputeSettingsRow,
    FleetEnvironment,
    PipelineIndex,
    Service,
)


def observe_compute(session: Session, pool_names: Mapping[str, str]) -> tuple[ObservedCompute, ...]:
    """Every tenant's saved compute settings; a tenant that never saved has none."""
    return tuple(
        ObservedCompute(
            ComputeSpec(
                tenant=row.tenant_id,
                serverless_pool=pool_names.get(row.serverless_pool_id or ""),
                default_size=_size(row.default_size),
                sizes=normalize_sizes(row.sizes),
            ),
            managed=row.managed,
        )
        for row in session.exec(select(ComputeSettingsRow)).all()
    )


def _size(value: str | None) -> SizeName | None:
    for size in SIZES:
        if value == size:
            return size
    return None


def observe_size_users(session: Session) -> tuple[SizeUsers, ...]:
    """What may hold each tenant's sizes: deployed serverless services (with the environment
    they run in), indexes with a pod size, and environments."""
    environments = session.exec(select(FleetEnvironment)).all()
    env_names = {env.id: env.name for env in environments}
    services = session.exec(
        select(Service).where(col(Service.deployed), Service.hosting == "serverless")
    ).all()
    indexes = session.exec(select(PipelineIndex).where(col(PipelineIndex.pod_size).is_not(None)))
    found: dict[str, dict[str, list[Any]]] = defaultdict(lambda: defaultdict(list))
    for env in environments:
        found[env.tenant_id]["environments"].append(EnvironmentUse(env.name, env.size))
    for service in services:
        environment = env_names.get(service.environment_id or "")
        found[service.tenant_id]["services"].append(
            ServiceUse(
                service.workspace,
                service.name,
                service.hosting,
                service.deployed,
                service.size,
                environment,
            )
        )
    for index in indexes:
        found[index.tenant_id]["indexes"].append(
            IndexUse(index.workspace, index.name, index.pod_size)
        )
    return tuple(
        SizeUsers(
            tenant,
            services=tuple(uses["services"]),
            indexes=tuple(uses["indexes"]),
            environments=tuple(uses["environments"]),
        )
        for tenant, uses in sorted(found.items())
    )


def compute_change(attrs: Mapping[str, Any]) -> ComputeChange:
    """The save that makes a tenant's settings what a compute section's plan attributes say."""
    sizes = {
        size: SizeChange(enabled=bool(setting["enabled"]), spares=int(setting["spares"]))
        for size, setting in attrs["sizes"].items()
    }
    default = attrs.get("defaultSize")
    return ComputeChange(
        sizes=sizes,
        default_size=default,
        clear_default=default is None,
        serverless_pool=attrs.get("serverlessPool"),
    )

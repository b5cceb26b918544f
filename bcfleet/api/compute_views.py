"""JSON of document 004's objects: the Compute tab's settings, services, indexes and environments."""

from __future__ import annotations

from bcfleet.api.documents import (
    ComputeSettingsJson,
    ComputeSizeJson,
    EnvironmentJson,
    IndexComputeJson,
    IndexJson,
    LastErrorJson,
    ServiceComputeJson,
    ServiceJson,
)
from bcfleet.clock import format_time
from bcfleet.domain.compute_settings import (
    ComputeSettings,
    SizeUsers,
    credits_table,
    default_size_choices,
    effective_default,
    is_default_locked,
    users_of_size,
)
from bcfleet.domain.sizes import SIZES, label, label_with_shape
from bcfleet.domain.states import InstanceState
from bcfleet.store.models import Instance, Pool
from bcfleet.store.models.compute import (
    ComputeSettingsRow,
    FleetEnvironment,
    PipelineIndex,
    Service,
)


def service_compute_json(name: str) -> ServiceComputeJson:
    """What a service replica gets on the size (limits)."""
    compute = SIZES[name].service
    return {"vcpu": compute.vcpu, "memoryGiB": compute.memory_gib, "text": compute.describe()}


def index_compute_json(name: str) -> IndexComputeJson:
    """What an index pod gets on the size (its vCPU may burst)."""
    compute = SIZES[name].index
    return {
        "vcpu": float(compute.vcpu),
        "burstable": compute.burstable,
        "memoryGiB": compute.memory_gib,
        "text": compute.describe(),
    }


def settings_json(
    tenant_id: str,
    settings: ComputeSettings,
    row: ComputeSettingsRow | None,
    pool: Pool | None,
    users: SizeUsers | None,
    last_error: LastErrorJson | None = None,
) -> ComputeSettingsJson:
    """The Compute tab: each size with its computes, switch, spares, credits and what uses it.

    `lastError` is the spares job's failure on this tenant (None when its last pass succeeded).
    """
    credits = credits_table(settings)
    sizes: dict[str, ComputeSizeJson] = {}
    for credit in credits.rows:
        body: ComputeSizeJson = {
            "label": SIZES[credit.size].label,
            "service": service_compute_json(credit.size),
            "index": index_compute_json(credit.size),
            "enabled": credit.enabled,
            "spares": credit.spares,
            "creditsPerMonth": credit.credits_per_month,
            "defaultLocked": is_default_locked(settings, credit.size),
        }
        if users is not None:
            body["usedBy"] = [u.to_json() for u in users_of_size(credit.size, users)]
        sizes[credit.size] = body
    return {
        "tenant": tenant_id,
        "sizes": sizes,
        "totalCreditsPerMonth": credits.total,
        "defaultSize": settings.default_size,
        "effectiveDefaultSize": effective_default(settings),
        "defaultSizeChoices": [
            {"size": name, "label": text} for name, text in default_size_choices(settings)
        ],
        "serverlessPoolId": settings.serverless_pool,
        "serverlessPool": pool.name if pool is not None else None,
        "version": row.version if row is not None else 0,
        "managed": row.managed if row is not None else False,
        "updatedAt": format_time(row.updated_at) if row is not None else None,
        "lastError": last_error,
    }


def instance_state(instance: Instance | None) -> str | None:
    """How a service's instance is doing: ready, starting (placed, booting), pending (no host yet)."""
    if instance is None or instance.state == InstanceState.DELETED:
        return None
    if instance.ready_at is not None:
        return "ready"
    return "starting" if instance.node_id is not None else "pending"


def service_json(
    service: Service,
    *,
    effective_size: str,
    environment: FleetEnvironment | None = None,
    instance: Instance | None = None,
) -> ServiceJson:
    """A service with the size it runs on and the compute a replica gets there."""
    compute = SIZES[effective_size].service
    state = instance_state(instance)
    if not service.deployed:
        status = "undeployed"
    elif service.hosting == "managed" or state == "ready":
        status = "deployed"
    else:
        status = "starting"
    body: ServiceJson = {
        "id": service.id,
        "tenantId": service.tenant_id,
        "workspace": service.workspace,
        "name": service.name,
        "hosting": service.hosting,
        "deployed": service.deployed,
        "status": status,
        "size": service.size,
        "legacy": service.size is None,
        "effectiveSize": effective_size,
        "sizeLabel": label_with_shape(effective_size),
        "vcpu": compute.vcpu,
        "memoryGiB": compute.memory_gib,
        "environmentId": service.environment_id,
        "environment": environment.name if environment is not None else None,
        "instanceId": service.instance_id,
        "instanceState": state,
        "createdAt": format_time(service.created_at),
        "updatedAt": format_time(service.updated_at),
        "deployedAt": format_time(service.deployed_at),
    }
    if instance is not None and state == "pending":
        body["conditions"] = list(instance.conditions)
    return body


def index_json(index: PipelineIndex) -> IndexJson:
    """An index with its pod size (None: the default pod size) and the compute a pod gets."""
    body: IndexJson = {
        "id": index.id,
        "tenantId": index.tenant_id,
        "workspace": index.workspace,
        "name": index.name,
        "podSize": index.pod_size,
        "podSizeLabel": label(index.pod_size) if index.pod_size else "Default pod size",
        "deployed": index.deployed,
        "createdAt": format_time(index.created_at),
        "updatedAt": format_time(index.updated_at),
    }
    if index.pod_size is not None:
        body["compute"] = index_compute_json(index.pod_size)
    return body


def environment_json(environment: FleetEnvironment, services: int | None = None) -> EnvironmentJson:
    body: EnvironmentJson = {
        "id": environment.id,
        "tenantId": environment.tenant_id,
        "name": environment.name,
        "size": environment.size,
        "sizeLabel": label_with_shape(environment.size),
        "createdAt": format_time(environment.created_at),
        "updatedAt": format_time(environment.updated_at),
    }
    if services is not None:
        body["services"] = services
    return body

"""Turn specs of either side into comparable entries: address, key, attributes, references.

The attributes are what plans show as before and after, in the JSON field names
of PRODUCT.md §4; ``diff`` lists the leaves that differ.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bcfleet.reconcile.actions import Attrs, FieldChange, freeze
from bcfleet.reconcile.model import (
    ComputeSpec,
    DesiredFleet,
    FlavorSpec,
    HostSpec,
    ObservedFleet,
    OfferSpec,
    PoolSpec,
    ProviderAccountSpec,
    QuotaSpec,
    TenantSpec,
)

Spec = (
    TenantSpec
    | ProviderAccountSpec
    | PoolSpec
    | OfferSpec
    | HostSpec
    | FlavorSpec
    | QuotaSpec
    | ComputeSpec
)
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Entry:
    """One object on one side of the comparison."""

    type: str
    key: tuple[str, ...]
    address: str
    attrs: Attrs
    refs: tuple[str, ...] = ()  # addresses of the objects this one needs
    managed: bool = True
    archived: bool = False
    referenced: bool = False
    spec: Any = field(default=None, compare=False)


def _pool_attrs(pool: PoolSpec) -> dict[str, Any]:
    over, reserve = pool.overcommit, pool.host_reserve
    return {
        "name": pool.name,
        "kind": str(pool.kind),
        "owner": pool.owner,
        "gpuModel": pool.gpu_model,
        "policy": {
            "overcommit": {
                "vcpu": over.vcpu,
                "memoryGiB": over.memory_gib,
                "diskGiB": over.disk_gib,
            },
            "hostReserve": {
                "vcpu": reserve.vcpu,
                "memoryGiB": reserve.memory_gib,
                "diskGiB": reserve.disk_gib,
            },
        },
        "providerAccount": pool.provider_account,
    }


def _flavor_attrs(flavor: FlavorSpec, archived: bool) -> dict[str, Any]:
    placement = flavor.placement
    return {
        "pool": flavor.pool,
        "name": flavor.name,
        "vcpu": flavor.vcpu,
        "memoryGiB": flavor.memory_gib,
        "diskGiB": flavor.disk_gib,
        "gpus": flavor.gpus,
        "offerId": flavor.offer_id,
        "placement": None
        if placement is None
        else {
            "numaAffine": placement.numa_affine,
            "pinned": placement.pinned,
            "hugepageSizeBytes": placement.hugepage_size_bytes,
        },
        "archived": archived,
    }


def _compute_attrs(compute: ComputeSpec) -> dict[str, Any]:
    return {
        "tenant": compute.tenant,
        "serverlessPool": compute.serverless_pool,
        "defaultSize": compute.default_size,
        "sizes": {
            setting.size: {"enabled": setting.enabled, "spares": setting.spares}
            for setting in compute.sizes
        },
    }


def attributes(spec: Spec, *, archived: bool = False) -> dict[str, Any]:
    """The plan's view of one object."""
    if isinstance(spec, TenantSpec):
        return {"id": spec.id, "name": spec.name}
    if isinstance(spec, ProviderAccountSpec):
        return {
            "name": spec.name,
            "provider": spec.provider,
            "tokenEnv": spec.token_env,
            "endpoint": spec.endpoint,
        }
    if isinstance(spec, PoolSpec):
        return _pool_attrs(spec)
    if isinstance(spec, OfferSpec):
        return {"pool": spec.pool, "tenant": spec.tenant}
    if isinstance(spec, HostSpec):
        return {
            "name": spec.name,
            "pool": spec.pool,
            "labels": dict(spec.labels),
            "tenantControlled": spec.tenant_controlled,
        }
    if isinstance(spec, FlavorSpec):
        return _flavor_attrs(spec, archived)
    if isinstance(spec, QuotaSpec):
        return {
            "tenant": spec.tenant,
            "pool": spec.pool,
            "vcpu": spec.vcpu,
            "memoryGiB": spec.memory_gib,
            "diskGiB": spec.disk_gib,
            "gpu": spec.gpu,
        }
    return _compute_attrs(spec)


def identity(spec: Spec) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """(type, key, references); compute settings go with their tenant, so refer only to a pool."""
    if isinstance(spec, TenantSpec):
        return "tenant", (spec.id,), ()
    if isinstance(spec, ProviderAccountSpec):
        return "providerAccount", (spec.name,), ()
    if isinstance(spec, PoolSpec):
        owner = f"tenant.{spec.owner}"
        if spec.provider_account:
            return "pool", (spec.name,), (owner, f"providerAccount.{spec.provider_account}")
        return "pool", (spec.name,), (owner,)
    if isinstance(spec, OfferSpec):
        return "offer", (spec.pool, spec.tenant), (f"pool.{spec.pool}", f"tenant.{spec.tenant}")
    if isinstance(spec, HostSpec):
        return "host", (spec.name,), (f"pool.{spec.pool}",)
    if isinstance(spec, FlavorSpec):
        return "flavor", (spec.pool, spec.name), (f"pool.{spec.pool}",)
    if isinstance(spec, QuotaSpec):
        return "quota", (spec.tenant, spec.pool), (f"tenant.{spec.tenant}", f"pool.{spec.pool}")
    pool = (f"pool.{spec.serverless_pool}",) if spec.serverless_pool else ()
    return "compute", (spec.tenant,), pool


def entry(
    spec: Spec, *, managed: bool = True, archived: bool = False, referenced: bool = False
) -> Entry:
    kind, key, refs = identity(spec)
    return Entry(
        type=kind,
        key=key,
        address=spec.address,
        attrs=freeze(attributes(spec, archived=archived)),
        refs=refs,
        managed=managed,
        archived=archived,
        referenced=referenced,
        spec=spec,
    )


def desired_entries(desired: DesiredFleet) -> Iterator[Entry]:
    groups: tuple[tuple[Spec, ...], ...] = (
        desired.tenants,
        desired.provider_accounts,
        desired.pools,
        desired.offers,
        desired.hosts,
        desired.flavors,
        desired.quotas,
        desired.compute,
    )
    for group in groups:
        for spec in group:
            yield entry(spec)


def observed_entries(observed: ObservedFleet) -> Iterator[Entry]:
    simple = (
        observed.tenants,
        observed.provider_accounts,
        observed.pools,
        observed.offers,
        observed.hosts,
        observed.quotas,
        observed.compute,
    )
    for group in simple:
        for item in group:
            yield entry(item.spec, managed=item.managed)
    for flavor in observed.flavors:
        yield entry(
            flavor.spec,
            managed=flavor.managed,
            archived=flavor.archived,
            referenced=flavor.referenced,
        )


def _join(prefix: str, key: str) -> str:
    if _IDENTIFIER.match(key):
        return f"{prefix}.{key}" if prefix else key
    return f"{prefix}[{json.dumps(key)}]"


def leaves(attrs: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """Every leaf of an object, nested maps flattened to paths like ``policy.overcommit.vcpu``."""
    result: list[tuple[str, Any]] = []
    for key, value in attrs.items():
        path = _join(prefix, key)
        if isinstance(value, Mapping) and value:
            result.extend(leaves(value, path))
        else:
            result.append((path, value))
    return result


def diff(
    before: Mapping[str, Any], after: Mapping[str, Any], prefix: str = ""
) -> list[FieldChange]:
    """The leaves that differ; maps are compared key by key, ``None`` against a map as a leaf."""
    changes: list[FieldChange] = []
    for key in [*before, *(k for k in after if k not in before)]:
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        path = _join(prefix, key)
        if isinstance(old, Mapping) and isinstance(new, Mapping):
            changes.extend(diff(old, new, path))
        else:
            changes.append(FieldChange(path, old, new))
    return changes

"""Compute settings (document 004) for FleetConfig: observed for plans, saved by apply.

Observing reads every tenant's saved settings and everything that can hold a
size (deployed serverless services, indexes with a pod size, environments) in
four set-based queries. Applying saves a tenant's section through the settings
API as one change naming every size, so the API's own rules (default size,
SIZE_IN_USE as of the transaction) decide again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlmodel import Session, select

from bcfleet.api.compute_state import size_users_by_tenant
from bcfleet.domain.compute_settings import ComputeChange, SizeChange, SizeUsers
from bcfleet.domain.sizes import SIZE_NAMES, SizeName
from bcfleet.reconcile.model import ComputeSpec, ObservedCompute, normalize_sizes
from bcfleet.store.models.compute import ComputeSettingsRow


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
    return next((size for size in SIZE_NAMES if size == value), None)


def observe_size_users(session: Session) -> dict[str, SizeUsers]:
    """What may hold each tenant's sizes, as the settings API loads it for one tenant."""
    return size_users_by_tenant(session)


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

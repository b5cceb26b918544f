"""A tenant's compute settings row as domain settings, and the lock that serializes its compute changes.

Called by the settings and services APIs and by the `spares` job. Every change
that can make a size be in use (deploying a service, moving it, setting an
environment's or an index's size), every save of the settings and the spares
job's work on a tenant first call `lock_compute(session, tenant)`. On
PostgreSQL that takes the tenant's row FOR NO KEY UPDATE (which, unlike FOR
UPDATE, does not block inserts that merely reference the tenant), so a save
and a deploy of one tenant never pass each other: the save sees the deploy, or
the deploy sees the size turned off. SQLite writers already run one at a time
(BEGIN IMMEDIATE), so there the lock is a no-op.
"""

from __future__ import annotations

from sqlmodel import Session, select

from bcfleet.domain.compute_settings import ComputeSettings, SizeSetting
from bcfleet.domain.sizes import SIZE_NAMES
from bcfleet.errors import NotFoundError
from bcfleet.store.models import Tenant
from bcfleet.store.models.compute import ComputeSettingsRow


def lock_compute(session: Session, tenant_id: str) -> None:
    """Serialize the compute changes of one tenant (see the module docstring)."""
    found = session.exec(
        select(Tenant.id).where(Tenant.id == tenant_id).with_for_update(key_share=True)
    ).first()
    if found is None:
        raise NotFoundError(f"tenant {tenant_id!r} not found", {"tenant": tenant_id})


def settings_from_row(row: ComputeSettingsRow | None) -> ComputeSettings:
    """The domain settings of a row; a tenant without a row has the defaults."""
    if row is None:
        return ComputeSettings()
    sizes = tuple(
        SizeSetting(
            name,
            enabled=bool(row.sizes.get(name, {}).get("enabled", True)),
            spares=int(row.sizes.get(name, {}).get("spares", 0)),
        )
        for name in SIZE_NAMES
    )
    return ComputeSettings(sizes, row.default_size, row.serverless_pool_id)


def load_settings(
    session: Session, tenant_id: str
) -> tuple[ComputeSettingsRow | None, ComputeSettings]:
    """The tenant's row (None if it never saved) and its settings."""
    row = session.get(ComputeSettingsRow, tenant_id)
    return row, settings_from_row(row)

"""What keeps a tenant from being deleted: every kind of row that names it, in one list.

The tenants API refuses a deletion naming them; the FleetConfig planner asks the same question
for the kinds a FleetConfig does not declare (it removes the others itself, in order), so a plan
that deletes a tenant shows the conflict its apply would meet. Compute settings are not here:
they are part of the tenant and go with it.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, true
from sqlalchemy import select as select_columns
from sqlmodel import Session, col

from bcfleet.store.models import (
    Allocation,
    Booking,
    Instance,
    Policy,
    Pool,
    PoolOffer,
    Principal,
    ProviderAccount,
    Quota,
    Reservation,
    Webhook,
)
from bcfleet.store.models.compute import FleetEnvironment, PipelineIndex, Service
from bcfleet.store.models.usage import DeadLetter, UsageWindow


@dataclass(frozen=True)
class Holder:
    label: str  # as the CONFLICT names it
    tenant: Any  # the column naming the tenant
    declared: bool  # a FleetConfig declares (and removes) rows of this kind
    where: ColumnElement[bool] = true()


HOLDERS = (
    Holder("pools", col(Pool.owner_tenant_id), True),
    Holder("pool offers", col(PoolOffer.tenant_id), True),
    Holder("principals", col(Principal.tenant_id), False),
    Holder("policies", col(Policy.tenant_id), False),
    Holder("provider accounts", col(ProviderAccount.tenant_id), True),
    Holder("quotas", col(Quota.tenant_id), True),
    Holder("services", col(Service.tenant_id), False),
    Holder("indexes", col(PipelineIndex.tenant_id), False),
    Holder("environments", col(FleetEnvironment.tenant_id), False),
    Holder("instances", col(Instance.tenant_id), False),
    Holder("allocations", col(Allocation.tenant_id), False),
    Holder("bookings", col(Booking.tenant_id), False),
    Holder("reservations", col(Reservation.tenant_id), False),
    Holder("usage records", col(UsageWindow.tenant_id), False),
    Holder("undelivered usage", col(DeadLetter.tenant_id), False),
    Holder("webhooks", col(Webhook.tenant_id), False),
)
QUOTAS_IN_USE = Holder("quotas in use", col(Quota.tenant_id), False, col(Quota.used) > 0)
"""Of the quotas a FleetConfig removes, the rows its removal keeps: what they count is in use."""


def tenant_holders(
    session: Session, tenants: Collection[str] | None = None, *, undeclared_only: bool = False
) -> dict[str, list[str]]:
    """By tenant (all of them when ``tenants`` is None), the kinds of rows that still name it,
    in HOLDERS' order; with ``undeclared_only``, only the kinds no FleetConfig removes.
    One query per kind, never one per tenant."""
    found: dict[str, list[str]] = {}
    kinds = [h for h in HOLDERS if not h.declared] + [QUOTAS_IN_USE] if undeclared_only else HOLDERS
    for holder in kinds:
        query = select_columns(holder.tenant).where(holder.where).distinct()
        if tenants is not None:
            query = query.where(holder.tenant.in_(list(tenants)))
        for (tenant,) in session.execute(query).all():
            found.setdefault(str(tenant), []).append(holder.label)
    return found

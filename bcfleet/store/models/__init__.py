"""Every table of bcfleet by name; a table's module is imported (its classes mapped) on first use.

Mapping a SQLModel class costs start-up time, and a read-only command such as `fleet hosts
list` needs a third of the tables. `from bcfleet.store.models import Host` imports the module
that defines Host, and only it. What needs the whole schema in SQLModel.metadata (creating
or migrating it, a write transaction whose flush orders tables by their foreign keys) calls
`load_all()` first: bcfleet.store.schema and bcfleet.store.uow do.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bcfleet.store.models.billing import BillingMeter
    from bcfleet.store.models.capacity import (
        Allocation,
        Booking,
        ClaimPeriod,
        GpuAtom,
        Quota,
        QuotaStripe,
    )
    from bcfleet.store.models.events import Event
    from bcfleet.store.models.instances import Instance
    from bcfleet.store.models.pools import (
        Flavor,
        Host,
        NodeResource,
        Pool,
        PoolOffer,
        ProviderAccount,
    )
    from bcfleet.store.models.providers import FleetIdentity
    from bcfleet.store.models.reservations import Reservation
    from bcfleet.store.models.state import Lock, StateRevision
    from bcfleet.store.models.tenancy import ApiToken, Policy, PolicyAttachment, Principal, Tenant
    from bcfleet.store.models.webhooks import Webhook, WebhookDelivery

TABLE_MODULES = (
    "billing", "capacity", "compute", "events", "instances", "jobs", "pools", "providers",
    "reservations", "state", "tenancy", "usage", "webhooks",
)  # fmt: skip
"""Every module of this package that defines tables."""

_HOMES = {
    "BillingMeter": "billing",
    "Allocation": "capacity",
    "Booking": "capacity",
    "ClaimPeriod": "capacity",
    "GpuAtom": "capacity",
    "Quota": "capacity",
    "QuotaStripe": "capacity",
    "Event": "events",
    "Instance": "instances",
    "Flavor": "pools",
    "Host": "pools",
    "NodeResource": "pools",
    "Pool": "pools",
    "PoolOffer": "pools",
    "ProviderAccount": "pools",
    "FleetIdentity": "providers",
    "Reservation": "reservations",
    "Lock": "state",
    "StateRevision": "state",
    "ApiToken": "tenancy",
    "Policy": "tenancy",
    "PolicyAttachment": "tenancy",
    "Principal": "tenancy",
    "Tenant": "tenancy",
    "Webhook": "webhooks",
    "WebhookDelivery": "webhooks",
}

__all__ = [
    "Allocation",
    "ApiToken",
    "Booking",
    "ClaimPeriod",
    "GpuAtom",
    "Quota",
    "QuotaStripe",
    "Reservation",
    "BillingMeter",
    "Event",
    "FleetIdentity",
    "Flavor",
    "Host",
    "Instance",
    "Lock",
    "NodeResource",
    "Policy",
    "PolicyAttachment",
    "Pool",
    "PoolOffer",
    "Principal",
    "ProviderAccount",
    "StateRevision",
    "Tenant",
    "Webhook",
    "WebhookDelivery",
    "load_all",
]

_loaded_all = False


def load_all() -> None:
    """Import every table module, so that SQLModel.metadata holds the whole schema."""
    global _loaded_all
    if not _loaded_all:
        for module in TABLE_MODULES:
            import_module(f"{__name__}.{module}")
        _loaded_all = True


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{home}"), name)

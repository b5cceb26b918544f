"""Every table of bcfleet, imported so that SQLModel.metadata knows them all."""

from bcfleet.store.models import compute, jobs, usage  # noqa: F401  (registers their tables)
from bcfleet.store.models.billing import BillingMeter
from bcfleet.store.models.capacity import Allocation, Booking, GpuAtom, Quota, QuotaStripe
from bcfleet.store.models.events import Event
from bcfleet.store.models.instances import Instance
from bcfleet.store.models.pools import Flavor, Host, NodeResource, Pool, PoolOffer, ProviderAccount
from bcfleet.store.models.providers import FleetIdentity
from bcfleet.store.models.reservations import Reservation
from bcfleet.store.models.state import Lock, StateRevision
from bcfleet.store.models.tenancy import ApiToken, Policy, PolicyAttachment, Principal, Tenant
from bcfleet.store.models.webhooks import Webhook, WebhookDelivery  # noqa: F401

__all__ = [
    "Allocation",
    "ApiToken",
    "Booking",
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
]

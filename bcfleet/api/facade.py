"""FleetAPI: `fleet.api.flavors.create(credential, …)` and every other area, on one object."""

from __future__ import annotations

from typing import TYPE_CHECKING

from bcfleet.api.capacity import CapacityAPI
from bcfleet.api.doctor import DoctorAPI
from bcfleet.api.environments import EnvironmentsAPI
from bcfleet.api.events import EventsAPI
from bcfleet.api.flavors import FlavorsAPI
from bcfleet.api.hosts import HostsAPI
from bcfleet.api.iam import IamAPI
from bcfleet.api.indexes import IndexesAPI
from bcfleet.api.instances import InstancesAPI
from bcfleet.api.meters import MetersAPI
from bcfleet.api.offer_checks import OfferCatalog
from bcfleet.api.pools import PoolsAPI
from bcfleet.api.provider_accounts import ProviderAccountsAPI
from bcfleet.api.quotas import QuotasAPI
from bcfleet.api.reservations import ReservationsAPI
from bcfleet.api.services import ServicesAPI
from bcfleet.api.settings import SettingsAPI
from bcfleet.api.tenants import TenantsAPI
from bcfleet.api.usage import UsageAPI
from bcfleet.api.webhooks import WebhooksAPI

if TYPE_CHECKING:
    from bcfleet.fleet import Fleet


class FleetAPI:
    """The service layer of one fleet, area by area."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet
        self.tenants = TenantsAPI(fleet)
        self.iam = IamAPI(fleet)
        self.pools = PoolsAPI(fleet)
        self.offer_catalog = OfferCatalog(fleet)
        self.provider_accounts = ProviderAccountsAPI(fleet, self.offer_catalog)
        self.hosts = HostsAPI(fleet)
        self.flavors = FlavorsAPI(fleet)
        self.flavors.offer_check = self.offer_catalog.flavor_check
        self.flavors.offer_prefetch = self.offer_catalog.warm_for_pool
        self.events = EventsAPI(fleet)
        self.meters = MetersAPI(fleet)
        self.instances = InstancesAPI(fleet)
        self.quotas = QuotasAPI(fleet)
        self.doctor = DoctorAPI(fleet)
        self.reservations = ReservationsAPI(fleet)
        self.capacity = CapacityAPI(fleet)
        self.settings = SettingsAPI(fleet)
        self.services = ServicesAPI(fleet)
        self.indexes = IndexesAPI(fleet)
        self.environments = EnvironmentsAPI(fleet)
        self.usage = UsageAPI(fleet)
        self.webhooks = WebhooksAPI(fleet)

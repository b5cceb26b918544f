"""FleetAPI: `fleet.api.flavors.create(credential, …)` and every other area, on one object.

Each area's module is imported, and its object made, on first use: a command that lists hosts
does not import the provider clients, the usage upserts or the webhooks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from bcfleet.api.capacity import CapacityAPI
    from bcfleet.api.dependents import DependentsAPI
    from bcfleet.api.doctor import DoctorAPI
    from bcfleet.api.environments import EnvironmentsAPI
    from bcfleet.api.events import EventsAPI
    from bcfleet.api.flavors import FlavorsAPI
    from bcfleet.api.handle import ApiHandle
    from bcfleet.api.host_list import HostReads
    from bcfleet.api.hosts import HostsAPI
    from bcfleet.api.iam import IamAPI
    from bcfleet.api.indexes import IndexesAPI
    from bcfleet.api.instances import InstancesAPI
    from bcfleet.api.jobs import JobsAPI
    from bcfleet.api.meters import MetersAPI
    from bcfleet.api.offer_checks import FlavorOfferCatalog
    from bcfleet.api.pools import PoolsAPI
    from bcfleet.api.provider_accounts import ProviderAccountsAPI
    from bcfleet.api.quotas import QuotasAPI
    from bcfleet.api.reservations import ReservationsAPI
    from bcfleet.api.services import ServicesAPI
    from bcfleet.api.settings import SettingsAPI
    from bcfleet.api.state import StateAPI
    from bcfleet.api.tenants import TenantsAPI
    from bcfleet.api.usage import UsageAPI
    from bcfleet.api.webhooks import WebhooksAPI

T = TypeVar("T")


class FleetAPI:
    """The service layer of one fleet, area by area."""

    def __init__(self, fleet: ApiHandle) -> None:
        self.fleet = fleet
        self._areas: dict[str, Any] = {}
        self._lock = threading.RLock()  # one object per area, even when threads ask at once

    def _area(self, name: str, make: Callable[[], T]) -> T:
        found = self._areas.get(name)
        if found is None:
            with self._lock:
                found = self._areas.get(name)
                if found is None:
                    found = self._areas[name] = make()
        return found

    @property
    def tenants(self) -> TenantsAPI:
        from bcfleet.api.tenants import TenantsAPI

        return self._area("tenants", lambda: TenantsAPI(self.fleet))

    @property
    def iam(self) -> IamAPI:
        from bcfleet.api.iam import IamAPI

        return self._area("iam", lambda: IamAPI(self.fleet))

    @property
    def pools(self) -> PoolsAPI:
        from bcfleet.api.pools import PoolsAPI

        return self._area("pools", lambda: PoolsAPI(self.fleet))

    @property
    def offer_catalog(self) -> FlavorOfferCatalog:
        from bcfleet.api.offer_checks import FlavorOfferCatalog

        return self._area("offer_catalog", lambda: FlavorOfferCatalog(self.fleet))

    @property
    def provider_accounts(self) -> ProviderAccountsAPI:
        from bcfleet.api.provider_accounts import ProviderAccountsAPI

        return self._area(
            "provider_accounts", lambda: ProviderAccountsAPI(self.fleet, self.offer_catalog)
        )

    @property
    def hosts(self) -> HostsAPI:
        from bcfleet.api.hosts import HostsAPI

        return self._area("hosts", lambda: HostsAPI(self.fleet))

    @property
    def host_reads(self) -> HostReads:
        """hosts.list without the rest of the hosts area, whose module imports the ORM: what
        `fleet hosts list` calls, so that it never imports SQLModel (api/host_list.py)."""
        from bcfleet.api.host_list import HostReads

        return self._area("host_reads", lambda: HostReads(self.fleet))

    @property
    def flavors(self) -> FlavorsAPI:
        return self._area("flavors", self._make_flavors)

    def _make_flavors(self) -> FlavorsAPI:
        from bcfleet.api.flavors import FlavorsAPI

        flavors = FlavorsAPI(self.fleet)
        flavors.offer_check = self.offer_catalog.flavor_check
        flavors.offer_prefetch = self.offer_catalog.warm_for_pool
        return flavors

    @property
    def events(self) -> EventsAPI:
        from bcfleet.api.events import EventsAPI

        return self._area("events", lambda: EventsAPI(self.fleet))

    @property
    def meters(self) -> MetersAPI:
        from bcfleet.api.meters import MetersAPI

        return self._area("meters", lambda: MetersAPI(self.fleet))

    @property
    def dependents(self) -> DependentsAPI:
        from bcfleet.api.dependents import DependentsAPI

        return self._area("dependents", lambda: DependentsAPI(self.fleet))

    @property
    def instances(self) -> InstancesAPI:
        from bcfleet.api.instances import InstancesAPI

        return self._area("instances", lambda: InstancesAPI(self.fleet))

    @property
    def quotas(self) -> QuotasAPI:
        from bcfleet.api.quotas import QuotasAPI

        return self._area("quotas", lambda: QuotasAPI(self.fleet))

    @property
    def doctor(self) -> DoctorAPI:
        from bcfleet.api.doctor import DoctorAPI

        return self._area("doctor", lambda: DoctorAPI(self.fleet))

    @property
    def reservations(self) -> ReservationsAPI:
        from bcfleet.api.reservations import ReservationsAPI

        return self._area("reservations", lambda: ReservationsAPI(self.fleet))

    @property
    def capacity(self) -> CapacityAPI:
        from bcfleet.api.capacity import CapacityAPI

        return self._area("capacity", lambda: CapacityAPI(self.fleet))

    @property
    def settings(self) -> SettingsAPI:
        from bcfleet.api.settings import SettingsAPI

        return self._area("settings", lambda: SettingsAPI(self.fleet))

    @property
    def services(self) -> ServicesAPI:
        from bcfleet.api.services import ServicesAPI

        return self._area("services", lambda: ServicesAPI(self.fleet))

    @property
    def indexes(self) -> IndexesAPI:
        from bcfleet.api.indexes import IndexesAPI

        return self._area("indexes", lambda: IndexesAPI(self.fleet))

    @property
    def environments(self) -> EnvironmentsAPI:
        from bcfleet.api.environments import EnvironmentsAPI

        return self._area("environments", lambda: EnvironmentsAPI(self.fleet))

    @property
    def usage(self) -> UsageAPI:
        from bcfleet.api.usage import UsageAPI

        return self._area("usage", lambda: UsageAPI(self.fleet))

    @property
    def webhooks(self) -> WebhooksAPI:
        from bcfleet.api.webhooks import WebhooksAPI

        return self._area("webhooks", lambda: WebhooksAPI(self.fleet))

    @property
    def jobs(self) -> JobsAPI:
        from bcfleet.api.jobs import JobsAPI

        return self._area("jobs", lambda: JobsAPI(self.fleet))

    @property
    def state(self) -> StateAPI:
        from bcfleet.api.state import StateAPI

        return self._area("state", lambda: StateAPI(self.fleet))

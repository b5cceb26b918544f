"""The dashboard's data seam: every read and change the views make, over fleet.api (LocalSource).

Views call a `FleetSource` from thread workers and get the API's own JSON
documents back (camelCase, as the CLI's `--json` and the HTTP API print them),
so an HTTP implementation can slot in beside LocalSource without touching a
view. Areas whose API this build lacks raise `NotAvailable`; the view then says
so instead of inventing data. API errors arrive as `FleetError`; anything else
(a database that went away, a refused connection) is the "disconnected" state.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, TypedDict

from bcfleet.api.auth import LOCAL_OPERATOR, Credential
from bcfleet.api.documents import (
    EnvironmentJson,
    EventPageJson,
    FlavorJson,
    HostDetailJson,
    HostJson,
    HostListItemJson,
    IndexJson,
    InstanceJson,
    JobJson,
    PoolJson,
    ProviderAccountJson,
    QuotaJson,
    ReservationJson,
    ServiceJson,
    TenantJson,
    UsageWindowJson,
    WhoAmIJson,
)
from bcfleet.domain.compute_settings import (
    ChangeResult,
    ComputeChange,
    ComputeSettings,
    SizeSetting,
    SizeUser,
    draft_change,
)
from bcfleet.domain.dependents import DependentJson
from bcfleet.domain.guest_view import HostBookingJson
from bcfleet.domain.instance_query import InstanceQuery
from bcfleet.domain.instance_spec import InstanceSpecJson
from bcfleet.domain.job_documents import JobRunJson
from bcfleet.domain.pages import EVENTS, USAGE
from bcfleet.domain.preview_document import PreviewJson
from bcfleet.domain.sizes import SIZE_NAMES
from bcfleet.fleet import Fleet
from bcfleet.tui.admin_source import AdminSource, LocalAdmin

JSON = dict[str, Any]
DEGRADED = "PlacementDegraded"
"""The condition the Degraded view lists (instances.list's condition filter)."""
USAGE_WINDOWS_READ = 50_000
"""The most usage windows the dashboard reads for its sparklines (the API has no sums yet)."""


class NotAvailable(Exception):
    """The area's API is not in this build; the view shows that rather than data."""

    def __init__(self, area: str) -> None:
        super().__init__(f"{area} is not available in this build")
        self.area = area


class Disconnected(ConnectionError):
    """The fleet's server did not answer (refused, timed out, went away): one message for all."""

    def __init__(self, where: str) -> None:
        super().__init__(f"Can't reach the fleet server at {where}.")
        self.where = where


@dataclass(frozen=True)
class PreviewRequest:
    """The preemption preview form: what capacity.preview is asked."""

    tenant: str
    pool: str
    gpus: int
    duration: str
    nodes: int = 1
    spot: bool = False


@dataclass(frozen=True)
class ComputeSnapshot:
    """A tenant's compute settings as the Compute tab opens them, with what uses each size then."""

    tenant: str
    settings: ComputeSettings
    users: Mapping[str, tuple[SizeUser, ...]] = field(default_factory=dict)


@dataclass(frozen=True)
class SaveOutcome:
    """A saved change: the settings now stored, the message and any notices (spares capped)."""

    settings: ComputeSettings
    message: str
    notices: tuple[str, ...] = ()


class FleetSource(AdminSource, Protocol):
    """What the dashboard reads and changes; one implementation per transport."""

    def describe(self) -> str:
        """Where the data comes from, for the header (a database URL, an HTTP endpoint)."""
        ...

    def now(self) -> datetime:
        """The fleet's time: ages and countdowns are measured from it."""
        ...

    def revision(self) -> int | None:
        """A number that changes whenever the state does (None: unknown, always refetch)."""
        ...

    def tenants(self) -> list[TenantJson]: ...

    def pools(self) -> list[PoolJson]: ...

    def hosts(self) -> list[HostListItemJson]: ...

    def host(self, host: str) -> HostDetailJson: ...

    def set_draining(self, host: str, draining: bool) -> HostJson: ...

    def instance(self, instance_id: str) -> InstanceJson: ...

    def instances(self) -> list[InstanceRowJson]:
        """The caller's instances, each with its host's name as `host` (None: not visible)."""
        ...

    def instances_page(self, limit: int) -> tuple[list[InstanceRowJson], int]:
        """At most `limit` of them (pending first, then the newest) with host names, and how
        many there are in all."""
        ...

    def find_instances(
        self, query: InstanceQuery, limit: int, after: int | None = None
    ) -> FoundInstances:
        """A page of the instances the query keeps, in its order, after the first `after`:
        the server filters, sorts and counts them (instances.list)."""
        ...

    def host_guests(self, host: str) -> list[InstanceSpecJson]:
        """The InstanceSpecs of a host's live guests: pinned CPUs, NUMA nodes, GPUs."""
        ...

    def host_bookings(self, host: str) -> list[HostBookingJson]:
        """The reservations booked on a host: their GPUs (PCI addresses), spot, window."""
        ...

    def degraded(self) -> list[InstanceRowJson]:
        """Live instances with a PlacementDegraded condition, each with its host's name."""
        ...

    def reservations(self) -> list[ReservationJson]: ...

    def reservation(self, reservation_id: str) -> ReservationJson: ...

    def preview(self, request: PreviewRequest) -> PreviewJson: ...

    def compute_settings(self, tenant: str) -> ComputeSnapshot: ...

    def draft_compute_settings(
        self, current: ComputeSettings, change: ComputeChange
    ) -> ChangeResult: ...

    def save_compute_settings(
        self, tenant: str, current: ComputeSettings, desired: ComputeChange
    ) -> SaveOutcome: ...

    def usage(self, since: datetime) -> UsageReadJson:
        """Usage windows from `since` on: {"items": […], "complete": whether all were read}."""
        ...

    def events(
        self, after: int | None, types: Sequence[str] = (), limit: int = EVENTS.default
    ) -> EventPageJson: ...

    def flavors(self) -> list[FlavorRowJson]:
        """Every visible pool's flavors (archived ones hidden), each with its pool's name as `pool`."""
        ...

    def quotas(self) -> list[QuotaJson]:
        """Each visible tenant's quotas, one item per tenant and pool: limits and what is used."""
        ...

    def provider_accounts(self) -> list[AccountRowJson]:
        """Each visible tenant's provider accounts, each with its `tenantId` (never a token)."""
        ...

    def services(self) -> list[ServiceJson]: ...

    def environments(self) -> list[EnvironmentJson]: ...

    def indexes(self) -> list[IndexJson]: ...

    def jobs(self) -> list[JobJson]:
        """Each job: interval, last run and outcome, next due, overdue, failures among recent runs."""
        ...

    def job_runs(self, job: str) -> list[JobRunJson]:
        """A job's latest runs, newest first."""
        ...

    # -- changes the console's actions make (bcfleet/tui/actions.py) --------------------------

    def stop_instance(self, instance_id: str) -> InstanceJson: ...

    def start_instance(self, instance_id: str) -> InstanceJson: ...

    def delete_instance(self, instance_id: str) -> InstanceJson: ...

    def resize_instance(self, instance_id: str, flavor: str) -> InstanceJson: ...

    def cancel_reservation(self, reservation_id: str) -> ReservationJson: ...

    def run_job(self, name: str) -> JobRunJson:
        """Run a job once now, due or not; its run as `fleet jobs runs` shows it."""
        ...

    def offer_pool(self, pool: str, tenant: str, *, owner: str | None) -> PoolJson: ...

    def unoffer_pool(self, pool: str, tenant: str, *, owner: str | None) -> PoolJson: ...

    def instance_dependents(self, instance_id: str) -> list[DependentJson] | None:
        """What depends on an instance (the services it serves); None: not told by this source."""
        ...

    def offer_dependents(
        self, pool: str, tenant: str, *, owner: str | None
    ) -> list[DependentJson] | None:
        """What a tenant holds in a pool whose offer would be taken back; None: not told."""
        ...

    def set_quota(self, tenant: str, pool: str, limits: Mapping[str, int | None]) -> QuotaJson: ...

    def deploy_service(self, service_id: str) -> ServiceJson: ...

    def undeploy_service(self, service_id: str) -> ServiceJson: ...

    def whoami(self) -> WhoAmIJson:
        """Whom the console acts as (iam.whoami): the header says it."""
        ...


def snapshot_of(body: Mapping[str, Any]) -> ComputeSnapshot:
    """The Compute tab's JSON (settings.compute_show or compute_save) as domain values."""
    sizes = body["sizes"]
    settings = ComputeSettings(
        sizes=tuple(
            SizeSetting(name, bool(sizes[name]["enabled"]), int(sizes[name]["spares"]))
            for name in SIZE_NAMES
        ),
        default_size=body.get("defaultSize"),
        serverless_pool=body.get("serverlessPoolId"),
    )
    users = {
        name: tuple(
            SizeUser(u["kind"], u["id"], u["name"], u.get("workspace")) for u in size["usedBy"]
        )
        for name, size in sizes.items()
        if size.get("usedBy")
    }
    return ComputeSnapshot(str(body["tenant"]), settings, users)


class InstanceRowJson(InstanceJson):
    """An instance as the dashboard lists it: with its host's name (None: a host the caller
    cannot see, or none)."""

    host: str | None


@dataclass(frozen=True)
class FoundInstances:
    """A page of instances the server found: the rows (with host names), how many the query
    keeps in all, and the `after` of the next page (None: this is the last)."""

    items: list[InstanceRowJson]
    total: int
    cursor: int | None


HOST_NAMES_SECONDS = 5.0
"""How long host names are kept when the source cannot tell whether the state moved (HTTP)."""


class HostNames:
    """Host names by node id for pages of instances, read with hosts.list only when the state
    has moved (the source's revision) or a page names a node not seen yet: a filter typed
    over 50,000 instances reads one page, not 5,000 hosts, at each keystroke."""

    def __init__(self) -> None:
        self._names: dict[str, str] = {}
        self._revision: int | None = None
        self._read_at = -HOST_NAMES_SECONDS

    def named(
        self,
        instances: Sequence[InstanceJson],
        hosts: Callable[[], Iterable[HostListItemJson]],
        revision: int | None,
    ) -> list[InstanceRowJson]:
        """The instances, each with its host's name as `host` (as with_host_names)."""
        ids = {i["nodeId"] for i in instances if i["nodeId"]}
        fresh = (
            revision == self._revision
            if revision is not None
            else time.monotonic() - self._read_at < HOST_NAMES_SECONDS
        )
        if ids and not (fresh and ids <= self._names.keys()):
            self._names = {h["id"]: h["name"] for h in hosts()}
            self._revision, self._read_at = revision, time.monotonic()
        return [{**i, "host": self._names.get(i["nodeId"] or "")} for i in instances]


def query_params(query: InstanceQuery) -> dict[str, str | bool | None]:
    """The query as instances.list's HTTP parameters name it."""
    return {"q": query.q, "state": query.state, "owner": query.owner, "pool": query.pool,
            "host": query.host, "sort": query.sort, "descending": query.descending}  # fmt: skip


class FlavorRowJson(FlavorJson):
    """A flavor as the dashboard lists it: with its pool's name."""

    pool: str


class AccountRowJson(ProviderAccountJson):
    """A provider account as the dashboard lists it: with the tenant it was read for."""

    tenantId: str


class UsageReadJson(TypedDict):
    """Usage windows read for the dashboard, and whether that was all of them."""

    items: list[UsageWindowJson]
    complete: bool


def with_pool_names(
    flavors: Iterable[FlavorJson], pools: Iterable[PoolJson]
) -> list[FlavorRowJson]:
    """The flavors, each with its pool's name as `pool`."""
    names = {p["id"]: p["name"] for p in pools}
    return [{**f, "pool": names.get(f["poolId"], f["poolId"])} for f in flavors]


def with_tenant(accounts: Iterable[ProviderAccountJson], tenant: str) -> list[AccountRowJson]:
    """Accounts read for one tenant, each saying which (`tenantId`)."""
    return [{**account, "tenantId": tenant} for account in accounts]


def with_host_names(
    instances: Sequence[InstanceJson], hosts: Callable[[], Iterable[HostListItemJson]]
) -> list[InstanceRowJson]:
    """The instances, each with its host's name as `host` (None for hosts the caller cannot see)."""
    if not any(i["nodeId"] for i in instances):
        return [{**i, "host": None} for i in instances]
    names = {h["id"]: h["name"] for h in hosts()}
    return [{**i, "host": names.get(i["nodeId"] or "")} for i in instances]


class LocalSource(LocalAdmin):
    """The dashboard over an open Fleet in this process, as the local operator by default."""

    def __init__(
        self, fleet: Fleet, credential: Credential = LOCAL_OPERATOR, *, label: str | None = None
    ) -> None:
        self.fleet = fleet
        self.api = fleet.api
        self.credential = credential
        self.label = label
        self.host_names = HostNames()

    def describe(self) -> str:
        return self.label or str(self.fleet.engine.url)  # a password, if any, shows as ***

    def now(self) -> datetime:
        return self.fleet.now()

    def revision(self) -> int | None:
        return self.api.state.revision(self.credential)

    def tenants(self) -> list[TenantJson]:
        return self.api.tenants.list(self.credential)["items"]

    def pools(self) -> list[PoolJson]:
        return self.api.pools.list(self.credential)["items"]

    def hosts(self) -> list[HostListItemJson]:
        return self.api.hosts.list(self.credential)["items"]

    def host(self, host: str) -> HostDetailJson:
        return self.api.hosts.show(self.credential, host=host)

    def set_draining(self, host: str, draining: bool) -> HostJson:
        return self.api.hosts.set_state(self.credential, host=host, draining=draining)

    def instance(self, instance_id: str) -> InstanceJson:
        return self.api.instances.show(self.credential, instance_id)

    def instances(self) -> list[InstanceRowJson]:
        return with_host_names(self.api.instances.list(self.credential)["items"], self.hosts)

    def instances_page(self, limit: int) -> tuple[list[InstanceRowJson], int]:
        found = self.find_instances(InstanceQuery(), limit)
        return found.items, found.total

    def find_instances(
        self, query: InstanceQuery, limit: int, after: int | None = None
    ) -> FoundInstances:
        revision = self.revision()
        page = self.api.instances.list(
            self.credential, limit=limit, after=after, q=query.q, state=query.state,
            owner=query.owner, pool=query.pool, host=query.host, sort=query.sort,
            descending=query.descending,
        )  # fmt: skip
        items = self.host_names.named(page["items"], self.hosts, revision)
        return FoundInstances(items, int(page["total"]), page.get("cursor"))

    def host_guests(self, host: str) -> list[InstanceSpecJson]:
        return self.api.instances.specs_for_host(self.credential, host)["items"]

    def degraded(self) -> list[InstanceRowJson]:
        found = self.api.instances.list(self.credential, condition=DEGRADED)["items"]
        return with_host_names(found, self.hosts)

    def host_bookings(self, host: str) -> list[HostBookingJson]:
        return self.api.reservations.for_host(self.credential, host)["items"]

    def reservations(self) -> list[ReservationJson]:
        return self.api.reservations.list(self.credential)["items"]

    def reservation(self, reservation_id: str) -> ReservationJson:
        return self.api.reservations.get(self.credential, reservation_id)

    def preview(self, request: PreviewRequest) -> PreviewJson:
        return self.api.capacity.preview(
            self.credential,
            tenant_id=request.tenant,
            pool_id=request.pool,
            gpus=request.gpus,
            duration=request.duration,
            nodes=request.nodes,
            spot=request.spot,
        )

    def compute_settings(self, tenant: str) -> ComputeSnapshot:
        return snapshot_of(self.api.settings.compute_show(self.credential, tenant_id=tenant))

    def draft_compute_settings(
        self, current: ComputeSettings, change: ComputeChange
    ) -> ChangeResult:
        return draft_change(current, change)

    def save_compute_settings(
        self, tenant: str, current: ComputeSettings, desired: ComputeChange
    ) -> SaveOutcome:
        del current  # the API saves against what is stored, in the saving transaction
        body = self.api.settings.compute_save(self.credential, tenant_id=tenant, change=desired)
        notices = tuple(str(n["message"]) for n in body.get("notices") or ())
        return SaveOutcome(snapshot_of(body).settings, str(body["message"]), notices)

    def usage(self, since: datetime) -> UsageReadJson:
        items: list[UsageWindowJson] = []
        cursor = None
        while len(items) < USAGE_WINDOWS_READ:
            page = self.api.usage.list(
                self.credential, since=since, after=cursor, limit=USAGE.maximum
            )
            items.extend(page["items"])
            if len(page["items"]) < USAGE.maximum:
                return {"items": items, "complete": True}
            cursor = page["cursor"]
        return {"items": items, "complete": False}

    def events(
        self, after: int | None, types: Sequence[str] = (), limit: int = EVENTS.default
    ) -> EventPageJson:
        return self.api.events.list(self.credential, after=after, types=types, limit=limit)

    def flavors(self) -> list[FlavorRowJson]:
        pools = self.pools()
        items: list[FlavorJson] = []
        for pool in pools:
            found = self.api.flavors.list(
                self.credential, tenant_id=pool["owner"], pool_id=pool["id"]
            )
            items.extend(found["items"])
        return with_pool_names(items, pools)

    def quotas(self) -> list[QuotaJson]:
        items: list[QuotaJson] = []
        for tenant in self.tenants():
            items.extend(self.api.quotas.show(self.credential, tenant_id=tenant["id"])["items"])
        return items

    def provider_accounts(self) -> list[AccountRowJson]:
        items: list[AccountRowJson] = []
        for tenant in self.tenants():
            found = self.api.provider_accounts.list(self.credential, tenant_id=tenant["id"])
            items.extend(with_tenant(found["items"], tenant["id"]))
        return items

    def services(self) -> list[ServiceJson]:
        return self.api.services.list(self.credential)["items"]

    def environments(self) -> list[EnvironmentJson]:
        return self.api.environments.list(self.credential)["items"]

    def indexes(self) -> list[IndexJson]:
        return self.api.indexes.list(self.credential)["items"]

    def jobs(self) -> list[JobJson]:
        return self.api.jobs.list(self.credential)["items"]

    def job_runs(self, job: str) -> list[JobRunJson]:
        return self.api.jobs.runs(self.credential, job=job)

    def stop_instance(self, instance_id: str) -> InstanceJson:
        return self.api.instances.stop(self.credential, instance_id)

    def start_instance(self, instance_id: str) -> InstanceJson:
        return self.api.instances.start(self.credential, instance_id)

    def delete_instance(self, instance_id: str) -> InstanceJson:
        return self.api.instances.delete(self.credential, instance_id)

    def resize_instance(self, instance_id: str, flavor: str) -> InstanceJson:
        return self.api.instances.resize(self.credential, instance_id, flavor=flavor)

    def cancel_reservation(self, reservation_id: str) -> ReservationJson:
        return self.api.reservations.cancel(self.credential, reservation_id)

    def run_job(self, name: str) -> JobRunJson:
        return self.api.jobs.run(self.credential, name)

    def offer_pool(self, pool: str, tenant: str, *, owner: str | None) -> PoolJson:
        return self.api.pools.offer(self.credential, tenant_id=owner or "", pool=pool, to=tenant)

    def unoffer_pool(self, pool: str, tenant: str, *, owner: str | None) -> PoolJson:
        return self.api.pools.offer(
            self.credential, tenant_id=owner or "", pool=pool, to=tenant, revoke=True
        )

    def instance_dependents(self, instance_id: str) -> list[DependentJson] | None:
        return self.api.dependents.of_instance(self.credential, instance_id)["items"]

    def offer_dependents(
        self, pool: str, tenant: str, *, owner: str | None
    ) -> list[DependentJson] | None:
        found = self.api.dependents.of_offer(
            self.credential, tenant_id=owner or "", pool=pool, to=tenant
        )
        return found["items"]

    def set_quota(self, tenant: str, pool: str, limits: Mapping[str, int | None]) -> QuotaJson:
        return self.api.quotas.set(self.credential, tenant_id=tenant, pool=pool, limits=limits)

    def deploy_service(self, service_id: str) -> ServiceJson:
        return self.api.services.deploy(self.credential, service_id)

    def undeploy_service(self, service_id: str) -> ServiceJson:
        return self.api.services.undeploy(self.credential, service_id)

    def whoami(self) -> WhoAmIJson:
        return self.api.iam.whoami(self.credential)

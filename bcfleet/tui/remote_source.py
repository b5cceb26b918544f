"""The dashboard over the HTTP API (`fleet tui --server URL --token T`): the same reads as LocalSource."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, TypeVar
from urllib.parse import quote

import httpx

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
    QuotaJson,
    ReservationJson,
    ServiceJson,
    TenantJson,
    UsagePageJson,
    UsageWindowJson,
    WhoAmIJson,
)
from bcfleet.client.fleet_client import FleetClient
from bcfleet.domain.compute_settings import (
    ChangeResult,
    ComputeChange,
    ComputeSettings,
    draft_change,
)
from bcfleet.domain.dependents import DependentJson
from bcfleet.domain.guest_view import HostBookingJson
from bcfleet.domain.instance_query import InstanceQuery
from bcfleet.domain.instance_spec import InstanceSpecJson
from bcfleet.domain.job_documents import JobRunJson
from bcfleet.domain.pages import EVENTS, USAGE
from bcfleet.domain.preview_document import PreviewJson
from bcfleet.tui.remote_admin import RemoteAdmin
from bcfleet.tui.source import (
    DEGRADED,
    USAGE_WINDOWS_READ,
    AccountRowJson,
    ComputeSnapshot,
    Disconnected,
    FlavorRowJson,
    FoundInstances,
    HostNames,
    InstanceRowJson,
    PreviewRequest,
    SaveOutcome,
    UsageReadJson,
    query_params,
    snapshot_of,
    with_host_names,
    with_pool_names,
    with_tenant,
)


def _segment(value: str) -> str:
    """A path segment: a name with a slash or a space stays one segment."""
    return quote(value, safe="")


def change_body(change: ComputeChange) -> dict[str, Any]:
    """A ComputeChange as the PATCH /v1/settings/compute body (the CLI's flags, in camelCase)."""
    enable = [s for s, c in change.sizes.items() if c.enabled is True]
    disable = [s for s, c in change.sizes.items() if c.enabled is False]
    spares = {s: c.spares for s, c in change.sizes.items() if c.spares is not None}
    body: dict[str, Any] = {
        "enable": enable,
        "disable": disable,
        "clearDefault": change.clear_default,
    }
    if spares:
        body["spares"] = spares
    if change.default_size is not None:
        body["defaultSize"] = change.default_size
    if change.serverless_pool is not None:
        body["serverlessPool"] = change.serverless_pool
    return body


P = ParamSpec("P")
R = TypeVar("R")


def _reaching(
    method: Callable[Concatenate[RemoteSource, P], R],
) -> Callable[Concatenate[RemoteSource, P], R]:
    """The method, with httpx's transport errors ([Errno 111], timeouts) as one Disconnected."""

    @functools.wraps(method)
    def call(source: RemoteSource, /, *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return method(source, *args, **kwargs)
        except httpx.TransportError as exc:
            raise Disconnected(source.label) from exc

    return call


class RemoteSource(RemoteAdmin):
    """Reads and changes through a FleetClient: the same JSON documents as LocalSource gets from
    fleet.api."""

    def __init__(self, client: FleetClient, *, label: str) -> None:
        self.client = client
        self.label = label
        self.host_names = HostNames()

    def describe(self) -> str:
        return self.label

    def now(self) -> datetime:
        return self.client.now()

    def revision(self) -> int | None:
        return None  # no cheap change marker over HTTP yet: every refresh reads

    def tenants(self) -> list[TenantJson]:
        return self.client.tenants()

    def pools(self) -> list[PoolJson]:
        return self.client.pools()

    def hosts(self) -> list[HostListItemJson]:
        return self.client.hosts()

    def host(self, host: str) -> HostDetailJson:
        return self.client.host(host)

    def set_draining(self, host: str, draining: bool) -> HostJson:
        return self.client.set_draining(host, draining)

    def instance(self, instance_id: str) -> InstanceJson:
        return self.client.instance(instance_id)

    def instances(self) -> list[InstanceRowJson]:
        return with_host_names(self.client.instances(), self.hosts)

    def instances_page(self, limit: int) -> tuple[list[InstanceRowJson], int]:
        found = self.find_instances(InstanceQuery(), limit)
        return found.items, found.total

    def find_instances(
        self, query: InstanceQuery, limit: int, after: int | None = None
    ) -> FoundInstances:
        page = self.client.instances_page(limit, after=after, **query_params(query))
        items = self.host_names.named(list(page["items"]), self.hosts, None)
        return FoundInstances(items, int(page["total"]), page.get("cursor"))

    def host_guests(self, host: str) -> list[InstanceSpecJson]:
        return self.client.host_specs(host)

    def degraded(self) -> list[InstanceRowJson]:
        return with_host_names(self.client.instances(condition=DEGRADED), self.hosts)

    def host_bookings(self, host: str) -> list[HostBookingJson]:
        return self.client.host_reservations(host)

    def reservations(self) -> list[ReservationJson]:
        items: list[ReservationJson] = self.client.request("GET", "/v1/reservations")["items"]
        return items

    def reservation(self, reservation_id: str) -> ReservationJson:
        answer: ReservationJson = self.client.request("GET", f"/v1/reservations/{reservation_id}")
        return answer

    def preview(self, request: PreviewRequest) -> PreviewJson:
        body = {"pool": request.pool, "gpus": request.gpus, "duration": request.duration,
                "nodes": request.nodes, "spot": request.spot}  # fmt: skip
        answer: PreviewJson = self.client.request(
            "POST", "/v1/capacity/preview", json_body=body, params={"tenant": request.tenant}
        )
        return answer

    def compute_settings(self, tenant: str) -> ComputeSnapshot:
        body = self.client.request("GET", "/v1/settings/compute", params={"tenant": tenant})
        return snapshot_of(body)

    def draft_compute_settings(
        self, current: ComputeSettings, change: ComputeChange
    ) -> ChangeResult:
        return draft_change(current, change)

    def save_compute_settings(
        self, tenant: str, current: ComputeSettings, desired: ComputeChange
    ) -> SaveOutcome:
        del current  # the server saves against what is stored, in the saving transaction
        body = self.client.request(
            "PATCH",
            "/v1/settings/compute",
            json_body=change_body(desired),
            params={"tenant": tenant},
        )
        notices = tuple(str(n["message"]) for n in body.get("notices") or ())
        return SaveOutcome(snapshot_of(body).settings, str(body["message"]), notices)

    def usage(self, since: datetime) -> UsageReadJson:
        items: list[UsageWindowJson] = []
        cursor = None
        while len(items) < USAGE_WINDOWS_READ:
            page: UsagePageJson = self.client.request(
                "GET",
                "/v1/usage",
                params={"since": since.isoformat(), "after": cursor, "limit": USAGE.maximum},
            )
            items.extend(page["items"])
            if len(page["items"]) < USAGE.maximum or page["cursor"] is None:
                return {"items": items, "complete": True}
            cursor = page["cursor"]
        return {"items": items, "complete": False}

    def events(
        self, after: int | None, types: Sequence[str] = (), limit: int = EVENTS.default
    ) -> EventPageJson:
        return self.client.events(after=after, types=types, limit=limit)

    def items(self, path: str, tenant: str | None = None) -> list[Any]:
        """A list route's items (its typed documents), acting as `tenant` when given."""
        params = {"tenant": tenant} if tenant is not None else None
        return list(self.client.request("GET", path, params=params)["items"])

    def flavors(self) -> list[FlavorRowJson]:
        pools = self.pools()
        items: list[FlavorJson] = []
        for pool in pools:
            items.extend(self.client.flavors(pool["id"]))
        return with_pool_names(items, pools)

    def quotas(self) -> list[QuotaJson]:
        items: list[QuotaJson] = []
        for tenant in self.tenants():
            items.extend(self.items("/v1/quotas", tenant["id"]))
        return items

    def provider_accounts(self) -> list[AccountRowJson]:
        items: list[AccountRowJson] = []
        for tenant in self.tenants():
            found = self.items("/v1/provider-accounts", tenant["id"])
            items.extend(with_tenant(found, tenant["id"]))
        return items

    def services(self) -> list[ServiceJson]:
        return self.items("/v1/services")

    def environments(self) -> list[EnvironmentJson]:
        return self.items("/v1/environments")

    def indexes(self) -> list[IndexJson]:
        return self.items("/v1/indexes")

    def jobs(self) -> list[JobJson]:
        return self.client.jobs()

    def job_runs(self, job: str) -> list[JobRunJson]:
        return self.client.job_runs(job)

    def stop_instance(self, instance_id: str) -> InstanceJson:
        return self.client.instance_action(instance_id, "stop")

    def start_instance(self, instance_id: str) -> InstanceJson:
        return self.client.instance_action(instance_id, "start")

    def delete_instance(self, instance_id: str) -> InstanceJson:
        return self.client.delete_instance(instance_id)

    def resize_instance(self, instance_id: str, flavor: str) -> InstanceJson:
        return self.client.instance_action(instance_id, "resize", flavor=flavor)

    def cancel_reservation(self, reservation_id: str) -> ReservationJson:
        answer: ReservationJson = self.client.request(
            "POST", f"/v1/reservations/{_segment(reservation_id)}/cancel"
        )
        return answer

    def run_job(self, name: str) -> JobRunJson:
        return self.client.run_job(name)

    def offer_pool(self, pool: str, tenant: str, *, owner: str | None) -> PoolJson:
        answer: PoolJson = self.client.request(
            "POST", f"/v1/pools/{_segment(pool)}/offers", json_body={"tenant": tenant},
            params={"tenant": owner},
        )  # fmt: skip
        return answer

    def unoffer_pool(self, pool: str, tenant: str, *, owner: str | None) -> PoolJson:
        answer: PoolJson = self.client.request(
            "DELETE",
            f"/v1/pools/{_segment(pool)}/offers/{_segment(tenant)}",
            params={"tenant": owner},
        )
        return answer

    def instance_dependents(self, instance_id: str) -> list[DependentJson] | None:
        return list(self.dependents("instance", {"id": instance_id})["items"])

    def offer_dependents(
        self, pool: str, tenant: str, *, owner: str | None
    ) -> list[DependentJson] | None:
        path = f"/v1/pools/{_segment(pool)}/offers/{_segment(tenant)}/dependents"
        return list(self.client.request("GET", path, params={"tenant": owner})["items"])

    def set_quota(self, tenant: str, pool: str, limits: Mapping[str, int | None]) -> QuotaJson:
        return self.client.set_quota(tenant, pool, **limits)

    def deploy_service(self, service_id: str) -> ServiceJson:
        answer: ServiceJson = self.client.request(
            "POST", f"/v1/services/{_segment(service_id)}/deploy"
        )
        return answer

    def undeploy_service(self, service_id: str) -> ServiceJson:
        answer: ServiceJson = self.client.request(
            "POST", f"/v1/services/{_segment(service_id)}/undeploy"
        )
        return answer

    def whoami(self) -> WhoAmIJson:
        answer: WhoAmIJson = self.client.request("GET", "/v1/whoami")
        return answer


for _name, _method in [*vars(RemoteAdmin).items(), *vars(RemoteSource).items()]:
    if callable(_method) and not _name.startswith("_") and _name != "describe":
        setattr(RemoteSource, _name, _reaching(_method))

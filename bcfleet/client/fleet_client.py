"""A typed client of the HTTP API (httpx), one method per route; the remote dashboard and the host agent use it.

Answers are the API's own JSON documents (camelCase), exactly as fleet.api returns them,
so a dashboard data source can swap LocalSource for this client without touching a view.
Error answers raise the FleetError subclass of their code (NO_CAPACITY keeps
instance_size and the Retry-After seconds); a refused connection raises httpx's error.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any
from urllib.parse import quote

import httpx

from bcfleet import __version__
from bcfleet.api.documents import (
    AgentReportJson,
    EventPageJson,
    FlavorJson,
    FlavorPageJson,
    GuestStateJson,
    HostDetailJson,
    HostJson,
    HostListItemJson,
    HostPageJson,
    HostReservationsJson,
    HostSpecsJson,
    InstanceJson,
    InstancePageJson,
    JobJson,
    JobPageJson,
    JobRunPageJson,
    PoolJson,
    PoolPageJson,
    QuotaJson,
    TenantJson,
    TenantPageJson,
)
from bcfleet.clock import parse_time
from bcfleet.domain.guest_view import HostBookingJson
from bcfleet.domain.instance_spec import InstanceSpecJson
from bcfleet.domain.job_documents import JobRunJson
from bcfleet.domain.pages import EVENTS, JOB_RUNS
from bcfleet.errors import FleetError, error_from_document

JSON = dict[str, Any]


def error_from_response(response: httpx.Response) -> FleetError:
    """The FleetError an error answer carries, decoded by the tree's one decoder."""
    try:
        document: Any = response.json()
    except ValueError:
        document = response.text
    return error_from_document(response.status_code, document, response.headers.get("retry-after"))


def _p(value: str) -> str:
    return quote(value, safe="")


def _drop_none(body: Mapping[str, Any]) -> JSON:
    return {k: v for k, v in body.items() if v is not None}


class FleetClient:
    """The HTTP API of one fleet with one bearer token; `tenant` acts as that tenant (root's admin)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        tenant: str | None = None,
        timeout: float = 10.0,
        transport: httpx.BaseTransport | None = None,
        product: str = "bcfleet",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.tenant = tenant
        self.http = httpx.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {token}", "User-Agent": f"{product}/{__version__}"},
            timeout=timeout,
            transport=transport,
        )

    def __enter__(self) -> FleetClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: Mapping[str, Any] | None = None,
    ) -> Any:
        """One call: the JSON answer, or the FleetError of an error answer raised."""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        if self.tenant is not None:
            query.setdefault("tenant", self.tenant)
        response = self.http.request(method, path, json=json_body, params=query)
        if response.status_code >= 400:
            raise error_from_response(response)
        if response.headers.get("content-type", "").startswith("application/json"):
            return response.json()
        return response.text

    # meta
    def healthz(self) -> JSON:
        result: JSON = self.request("GET", "/healthz")
        return result

    def now(self) -> datetime:
        """The fleet's time, as the server's clock tells it."""
        return parse_time(str(self.healthz()["now"]))

    def metrics(self) -> str:
        return str(self.request("GET", "/metrics"))

    def openapi(self) -> JSON:
        result: JSON = self.request("GET", "/v1/openapi.json")
        return result

    # tenants and tokens
    def tenants(self) -> list[TenantJson]:
        result: TenantPageJson = self.request("GET", "/v1/tenants")
        return result["items"]

    def create_tenant(self, tenant_id: str, name: str | None = None) -> JSON:
        result: JSON = self.request(
            "POST", "/v1/tenants", json_body=_drop_none({"id": tenant_id, "name": name})
        )
        return result

    def create_token(
        self, tenant: str, name: str, role: str = "member", host: str | None = None
    ) -> JSON:
        body = _drop_none({"name": name, "role": role, "host": host})
        result: JSON = self.request("POST", f"/v1/tenants/{_p(tenant)}/tokens", json_body=body)
        return result

    # pools
    def pools(self) -> list[PoolJson]:
        result: PoolPageJson = self.request("GET", "/v1/pools")
        return result["items"]

    def pool(self, pool: str) -> JSON:
        result: JSON = self.request("GET", f"/v1/pools/{_p(pool)}")
        return result

    def create_pool(
        self,
        name: str,
        kind: str,
        *,
        gpu_model: str | None = None,
        overcommit: Mapping[str, float] | None = None,
        host_reserve: Mapping[str, int] | None = None,
        provider_account: str | None = None,
    ) -> JSON:
        policy = _drop_none({"overcommit": overcommit, "hostReserve": host_reserve})
        body = {"name": name, "kind": kind, "gpuModel": gpu_model, "policy": policy or None,
                "providerAccount": provider_account}  # fmt: skip
        result: JSON = self.request("POST", "/v1/pools", json_body=_drop_none(body))
        return result

    def offer_pool(self, pool: str, to: str) -> PoolJson:
        result: PoolJson = self.request(
            "POST", f"/v1/pools/{_p(pool)}/offers", json_body={"tenant": to}
        )
        return result

    # flavors
    def flavors(self, pool: str) -> list[FlavorJson]:
        result: FlavorPageJson = self.request("GET", f"/v1/pools/{_p(pool)}/flavors")
        return result["items"]

    def flavor(self, pool: str, name: str) -> JSON:
        result: JSON = self.request("GET", f"/v1/pools/{_p(pool)}/flavors/{_p(name)}")
        return result

    def create_flavor(self, pool: str, name: str, **shape: Any) -> JSON:
        """shape: vcpu, memoryGiB, diskGiB, gpus, offerId, placement (the JSON names)."""
        body = {"name": name, **shape}
        result: JSON = self.request("POST", f"/v1/pools/{_p(pool)}/flavors", json_body=body)
        return result

    def update_flavor(self, pool: str, name: str, **shape: Any) -> JSON:
        path = f"/v1/pools/{_p(pool)}/flavors/{_p(name)}"
        result: JSON = self.request("PUT", path, json_body=shape)
        return result

    def delete_flavor(self, pool: str, name: str) -> JSON:
        result: JSON = self.request("DELETE", f"/v1/pools/{_p(pool)}/flavors/{_p(name)}")
        return result

    # hosts
    def hosts(self, pool: str | None = None) -> list[HostListItemJson]:
        result: HostPageJson = self.request("GET", "/v1/hosts", params={"pool": pool})
        return result["items"]

    def host(self, host: str) -> HostDetailJson:
        result: HostDetailJson = self.request("GET", f"/v1/hosts/{_p(host)}")
        return result

    def adopt_host(self, pool: str, name: str, labels: Mapping[str, str] | None = None) -> JSON:
        body = _drop_none({"pool": pool, "name": name, "labels": dict(labels) if labels else None})
        result: JSON = self.request("POST", "/v1/hosts", json_body=body)
        return result

    def report_inventory(self, host: str, inventory: Mapping[str, Any]) -> JSON:
        result: JSON = self.request(
            "POST", f"/v1/hosts/{_p(host)}/inventory", json_body=dict(inventory)
        )
        return result

    def set_draining(self, host: str, draining: bool) -> HostJson:
        action = "drain" if draining else "ready"
        result: HostJson = self.request("POST", f"/v1/hosts/{_p(host)}/{action}")
        return result

    def host_specs(self, host: str) -> list[InstanceSpecJson]:
        """The InstanceSpecs of a host's live guests (what its agent pulls)."""
        result: HostSpecsJson = self.request("GET", f"/v1/hosts/{_p(host)}/specs")
        return result["items"]

    def host_reservations(self, host: str) -> list[HostBookingJson]:
        """The GPU reservations booked on a host, their devices and windows."""
        result: HostReservationsJson = self.request("GET", f"/v1/hosts/{_p(host)}/reservations")
        return result["items"]

    def report_instance_state(
        self, host: str, instance_id: str, state: str
    ) -> InstanceJson | GuestStateJson:
        """What a host's agent observed of one of its guests."""
        path = f"/v1/hosts/{_p(host)}/instances/{_p(instance_id)}/state"
        result: InstanceJson | GuestStateJson = self.request(
            "POST", path, json_body={"state": state}
        )
        return result

    def report_guests(
        self, host: str, health: Mapping[str, Any] | None, guests: list[Mapping[str, Any]]
    ) -> AgentReportJson:
        """A host's health and its guests' conditions and balloons, as its agent sees them."""
        path = f"/v1/hosts/{_p(host)}/guests/report"
        body = {"health": None if health is None else dict(health), "guests": guests}
        result: AgentReportJson = self.request("POST", path, json_body=body)
        return result

    # instances and quotas
    def instances(
        self,
        *,
        pool: str | None = None,
        state: str | None = None,
        include_deleted: bool = False,
        condition: str | None = None,
    ) -> list[InstanceJson]:
        params = {
            "pool": pool,
            "state": state,
            "includeDeleted": "true" if include_deleted else None,
            "condition": condition,
        }
        return list(self.request("GET", "/v1/instances", params=params)["items"])

    def instances_page(
        self, limit: int, *, after: int | None = None, **query: str | bool | None
    ) -> InstancePageJson:
        """At most `limit` instances after the first `after`, pending ones first and then the
        newest (or as `sort` orders them), with the total and the next page's cursor; `query`
        holds instances.list's filters as HTTP names them (q, state, owner, pool, host, sort,
        descending)."""
        params: dict[str, str | None] = {"limit": str(limit)}
        if after is not None:
            params["after"] = str(after)
        for name, value in query.items():
            if isinstance(value, bool):
                params[name] = "true" if value else None
            else:
                params[name] = value
        result: InstancePageJson = self.request("GET", "/v1/instances", params=params)
        return result

    def instance(self, instance_id: str) -> InstanceJson:
        result: InstanceJson = self.request("GET", f"/v1/instances/{_p(instance_id)}")
        return result

    def create_instance(
        self, pool: str, flavor: str, name: str | None = None, idempotency_key: str | None = None
    ) -> InstanceJson:
        body = _drop_none(
            {"pool": pool, "flavor": flavor, "name": name, "idempotencyKey": idempotency_key}
        )
        result: InstanceJson = self.request("POST", "/v1/instances", json_body=body)
        return result

    def instance_action(self, instance_id: str, action: str, **body: Any) -> InstanceJson:
        """stop, start or resize (flavor=…)."""
        path = f"/v1/instances/{_p(instance_id)}/{action}"
        result: InstanceJson = self.request("POST", path, json_body=body or None)
        return result

    def delete_instance(self, instance_id: str) -> InstanceJson:
        result: InstanceJson = self.request("DELETE", f"/v1/instances/{_p(instance_id)}")
        return result

    def quotas(self, pool: str | None = None) -> list[JSON]:
        return list(self.request("GET", "/v1/quotas", params={"pool": pool})["items"])

    def set_quota(self, tenant: str, pool: str, **limits: int | None) -> QuotaJson:
        path = f"/v1/quotas/{_p(tenant)}/{_p(pool)}"
        result: QuotaJson = self.request("PUT", path, json_body=limits)
        return result

    # events
    def events(
        self, after: int | None = None, types: Sequence[str] = (), limit: int = EVENTS.default
    ) -> EventPageJson:
        params: dict[str, Any] = {"after": after, "type": list(types) or None, "limit": limit}
        result: EventPageJson = self.request("GET", "/v1/events", params=params)
        return result

    def stream_events(
        self, after: int | None = None, *, count: int | None = None, seconds: float = 60.0
    ) -> Iterator[JSON]:
        """Events as they happen, after a cursor; stops after `count` events or `seconds`."""
        params: dict[str, Any] = {"after": after, "limit": count}
        if self.tenant is not None:
            params["tenant"] = self.tenant
        deadline = time.monotonic() + seconds
        query = {k: v for k, v in params.items() if v is not None}
        with self.http.stream("GET", "/v1/events/stream", params=query) as response:
            if response.status_code >= 400:
                response.read()
                raise error_from_response(response)
            for line in response.iter_lines():
                if line.startswith("data: "):
                    yield json.loads(line[6:])
                if time.monotonic() > deadline:
                    return

    # webhooks
    def webhooks(self) -> list[JSON]:
        return list(self.request("GET", "/v1/webhooks")["items"])

    def create_webhook(
        self, url: str, event_types: Sequence[str] = (), secret: str | None = None
    ) -> JSON:
        body = _drop_none({"url": url, "eventTypes": list(event_types), "secret": secret})
        result: JSON = self.request("POST", "/v1/webhooks", json_body=body)
        return result

    def delete_webhook(self, webhook_id: str) -> JSON:
        result: JSON = self.request("DELETE", f"/v1/webhooks/{_p(webhook_id)}")
        return result

    def webhook_deliveries(self, webhook_id: str, state: str | None = None) -> list[JSON]:
        path = f"/v1/webhooks/{_p(webhook_id)}/deliveries"
        return list(self.request("GET", path, params={"state": state})["items"])

    # jobs (root's principals)
    def jobs(self) -> list[JobJson]:
        """Each job's schedule, last outcome, failures and last error."""
        page: JobPageJson = self.request("GET", "/v1/jobs")
        return page["items"]

    def job_runs(self, job: str, limit: int = JOB_RUNS.default) -> list[JobRunJson]:
        """A job's latest recorded runs, newest first."""
        path = f"/v1/jobs/{_p(job)}/runs"
        page: JobRunPageJson = self.request("GET", path, params={"limit": limit})
        return page["items"]

    def run_job(self, job: str) -> JobRunJson:
        """Run the job now (root's admin); the run's record."""
        result: JobRunJson = self.request("POST", f"/v1/jobs/{_p(job)}/run")
        return result

"""Helpers of the HTTP tests: a served fleet, a client that checks every answer against OpenAPI."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx

from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app
from bcfleet.http.openapi import match_path, response_problems
from bcfleet.http.server import BackgroundServer
from bcfleet.jobs.vps_hosts import run_vps_hosts
from tests.support.builders import OP, inventory, token

PLACEMENT = {"bc.dev/cap.instance.placement": "true"}

TIMEOUT = httpx.Timeout(10.0)


@dataclass
class ApiClient:
    """httpx against a served fleet; every JSON answer must conform to the served document."""

    http: httpx.Client
    document: dict[str, Any]
    token: str | None = None
    seen: set[tuple[str, str]] = field(default_factory=set)

    def as_(self, bearer: str | None) -> ApiClient:
        return ApiClient(self.http, self.document, bearer, self.seen)

    def call(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = dict(kwargs.pop("headers", {}) or {})
        if self.token is not None:
            headers.setdefault("Authorization", f"Bearer {self.token}")
        response = self.http.request(method, path, headers=headers, **kwargs)
        self.check(method, path, response)
        return response

    def check(self, method: str, path: str, response: httpx.Response) -> None:
        bare = path.split("?", 1)[0]
        template = match_path(self.document, bare)
        if template is not None:
            self.seen.add((method.upper(), template))
        if response.headers.get("content-type", "").startswith("application/json"):
            problems = response_problems(
                self.document, method, bare, response.status_code, response.json()
            )
            assert not problems, f"{method} {path} -> {response.status_code}: {problems}"

    def get(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.call("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.call("POST", path, **kwargs)

    def put(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.call("PUT", path, **kwargs)

    def patch(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.call("PATCH", path, **kwargs)

    def delete(self, path: str, **kwargs: Any) -> httpx.Response:
        return self.call("DELETE", path, **kwargs)


@contextmanager
def served(fleet: Fleet, **options: Any) -> Iterator[tuple[BackgroundServer, ApiClient]]:
    """The fleet's application on 127.0.0.1 and a client of it (root's admin token)."""
    options.setdefault("tally_seconds", 0)
    app = create_app(fleet, **options)
    with (
        BackgroundServer(app) as server,
        httpx.Client(base_url=server.url, timeout=TIMEOUT) as http,
    ):
        root = token(fleet, "root", "root-admin", role="admin")
        yield server, ApiClient(http, app.state.openapi, root)


def error_code(response: httpx.Response) -> str:
    body: dict[str, Any] = response.json()
    return str(body["error"]["code"])


def two_tenants(fleet: Fleet) -> dict[str, Any]:
    """acme and globex, each with an admin token, a pool of its own with a flavor and a host."""
    made: dict[str, Any] = {}
    for tenant in ("acme", "globex"):
        fleet.api.tenants.create(OP, tenant)
        admin = token(fleet, tenant, f"{tenant}-admin", role="admin")
        pool = fleet.api.pools.create(
            admin, tenant_id=tenant, name=f"{tenant}-pool", kind="vps-host"
        )
        flavor = fleet.api.flavors.create(
            admin,
            tenant_id=tenant,
            pool_id=pool["id"],
            name="g1.small",
            vcpu=2,
            memory_gib=4,
            disk_gib=40,
        )
        host = fleet.api.hosts.adopt(
            admin, tenant_id=tenant, pool=pool["id"], name=f"{tenant}-01", labels=PLACEMENT
        )
        fleet.api.hosts.report(admin, host=host["name"], inventory=inventory(cpus=16, gpus=2))
        run_vps_hosts(fleet, fleet.now())
        instance = fleet.api.instances.create(
            admin, tenant_id=tenant, pool_id=pool["id"], flavor="g1.small", name=f"{tenant}-vm"
        )
        webhook = fleet.api.webhooks.create(admin, url=f"https://{tenant}.example/hook")
        api = fleet.api
        service = api.services.create(admin, tenant_id=tenant, workspace="prod", name="web")
        index = api.indexes.create(admin, tenant_id=tenant, workspace="prod", name="docs")
        environment = api.environments.create(admin, tenant_id=tenant, name="stg", size="medium")
        api.provider_accounts.create(  # root's alone: tokenEnv names a variable of the server
            OP,
            tenant_id=tenant,
            name=f"{tenant}-hz",
            provider="hetzner",
            token_env="HCLOUD_TOKEN",
        )
        reservation = api.reservations.create(
            admin, tenant_id=tenant, pool_id=pool["id"], gpus=1, duration="1h"
        )
        made[tenant] = {
            "reservation": reservation,
            "service": service,
            "index": index,
            "environment": environment,
            "webhook": webhook,
            "token": admin,
            "pool": pool,
            "flavor": flavor,
            "host": host,
            "instance": instance,
        }
    return made

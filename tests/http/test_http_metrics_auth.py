"""/metrics can require a bearer token (BCFLEET_METRICS_TOKEN), and names no tenant's objects."""

from __future__ import annotations

from dataclasses import replace

from bcfleet.fleet import Fleet
from tests.support.builders import OP
from tests.support.http import served


def test_metrics_require_the_configured_token(fleet: Fleet) -> None:
    fleet.settings = replace(fleet.settings, metrics_token="scrape-me")
    with served(fleet) as (_server, api):
        assert api.as_(None).get("/metrics").status_code == 401
        wrong = api.as_("not-it").get("/metrics")
        assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "UNAUTHENTICATED"
        assert api.as_(api.token).get("/metrics").status_code == 401  # a tenant token is not it
        scraped = api.as_("scrape-me").get("/metrics")
        assert scraped.status_code == 200 and "bcfleet_http_requests_total" in scraped.text
        assert api.as_(None).get("/healthz").status_code == 200  # liveness stays open


def test_metrics_name_no_tenants_objects(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme-secret-tenant")
    pool = fleet.api.pools.create(OP, tenant_id="root", name="pool-secret-name", kind="vps-host")
    with served(fleet) as (_server, api):
        api.get(f"/v1/pools/{pool['id']}")
        api.get("/v1/pools/pool-secret-name")
        text = api.as_(None).get("/metrics").text
    for secret in ("acme-secret-tenant", "pool-secret-name", pool["id"]):
        assert secret not in text

"""Every NO_CAPACITY answer carries Retry-After (PRODUCT.md §3), whichever call ran out and why.

A size whose spares are all taken answers with the replacement's ready time; a size that keeps
0 spares (no replacement is coming) with the spares job's interval. The streaming deploy, whose
answer has begun, ends with the error document naming the same seconds.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import httpx
import pytest

from bcfleet.clock import FakeClock
from bcfleet.domain.retry_after import retry_after_without_spares
from bcfleet.fleet import Fleet
from tests.support.builders import token
from tests.support.compute import make_spares_ready, serverless_tenant
from tests.support.http import ApiClient, served


@pytest.fixture
def acme(fleet: Fleet, clock: FakeClock) -> Iterator[ApiClient]:
    serverless_tenant(fleet, spares={"large": 1})
    make_spares_ready(fleet, clock)
    with served(fleet) as (_server, root):
        yield root.as_(token(fleet, "acme", "acme-admin"))


def service(acme: ApiClient, name: str, size: str, environment: str | None = None) -> str:
    made = acme.post(
        "/v1/services",
        json={"workspace": "prod", "name": name, "size": size, "environment": environment},
    )
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


def deployed(acme: ApiClient, name: str, size: str = "large", env: str | None = None) -> str:
    made = service(acme, name, size, env)
    assert acme.post(f"/v1/services/{made}/deploy").json()["status"] == "deployed"
    return made


def all_large_taken(acme: ApiClient) -> httpx.Response:
    deployed(acme, "web")
    return acme.post(f"/v1/services/{service(acme, 'api', 'large')}/deploy")


def deploy_with_zero_spares(acme: ApiClient) -> httpx.Response:
    return acme.post(f"/v1/services/{service(acme, 'web', 'medium')}/deploy")


def move_to_zero_spares(acme: ApiClient) -> httpx.Response:
    return acme.post(f"/v1/services/{deployed(acme, 'web')}/size", json={"size": "medium"})


def environment_to_zero_spares(acme: ApiClient) -> httpx.Response:
    env = acme.post("/v1/environments", json={"name": "staging", "size": "large"}).json()
    deployed(acme, "web", env="staging")
    return acme.patch(f"/v1/environments/{env['id']}", json={"size": "medium"})


@pytest.mark.parametrize(
    "run_out",
    [
        pytest.param(all_large_taken, id="deploy-every-spare-taken"),
        pytest.param(deploy_with_zero_spares, id="deploy-size-with-0-spares"),
        pytest.param(move_to_zero_spares, id="set-size-to-0-spares"),
        pytest.param(environment_to_zero_spares, id="environment-to-0-spares"),
    ],
)
def test_every_no_capacity_answer_has_retry_after(
    acme: ApiClient, run_out: Callable[[ApiClient], httpx.Response]
) -> None:
    refused = run_out(acme)
    assert refused.status_code == 503, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["details"]["reason"]) == ("NO_CAPACITY", "fleet_no_capacity")
    seconds = int(refused.headers["retry-after"])
    assert seconds == error["details"]["retry_after"] >= 1
    assert f"Retry after {seconds} seconds." in error["message"]


def test_zero_spares_retry_after_the_spares_jobs_interval(fleet: Fleet, acme: ApiClient) -> None:
    refused = deploy_with_zero_spares(acme)
    interval = fleet.settings.job_intervals.get("spares", 30.0)
    assert int(refused.headers["retry-after"]) == retry_after_without_spares(interval)


def test_a_streaming_deploy_that_gives_up_names_retry_after(acme: ApiClient) -> None:
    made = service(acme, "web", "medium")
    answer = acme.post(
        f"/v1/services/{made}/deploy/stream", params={"pollSeconds": 1, "timeoutSeconds": 1}
    )
    last = json.loads(answer.text.splitlines()[-1])
    assert last["error"]["code"] == "NO_CAPACITY"
    assert last["error"]["details"]["retry_after"] >= 1

"""bcfleet's Hetzner provider against Hetzner's API as documented today: gone endpoints, every
error code, rate-limit headers, pages by meta or Link, and actions followed to their end."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest

from bcfleet.clock import FakeClock
from bcfleet.errors import (
    CapacityUnavailableError,
    ConflictError,
    FleetError,
    InvalidInputError,
    ProviderIncompatibleError,
    ProviderUnavailableError,
)
from bcfleet.fleet import Fleet
from bcfleet.jobs.providers import run_reconcile
from bcfleet.providers.errors import CODES, translate, translate_action_error
from bcfleet.providers.fake_server import FakeHetzner
from bcfleet.providers.hetzner import HetznerProvider
from bcfleet.providers.paging import next_page
from bcfleet.providers.retrying import RetryPolicy, seconds_until_one_request
from tests.support.builders import OP

START = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
TOKEN = "hc-conformance-token"
OURS = {"bcfleet.dev/instance": "ins_01conf"}

# Hetzner's documented general error codes with their HTTP status.
DOCUMENTED = [
    ("json_error", 400),
    ("unauthorized", 401),
    ("token_readonly", 401),
    ("forbidden", 403),
    ("maintenance", 403),
    ("resource_limit_exceeded", 403),
    ("not_found", 404),
    ("method_not_allowed", 405),
    ("uniqueness_error", 409),
    ("conflict", 409),
    ("deprecated_api_endpoint", 410),
    ("resource_unavailable", 412),
    ("invalid_input", 422),
    ("service_error", 422),
    ("unsupported_error", 422),
    ("locked", 423),
    ("protected", 423),
    ("rate_limit_exceeded", 429),
    ("server_error", 500),
    ("unavailable", 503),
    ("timeout", 504),
]
# Codes particular to the server endpoints and actions.
PER_ENDPOINT = [
    "placement_error",
    "server_not_stopped",
    "no_space_left_in_location",
    "primary_ip_assigned",
    "primary_ip_version_mismatch",
    "bad_gateway",
    "action_failed",
]


class RecordingClock(FakeClock):
    """A fake clock that records every sleep."""

    def __init__(self, start: datetime) -> None:
        super().__init__(start)
        self.sleeps: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        super().sleep(seconds)


@pytest.fixture
def clock() -> RecordingClock:
    return RecordingClock(START)


@pytest.fixture
def fake(clock: RecordingClock) -> Iterator[FakeHetzner]:
    with FakeHetzner(token=TOKEN, clock=clock) as server:
        yield server


@pytest.fixture
def connect(fake: FakeHetzner, clock: RecordingClock) -> Iterator[Callable[..., HetznerProvider]]:
    opened: list[HetznerProvider] = []

    def make(**overrides: Any) -> HetznerProvider:
        options: dict[str, Any] = {
            "token_env": "HCLOUD_TOKEN",
            "environ": {"HCLOUD_TOKEN": TOKEN},
            "base_url": fake.url,
            "clock": clock,
            "rng": random.Random(3),
            "timeout": 2.0,
        }
        options.update(overrides)
        provider = HetznerProvider(**options)
        opened.append(provider)
        return provider

    yield make
    for provider in opened:
        provider.close()


@pytest.fixture
def provider(connect: Callable[..., HetznerProvider]) -> HetznerProvider:
    return connect()


# ----- the datacenters are gone --------------------------------------------------------------


def test_offers_come_without_the_removed_datacenters_endpoint(
    provider: HetznerProvider, fake: FakeHetzner
) -> None:
    offers = provider.offers()
    assert {o.id for o in offers} >= {"cx23", "cpx22"}
    assert fake.count("GET", "/datacenters") == 0
    headers = {"Authorization": f"Bearer {TOKEN}"}
    gone = httpx.get(fake.url + "/datacenters", headers=headers, timeout=5)
    assert gone.status_code == 410
    assert gone.json()["error"]["code"] == "deprecated_api_endpoint"


def test_offer_availability_and_deprecation_come_from_each_location_entry(
    provider: HetznerProvider, fake: FakeHetzner, clock: RecordingClock
) -> None:
    fake.sell_out("cpx22", "ash")
    by_place = {(o.id, o.region): o for o in provider.offers()}
    assert not by_place[("cpx22", "ash")].available
    assert by_place[("cpx22", "hil")].available
    assert by_place[("cx22", "nbg1")].deprecated and by_place[("cx22", "nbg1")].available
    clock.set(datetime(2027, 1, 2, tzinfo=UTC))
    assert not {(o.id, o.region): o for o in provider.offers()}[("cx22", "nbg1")].available


def test_a_server_is_placed_by_its_location(provider: HetznerProvider, fake: FakeHetzner) -> None:
    fake.add_server("placed", "cpx22", "hel1", OURS)
    [server] = provider.list_servers(OURS)
    assert server.region == "hel1"
    assert "datacenter" not in fake.servers()[0]


def test_the_cli_lists_offers_from_the_fake(
    cli: Any, fake: FakeHetzner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HCLOUD_TOKEN", TOKEN)
    made = cli("provider-accounts", "create", "--tenant", "root", "--name", "hz", "--provider",
               "hetzner", "--token-env", "HCLOUD_TOKEN", "--endpoint", fake.url)  # fmt: skip
    assert made.exit_code == 0, made.stderr
    listed = cli("provider-accounts", "offers", "hz", "--tenant", "root", "--json")
    assert listed.exit_code == 0, listed.stderr
    items = listed.json()["items"]
    assert {"id", "kind", "region", "vcpu", "memoryGiB", "diskGiB", "pricePerHour", "currency",
            "available", "deprecated"} == set(items[0])  # fmt: skip


def test_an_endpoint_the_provider_removed_is_a_clear_non_retryable_error(
    provider: HetznerProvider, fake: FakeHetzner, clock: RecordingClock
) -> None:
    fake.fail_next("deprecated_api_endpoint", 410, times=5, path="/server_types")
    with pytest.raises(ProviderIncompatibleError) as caught:
        provider.offers()
    error = caught.value
    assert error.code == "PROVIDER_UNAVAILABLE"
    assert error.details["providerCode"] == "deprecated_api_endpoint"
    assert error.details["retryable"] is False
    assert "deprecated_api_endpoint" in error.message
    assert "forced deprecated_api_endpoint" in error.message, "the provider's message is named"
    assert fake.count("GET", "/server_types") == 1 and clock.sleeps == []


def test_offers_through_the_api_never_fail_as_internal(
    fleet: Fleet, fake: FakeHetzner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HCLOUD_TOKEN", TOKEN)
    fleet.api.provider_accounts.create(
        OP, tenant_id="root", name="hz", provider="hetzner", token_env="HCLOUD_TOKEN",
        endpoint=fake.url,
    )  # fmt: skip
    listed = fleet.api.provider_accounts.offers(OP, tenant_id="root", account_id="hz")
    assert listed["items"]
    fake.fail_next("deprecated_api_endpoint", 410, times=1)
    with pytest.raises(FleetError) as caught:
        fleet.api.provider_accounts.offers(OP, tenant_id="root", account_id="hz")
    assert caught.value.code == "PROVIDER_UNAVAILABLE"
    assert caught.value.http_status == 503


# ----- every documented code -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "status"),
    [pytest.param(code, status, id=code) for code, status in DOCUMENTED]
    + [pytest.param(code, 422, id=code) for code in PER_ENDPOINT],
)
def test_every_documented_code_has_its_own_clear_error(code: str, status: int) -> None:
    assert code in CODES, "each documented code has a row in the table"
    error = translate("hetzner", status, code, "the provider's words")
    assert error.code != "INTERNAL" and error.http_status != 500
    assert code in error.message and "the provider's words" in error.message
    assert error.details["providerCode"] == code
    assert error.details["providerMessage"] == "the provider's words"
    assert isinstance(error.details["retryable"], bool)
    json.dumps(error.to_json())


@pytest.mark.parametrize(
    ("code", "status", "fleet_code"),
    [
        pytest.param("server_not_stopped", 409, "CONFLICT", id="server-not-stopped"),
        pytest.param("placement_error", 412, "CAPACITY_UNAVAILABLE", id="placement-error"),
        pytest.param("token_readonly", 401, "FORBIDDEN", id="token-readonly"),
        pytest.param("timeout", 504, "PROVIDER_UNAVAILABLE", id="timeout"),
        pytest.param("method_not_allowed", 405, "PROVIDER_UNAVAILABLE", id="method-not-allowed"),
        pytest.param("some_future_code", 418, "PROVIDER_UNAVAILABLE", id="unknown-code"),
    ],
)
def test_codes_from_the_wire_keep_their_meaning(
    provider: HetznerProvider, fake: FakeHetzner, code: str, status: int, fleet_code: str
) -> None:
    fake.fail_next(code, status, times=50, path="/servers")
    with pytest.raises(FleetError) as caught:
        provider.list_servers(OURS)
    assert caught.value.code == fleet_code
    assert caught.value.details["providerCode"] == code
    assert code in caught.value.message


def test_an_error_answer_without_a_body_is_named_by_its_status() -> None:
    def gone(_: httpx.Request) -> httpx.Response:
        return httpx.Response(410)

    provider = HetznerProvider(
        token_env="T", environ={"T": "x"}, base_url="http://hetzner.test/v1",
        transport=httpx.MockTransport(gone), clock=FakeClock(START),
    )  # fmt: skip
    with pytest.raises(ProviderIncompatibleError) as caught:
        provider.offers()
    assert caught.value.details["providerCode"] == "deprecated_api_endpoint"


# ----- rate limits ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("limit", "remaining", "reset_in", "expected"),
    [
        pytest.param(3600, 0, 3600, 1.0, id="3600-an-hour-one-a-second"),
        pytest.param(360, 0, 3600, 10.0, id="360-an-hour-one-every-ten-seconds"),
        pytest.param(3600, 0, 1800, 0.5, id="half-full-reset"),
        pytest.param(3600, 5, 3595, 0.0, id="requests-remain"),
        pytest.param(None, 0, 42, 42.0, id="no-limit-header-waits-for-the-reset"),
        pytest.param(3600, 0, -5, 0.0, id="reset-in-the-past"),
    ],
)
def test_the_wait_for_one_regained_request(
    limit: float | None, remaining: int, reset_in: float, expected: float
) -> None:
    now = START.timestamp()
    assert seconds_until_one_request(limit, remaining, now + reset_in, now) == pytest.approx(
        expected
    )


def test_a_spent_budget_waits_for_one_request_at_the_projects_limit(
    provider: HetznerProvider, fake: FakeHetzner, clock: RecordingClock
) -> None:
    fake.state.set_rate_limit(360, remaining=1)
    provider.list_servers({})
    assert clock.sleeps == []
    provider.list_servers({})
    assert clock.sleeps == [pytest.approx(10.0, abs=1.0)], "not a fixed 60 s"
    assert fake.count("GET", "/servers") == 2


def test_a_429_waits_until_rate_limit_reset(
    provider: HetznerProvider, fake: FakeHetzner, clock: RecordingClock
) -> None:
    admin = httpx.post(
        fake.admin_url + "/faults", json={"rateLimited": {"times": 1, "resetIn": 7}}, timeout=5
    )
    assert admin.status_code == 200
    assert provider.list_servers({}) == []
    [wait] = clock.sleeps
    assert 7.0 <= wait <= 7.5
    assert fake.count("GET", "/servers") == 2


def test_a_natural_429_says_when_the_bucket_is_full(
    fake: FakeHetzner, clock: RecordingClock
) -> None:
    fake.state.set_rate_limit(3600, remaining=0)
    headers = {"Authorization": f"Bearer {TOKEN}"}
    response = httpx.get(fake.url + "/servers", headers=headers, timeout=5)
    assert response.status_code == 429
    reset = int(response.headers["RateLimit-Reset"])
    assert reset == pytest.approx(clock.now().timestamp() + 3600, abs=2)


# ----- pages ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("payload", "link", "current", "expected"),
    [
        pytest.param({"meta": {"pagination": {"next_page": 3}}}, None, 2, 3, id="meta"),
        pytest.param(
            {"meta": {"pagination": {"next_page": None}}},
            "x?page=9",
            2,
            None,
            id="meta-says-last-page",
        ),  # fmt: skip
        pytest.param({}, "https://api.example/v1/servers?page=4&per_page=2", 3, 4, id="link"),
        pytest.param({}, "https://api.example/v1/servers?page=3", 3, None, id="link-no-progress"),
        pytest.param({}, None, 1, None, id="neither"),
        pytest.param({"meta": {"pagination": {"next_page": True}}}, None, 1, None, id="not-a-page"),
    ],
)
def test_the_next_page(
    payload: dict[str, Any], link: str | None, current: int, expected: int | None
) -> None:
    assert next_page(payload, link, current) == expected


def test_pages_are_followed_by_the_link_header_alone() -> None:
    """A provider answering without meta.pagination, only with Link, is still read to the end."""
    servers = [_server(number) for number in range(5)]
    asked: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        number = int(request.url.params.get("page", "1"))
        chunk = servers[(number - 1) * 2 : number * 2]
        headers = {}
        if number < 3:
            headers["Link"] = (
                f'<https://elsewhere.example/v1/servers?page={number + 1}>; rel="next"'
            )
        return httpx.Response(200, json={"servers": chunk}, headers=headers)

    provider = HetznerProvider(
        token_env="T", environ={"T": "x"}, base_url="http://hetzner.test/v1",
        transport=httpx.MockTransport(answer), clock=FakeClock(START), page_size=2,
    )  # fmt: skip
    listed = provider.list_servers({})
    assert [s.name for s in listed] == [f"s-{n}" for n in range(5)]
    assert len(asked) == 3
    assert all(url.startswith("http://hetzner.test/v1/servers") for url in asked), (
        "only the page number is taken from a link"
    )


def test_offers_follow_meta_pages_over_the_fake(
    connect: Callable[..., HetznerProvider], fake: FakeHetzner
) -> None:
    assert len({o.id for o in connect(page_size=4).offers()}) == 9
    assert fake.count("GET", "/server_types") == 3


def _server(number: int) -> dict[str, Any]:
    return {
        "id": 100 + number,
        "name": f"s-{number}",
        "status": "running",
        "created": "2026-11-30T09:00:00+00:00",
        "labels": {},
        "server_type": {"name": "cx23"},
        "location": {"name": "fsn1"},
    }


# ----- actions -------------------------------------------------------------------------------


def test_a_create_is_followed_to_its_actions_success(
    provider: HetznerProvider, fake: FakeHetzner, clock: RecordingClock
) -> None:
    server = provider.create_server("ins-act", "cx23", "ubuntu-24.04", "fsn1", OURS)
    assert server.status == "running"
    polls = [r.path for r in fake.requests if r.path.startswith("/actions/")]
    assert len(polls) == 5 and len(set(polls)) == 1
    assert clock.sleeps == [1.0] * 5


def test_a_failed_create_action_is_its_error_and_leaves_no_server(
    provider: HetznerProvider, fake: FakeHetzner
) -> None:
    fake.fail_next_actions("create_server", "placement_error", "no suitable host")
    with pytest.raises(CapacityUnavailableError) as caught:
        provider.create_server("ins-fail", "cx23", "ubuntu-24.04", "fsn1", OURS)
    details = caught.value.details
    assert (details["providerCode"], details["action"]) == ("placement_error", "create_server")
    assert "no suitable host" in caught.value.message
    assert fake.server_names() == [], "the half-made server is deleted"


def test_a_failed_delete_action_is_its_error(provider: HetznerProvider, fake: FakeHetzner) -> None:
    server = provider.create_server("ins-keep", "cx23", "ubuntu-24.04", "fsn1", OURS)
    fake.fail_next_actions("delete_server", "server_not_stopped", "stop it first")
    with pytest.raises(ConflictError) as caught:
        provider.delete_server(server.id)
    assert caught.value.details["providerCode"] == "server_not_stopped"
    assert caught.value.details["action"] == "delete_server"


def test_an_action_still_running_past_the_timeout_has_an_unknown_outcome(
    connect: Callable[..., HetznerProvider], fake: FakeHetzner
) -> None:
    provider = connect(retry=RetryPolicy(action_timeout=2.0))
    with pytest.raises(ProviderUnavailableError) as caught:
        provider.create_server("ins-slow", "cx23", "ubuntu-24.04", "fsn1", OURS)
    details = caught.value.details
    assert (details["providerCode"], details["outcome"]) == ("action_timeout", "unknown")
    assert fake.server_names() == ["ins-slow"], "a server still being made is kept"


def test_an_action_error_without_a_known_code_is_provider_unavailable() -> None:
    action = {"id": 7, "command": "create_server", "status": "error", "error": None}
    error = translate_action_error("hetzner", action)
    assert error.code == "PROVIDER_UNAVAILABLE"
    assert error.details["providerCode"] == "action_failed"
    bad = translate_action_error(
        "hetzner", {"id": 8, "command": "x", "error": {"code": "invalid_input", "message": "m"}}
    )
    assert isinstance(bad, InvalidInputError)


def test_the_reconciler_reports_a_failed_create_action_and_tries_again(
    fleet: Fleet, fake: FakeHetzner, clock: RecordingClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HCLOUD_TOKEN", TOKEN)
    fleet.api.provider_accounts.create(
        OP, tenant_id="root", name="hz", provider="hetzner", token_env="HCLOUD_TOKEN",
        endpoint=fake.url,
    )  # fmt: skip
    fleet.api.pools.create(OP, tenant_id="root", name="hz-fsn", kind="provider",
                           provider_account="hz")  # fmt: skip
    fleet.api.flavors.create(OP, tenant_id="root", pool_id="hz-fsn", name="cx23", vcpu=2,
                             memory_gib=4, disk_gib=40, offer_id="cx23")  # fmt: skip
    instance_id = fleet.api.instances.create(OP, tenant_id="root", pool_id="hz-fsn",
                                             flavor="cx23")["id"]  # fmt: skip
    fake.fail_next_actions("create_server", "placement_error", "no suitable host")

    assert run_reconcile(fleet, clock.now())["failed"] == 1
    shown = fleet.api.instances.show(OP, instance_id)
    [condition] = shown["conditions"]
    assert shown["state"] == "provisioning"
    assert condition["reason"] == "CreateFailed"
    assert "placement_error" in condition["message"] and "no suitable host" in condition["message"]
    assert fake.server_names() == []

    assert run_reconcile(fleet, clock.now())["created"] == 1
    assert fleet.api.instances.show(OP, instance_id)["state"] == "running"

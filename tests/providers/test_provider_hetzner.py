"""The Hetzner provider against the local fake over real HTTP: offers, servers, retries, errors."""

from __future__ import annotations

import json
import random
import traceback
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest

from bcfleet.clock import FakeClock
from bcfleet.errors import (
    CapacityUnavailableError,
    ConflictError,
    FleetError,
    InvalidInputError,
    NotFoundError,
    ProviderRateLimitedError,
    ProviderUnavailableError,
    UnauthenticatedError,
)
from bcfleet.providers.base import ProviderImpl
from bcfleet.providers.fake_server import FakeHetzner
from bcfleet.providers.hetzner import HetznerProvider, label_selector_text
from bcfleet.providers.hetzner_offers import offers_of
from bcfleet.providers.retrying import RetryPolicy

START = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
TOKEN = "hc-secret-7Qp2xVw9Lk3Zr8"
OURS = {"bcfleet.dev/instance": "ins_01jz", "bcfleet.dev/pool": "pool_01jz"}


class RecordingClock(FakeClock):
    """A fake clock that records every sleep and can run a hook on it."""

    def __init__(self, start: datetime) -> None:
        super().__init__(start)
        self.sleeps: list[float] = []
        self.on_sleep: Callable[[], object] | None = None

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        super().sleep(seconds)
        if self.on_sleep is not None:
            self.on_sleep()


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
            "rng": random.Random(7),
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


# ----- offers ------------------------------------------------------------------------------


def test_the_provider_is_a_provider_impl(provider: HetznerProvider) -> None:
    assert isinstance(provider, ProviderImpl)


def test_an_offer_reads_like_the_documents_example(provider: HetznerProvider) -> None:
    offers = {(o.id, o.region): o for o in provider.offers()}
    assert offers[("cx22", "fsn1")].to_json() == {
        "id": "cx22",
        "kind": "vps",
        "region": "fsn1",
        "vcpu": 2,
        "memoryGiB": 4,
        "diskGiB": 40,
        "pricePerHour": 0.0071,
        "currency": "EUR",
        "available": True,
        "deprecated": True,
    }


@pytest.mark.parametrize(
    ("kind", "min_vcpu", "expected_ids"),
    [
        pytest.param(
            "vps",
            None,
            {"cx22", "cx32", "cx23", "cx33", "cx43", "cax11", "cpx22", "cpx32", "ccx13"},
            id="every-vps",
        ),
        pytest.param("vps", 4, {"cx32", "cx33", "cx43", "cpx32"}, id="vps-with-4-vcpu"),
        pytest.param(None, 8, {"cx43"}, id="any-kind-with-8-vcpu"),
        pytest.param("gpu", None, set(), id="no-gpu-offers"),
    ],
)
def test_offers_are_filtered_by_kind_and_min_vcpu(
    provider: HetznerProvider, kind: str | None, min_vcpu: int | None, expected_ids: set[str]
) -> None:
    offers = provider.offers(kind=kind, min_vcpu=min_vcpu)
    assert {o.id for o in offers} == expected_ids
    assert all(o.vcpu >= (min_vcpu or 0) for o in offers)
    assert offers == sorted(offers, key=lambda o: (o.id, o.region))


def test_there_is_one_offer_per_type_and_priced_location(provider: HetznerProvider) -> None:
    cpx22 = {o.region: o for o in provider.offers() if o.id == "cpx22"}
    assert set(cpx22) == {"fsn1", "nbg1", "hel1", "ash", "hil", "sin"}
    assert cpx22["ash"].price_per_hour > cpx22["fsn1"].price_per_hour


def test_deprecated_offers_are_flagged(provider: HetznerProvider) -> None:
    deprecated = {o.id for o in provider.offers() if o.deprecated}
    assert deprecated == {"cx22", "cx32"}


def test_a_deprecated_offer_past_its_end_of_sale_is_unavailable(
    provider: HetznerProvider, clock: RecordingClock
) -> None:
    clock.set(datetime(2027, 2, 1, tzinfo=UTC))
    by_id = {(o.id, o.region): o for o in provider.offers()}
    assert not by_id[("cx22", "fsn1")].available
    assert by_id[("cx22", "fsn1")].deprecated
    assert by_id[("cx23", "fsn1")].available


def test_a_sold_out_offer_is_unavailable_only_where_it_is_sold_out(
    provider: HetznerProvider, fake: FakeHetzner
) -> None:
    fake.sell_out("cx23", "fsn1")
    by_id = {(o.id, o.region): o for o in provider.offers()}
    assert not by_id[("cx23", "fsn1")].available
    assert by_id[("cx23", "nbg1")].available


def test_offers_follow_every_page(
    connect: Callable[..., HetznerProvider], fake: FakeHetzner
) -> None:
    offers = connect(page_size=2).offers()
    assert len({o.id for o in offers}) == 9
    assert fake.count("GET", "/server_types") == 5
    assert fake.count("GET", "/datacenters") == 0


def test_offers_stay_available_when_the_answer_has_no_location_entries() -> None:
    server_type = {
        "id": 114,
        "name": "cx23",
        "cores": 2,
        "memory": 4.0,
        "disk": 40,
        "deprecation": None,
        "prices": [{"location": "fsn1", "price_hourly": {"net": "0.0048", "gross": "0.0057"}}],
    }
    [offer] = offers_of(server_type, START, "EUR")
    assert offer.available and not offer.deprecated
    assert offer.price_per_hour == 0.0057


# ----- servers -----------------------------------------------------------------------------


def test_a_server_is_created_listed_by_labels_found_by_name_and_deleted(
    provider: HetznerProvider, fake: FakeHetzner
) -> None:
    fake.add_server("someone-elses", "cx23", "fsn1", {"team": "web"})
    server = provider.create_server("ins-01jz", "cx23", "ubuntu-24.04", "fsn1", OURS)
    assert (server.name, server.offer_id, server.region) == ("ins-01jz", "cx23", "fsn1")
    assert dict(server.labels) == OURS
    assert server.created == START

    assert provider.list_servers(OURS) == [server]
    assert provider.list_servers({"bcfleet.dev/pool": "pool_01jz"}) == [server]
    assert len(provider.list_servers({})) == 2
    assert provider.get_server_by_name("ins-01jz") == server
    assert provider.get_server_by_name("nobody") is None

    provider.delete_server(server.id)
    assert provider.list_servers(OURS) == []
    assert fake.server_names() == ["someone-elses"]


def test_server_status_is_tracked(
    provider: HetznerProvider, clock: RecordingClock, fake: FakeHetzner
) -> None:
    server = provider.create_server("ins-boot", "cx23", "ubuntu-24.04", "fsn1", OURS)
    assert server.status == "running", "create waits for its action, which ends once booted"
    assert clock.sleeps == [1.0] * 5, "the action is polled every second until it ends"
    found = provider.get_server_by_name("ins-boot")
    assert found is not None and found.status == "running"
    assert found.to_json()["created"] == "2026-11-30T10:00:00Z"


def test_listing_servers_follows_every_page(
    connect: Callable[..., HetznerProvider], fake: FakeHetzner
) -> None:
    for number in range(5):
        fake.add_server(f"ins-{number}", "cx23", "fsn1", OURS)
    fake.add_server("other", "cx23", "fsn1", {})
    servers = connect(page_size=2).list_servers(OURS)
    assert [s.name for s in servers] == [f"ins-{n}" for n in range(5)]
    assert fake.count("GET", "/servers") == 3


def test_deleting_a_missing_server_is_not_found(provider: HetznerProvider) -> None:
    with pytest.raises(NotFoundError) as caught:
        provider.delete_server("4999999")
    assert caught.value.details["providerCode"] == "not_found"


@pytest.mark.parametrize("server_id", ["abc", "../servers", ""])
def test_a_server_id_that_is_not_a_number_is_invalid(
    provider: HetznerProvider, server_id: str
) -> None:
    with pytest.raises(InvalidInputError):
        provider.delete_server(server_id)


def test_labels_that_a_selector_cannot_hold_are_invalid() -> None:
    assert label_selector_text({"b": "2", "a": "1"}) == "a=1,b=2"
    with pytest.raises(InvalidInputError):
        label_selector_text({"a": "1,b=2"})


# ----- rate limits -------------------------------------------------------------------------


def test_a_429_storm_is_waited_out_until_each_reset(
    provider: HetznerProvider, fake: FakeHetzner, clock: RecordingClock
) -> None:
    fake.rate_limit_next(3, reset_in=5)
    assert provider.get_server_by_name("nobody") is None
    assert len(clock.sleeps) == 3
    assert all(5.0 <= wait <= 6.5 for wait in clock.sleeps)  # whole-second reset + jitter
    assert fake.count("GET", "/servers") == 4


def test_waits_for_a_far_reset_are_capped(
    connect: Callable[..., HetznerProvider], fake: FakeHetzner, clock: RecordingClock
) -> None:
    provider = connect(retry=RetryPolicy(max_rate_limit_wait=10.0))
    fake.rate_limit_next(2, reset_in=3600)
    assert provider.list_servers({}) == []
    assert clock.sleeps == [10.0, 10.0]


def test_a_storm_longer_than_the_attempts_is_rate_limited(
    connect: Callable[..., HetznerProvider], fake: FakeHetzner, clock: RecordingClock
) -> None:
    provider = connect(retry=RetryPolicy(max_attempts=4, max_rate_limit_wait=30.0))
    fake.rate_limit_next(50, reset_in=120)
    with pytest.raises(ProviderRateLimitedError) as caught:
        provider.list_servers({})
    error = caught.value
    assert error.code == "CONFLICT"
    assert error.details["providerCode"] == "rate_limit_exceeded"
    assert error.details["retryable"] is True
    assert error.details["retryAfterSeconds"] == pytest.approx(120, abs=1)
    assert fake.count("GET", "/servers") == 4
    assert clock.sleeps == [30.0, 30.0, 30.0]


def test_no_request_is_sent_while_the_budget_is_spent(
    provider: HetznerProvider, fake: FakeHetzner, clock: RecordingClock
) -> None:
    fake.state.set_rate_limit(3600, remaining=1)
    provider.list_servers({})
    assert clock.sleeps == []
    provider.list_servers({})
    assert clock.sleeps == [1.0], "one request is regained after a second at 3600 an hour"
    assert fake.count("GET", "/servers") == 2


# ----- safe retries ------------------------------------------------------------------------


def test_reads_are_retried_after_server_faults_with_jittered_backoff(
    provider: HetznerProvider, fake: FakeHetzner, clock: RecordingClock
) -> None:
    fake.fail_next("unavailable", 503, times=3, path="/servers")
    assert provider.list_servers({}) == []
    assert len(clock.sleeps) == 3
    for attempt, wait in enumerate(clock.sleeps):
        ceiling = 0.5 * 2**attempt
        assert ceiling / 2 <= wait <= ceiling


def test_backoff_never_exceeds_its_cap() -> None:
    policy = RetryPolicy(base_delay=1.0, max_delay=8.0)
    rng = random.Random(1)
    assert all(4.0 <= policy.backoff(n, rng) <= 8.0 for n in range(3, 40))


def test_reads_give_up_as_provider_unavailable(
    provider: HetznerProvider, fake: FakeHetzner
) -> None:
    fake.fail_next("server_error", 500, times=50)
    with pytest.raises(ProviderUnavailableError) as caught:
        provider.offers()
    assert caught.value.code == "PROVIDER_UNAVAILABLE"
    assert caught.value.details["retryable"] is True
    assert fake.count("GET", "/server_types") == 5


def test_slow_answers_time_out_clearly(
    connect: Callable[..., HetznerProvider], fake: FakeHetzner
) -> None:
    provider = connect(timeout=0.3, retry=RetryPolicy(max_attempts=2))
    fake.slow_down(2.0)
    with pytest.raises(ProviderUnavailableError) as caught:
        provider.list_servers({})
    assert caught.value.details["providerCode"] == "timeout"
    assert caught.value.details["attempts"] == 2
    assert "timeout" in caught.value.message
    fake.slow_down(0)
    assert provider.list_servers({}) == []


def test_a_provider_that_is_down_is_unavailable_and_recovers_after_restart(
    provider: HetznerProvider, fake: FakeHetzner
) -> None:
    provider.create_server("ins-kept", "cx23", "ubuntu-24.04", "fsn1", OURS)
    fake.stop()
    with pytest.raises(ProviderUnavailableError) as caught:
        provider.list_servers(OURS)
    assert caught.value.details["providerCode"] == "connect_error"
    fake.start()
    assert [s.name for s in provider.list_servers(OURS)] == ["ins-kept"]


def test_deleting_is_retried_and_a_lost_answer_counts_as_done(
    provider: HetznerProvider, fake: FakeHetzner
) -> None:
    server = provider.create_server("ins-del", "cx23", "ubuntu-24.04", "fsn1", OURS)
    fake.fail_next("locked", 423, times=2, method="DELETE")
    provider.delete_server(server.id)
    assert fake.server_names() == []
    assert fake.count("DELETE", f"/servers/{server.id}") == 3


# ----- creates that must not duplicate -----------------------------------------------------


def test_a_create_that_timed_out_after_the_server_was_made_is_found_by_name(
    connect: Callable[..., HetznerProvider], fake: FakeHetzner
) -> None:
    provider = connect(timeout=0.5)
    fake.hang_after_create(times=1, seconds=10)
    server = provider.create_server("ins-lost", "cx23", "ubuntu-24.04", "fsn1", OURS)
    assert server.name == "ins-lost"
    assert fake.server_names() == ["ins-lost"]
    assert fake.count("POST", "/servers") == 1
    assert [r.query for r in fake.requests if r.method == "GET"] == [{"name": "ins-lost"}]


def test_a_create_whose_answer_was_a_server_fault_is_looked_up_then_sent_again(
    provider: HetznerProvider, fake: FakeHetzner
) -> None:
    fake.fail_next("server_error", 500, times=1, method="POST")
    server = provider.create_server("ins-again", "cx23", "ubuntu-24.04", "fsn1", OURS)
    assert fake.server_names() == [server.name]
    assert fake.count("POST", "/servers") == 2


def test_a_create_refused_with_429_is_sent_again(
    provider: HetznerProvider, fake: FakeHetzner
) -> None:
    fake.rate_limit_next(2, reset_in=1)
    provider.create_server("ins-throttled", "cx23", "ubuntu-24.04", "fsn1", OURS)
    assert fake.server_names() == ["ins-throttled"]
    assert fake.count("POST", "/servers") == 3


def test_a_create_survives_a_provider_restart(
    provider: HetznerProvider, fake: FakeHetzner, clock: RecordingClock
) -> None:
    fake.stop()
    clock.on_sleep = fake.start
    server = provider.create_server("ins-restart", "cx23", "ubuntu-24.04", "fsn1", OURS)
    assert fake.server_names() == [server.name]
    assert clock.sleeps[0] < 1.0, "one backoff while the provider was down"
    assert clock.sleeps[1:] == [1.0] * 5, "then the create action is polled until it ends"


def test_a_lost_create_never_adopts_a_server_without_our_labels(
    provider: HetznerProvider, fake: FakeHetzner
) -> None:
    fake.add_server("ins-taken", "cx23", "fsn1", {"team": "web"})
    fake.fail_next("server_error", 500, times=1, method="POST")
    with pytest.raises(ConflictError) as caught:
        provider.create_server("ins-taken", "cx23", "ubuntu-24.04", "fsn1", OURS)
    assert caught.value.details["name"] == "ins-taken"
    assert fake.server_names() == ["ins-taken"]


def test_a_lost_create_whose_lookup_fails_reports_an_unknown_outcome(
    connect: Callable[..., HetznerProvider], fake: FakeHetzner
) -> None:
    provider = connect(timeout=0.5)
    fake.hang_after_create(times=1, seconds=10)
    fake.fail_next("unavailable", 503, times=50, method="GET")
    with pytest.raises(ProviderUnavailableError) as caught:
        provider.create_server("ins-unsure", "cx23", "ubuntu-24.04", "fsn1", OURS)
    details = caught.value.details
    assert (details["outcome"], details["providerCode"], details["name"]) == (
        "unknown",
        "timeout",
        "ins-unsure",
    )
    fake.state.reset(keep_servers=True)
    found = provider.get_server_by_name("ins-unsure")
    assert found is not None and dict(found.labels) == OURS
    assert fake.server_names() == ["ins-unsure"]


def test_a_taken_name_is_a_conflict(provider: HetznerProvider, fake: FakeHetzner) -> None:
    fake.add_server("ins-dup", "cx23", "fsn1", OURS)
    with pytest.raises(ConflictError) as caught:
        provider.create_server("ins-dup", "cx23", "ubuntu-24.04", "fsn1", OURS)
    assert caught.value.code == "CONFLICT"
    assert caught.value.details["providerCode"] == "uniqueness_error"
    assert caught.value.details["name"] == "ins-dup"
    assert fake.count("POST", "/servers") == 1


def test_an_unavailable_offer_is_capacity_unavailable(
    provider: HetznerProvider, fake: FakeHetzner
) -> None:
    fake.unavailable_next_creates(1)
    with pytest.raises(CapacityUnavailableError) as caught:
        provider.create_server("ins-full", "cx23", "ubuntu-24.04", "fsn1", OURS)
    details = caught.value.details
    assert caught.value.code == "CAPACITY_UNAVAILABLE"
    assert (details["resource"], details["region"]) == ("cx23", "fsn1")
    assert fake.count("POST", "/servers") == 1
    assert fake.server_names() == []


# ----- errors ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("provider_code", "status", "fleet_code"),
    [
        pytest.param("invalid_input", 400, "INVALID_INPUT", id="invalid-input"),
        pytest.param("json_error", 400, "INVALID_INPUT", id="json-error"),
        pytest.param("unauthorized", 401, "UNAUTHENTICATED", id="unauthorized"),
        pytest.param("forbidden", 403, "FORBIDDEN", id="forbidden"),
        pytest.param("not_found", 404, "NOT_FOUND", id="not-found"),
        pytest.param("uniqueness_error", 409, "CONFLICT", id="uniqueness"),
        pytest.param("locked", 423, "CONFLICT", id="locked-after-retries"),
        pytest.param("protected", 423, "CONFLICT", id="protected"),
        pytest.param("rate_limit_exceeded", 429, "CONFLICT", id="rate-limited-after-retries"),
        pytest.param("resource_unavailable", 412, "CAPACITY_UNAVAILABLE", id="unavailable"),
        pytest.param("resource_limit_exceeded", 403, "CAPACITY_UNAVAILABLE", id="account-limit"),
        pytest.param("unsupported_error", 422, "UNSUPPORTED", id="unsupported"),
        pytest.param("service_error", 503, "PROVIDER_UNAVAILABLE", id="service-error"),
        pytest.param("maintenance", 503, "PROVIDER_UNAVAILABLE", id="maintenance"),
    ],
)
def test_provider_errors_map_onto_fleet_codes(
    provider: HetznerProvider, fake: FakeHetzner, provider_code: str, status: int, fleet_code: str
) -> None:
    fake.fail_next(provider_code, status, times=50, path="/servers")
    with pytest.raises(FleetError) as caught:
        provider.list_servers(OURS)
    assert caught.value.code == fleet_code
    assert caught.value.details["provider"] == "hetzner"
    assert caught.value.details["providerCode"] == provider_code
    assert caught.value.to_json()["error"]["code"] == fleet_code


# ----- the token ---------------------------------------------------------------------------


def _texts(error: BaseException) -> str:
    parts = [str(error), repr(error), "".join(traceback.format_exception(error))]
    if isinstance(error, FleetError):
        parts.append(json.dumps(error.to_json()))
    return "\n".join(parts)


def test_a_wrong_token_is_unauthenticated_and_never_echoed(
    connect: Callable[..., HetznerProvider],
) -> None:
    wrong = "hc-wrong-Zz81Yy72Xx63"
    provider = connect(environ={"HCLOUD_TOKEN": wrong})
    with pytest.raises(UnauthenticatedError) as caught:
        provider.offers()
    assert wrong not in _texts(caught.value)
    assert wrong not in repr(provider)


def test_a_missing_token_variable_is_unauthenticated_before_any_request(
    connect: Callable[..., HetznerProvider], fake: FakeHetzner
) -> None:
    provider = connect(environ={})
    with pytest.raises(UnauthenticatedError) as caught:
        provider.list_servers({})
    assert caught.value.details["tokenEnv"] == "HCLOUD_TOKEN"
    assert fake.requests == []


def test_the_token_is_read_at_each_request_so_rotation_needs_no_restart(
    connect: Callable[..., HetznerProvider], fake: FakeHetzner
) -> None:
    environ = {"HCLOUD_TOKEN": "stale-token"}
    provider = connect(environ=environ)
    with pytest.raises(UnauthenticatedError):
        provider.list_servers({})
    environ["HCLOUD_TOKEN"] = TOKEN
    assert provider.list_servers({}) == []


def test_the_token_appears_in_no_error_or_repr(
    connect: Callable[..., HetznerProvider], fake: FakeHetzner
) -> None:
    provider = connect(timeout=0.3, retry=RetryPolicy(max_attempts=2))
    failures: list[Callable[[], Any]] = [
        lambda: fake.fail_next("server_error", 500, times=5),
        lambda: fake.unavailable_next_creates(1),
        lambda: fake.rate_limit_next(5, reset_in=1),
        lambda: fake.slow_down(1.0),
    ]
    errors: list[BaseException] = []
    for arrange in failures:
        arrange()
        with pytest.raises(FleetError) as caught:
            provider.create_server("ins-secret", "cx23", "ubuntu-24.04", "fsn1", OURS)
        errors.append(caught.value)
        fake.state.reset()
    assert len(errors) == 4
    for error in errors:
        assert TOKEN not in _texts(error)
    assert TOKEN not in repr(provider)
    assert TOKEN not in repr(provider.__dict__)

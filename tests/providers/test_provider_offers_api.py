"""providerAccounts.offers and the offer checks of provider-pool flavors, over real HTTP to the fake provider."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlmodel import select

from bcfleet.clock import FakeClock
from bcfleet.errors import (
    FleetError,
    InvalidInputError,
    NotFoundError,
    ProviderUnavailableError,
    UnauthenticatedError,
)
from bcfleet.fleet import Fleet
from bcfleet.providers.fake_server import FakeHetzner
from bcfleet.store.models import Pool
from tests.support.builders import OP, token
from tests.support.waiting import wait_for

TOKEN = "hc-offers-test-token"


@pytest.fixture
def fake(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHetzner]:
    monkeypatch.setenv("HCLOUD_TOKEN", TOKEN)
    with FakeHetzner(token=TOKEN, clock=clock) as server:
        yield server


def provider_pool(fleet: Fleet, fake: FakeHetzner, name: str = "hz-fsn") -> dict[str, Any]:
    """A provider account 'hz' on the fake and a provider pool on it."""
    fleet.api.provider_accounts.create(
        OP, tenant_id="root", name="hz", provider="hetzner", token_env="HCLOUD_TOKEN",
        endpoint=fake.url,
    )  # fmt: skip
    return fleet.api.pools.create(
        OP, tenant_id="root", name=name, kind="provider", provider_account="hz"
    )


def offers(fleet: Fleet, **query: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = fleet.api.provider_accounts.offers(
        OP, tenant_id="root", account_id="hz", **query
    )["items"]
    return items


def create_flavor(fleet: Fleet, offer: str, name: str | None = None) -> dict[str, Any]:
    return fleet.api.flavors.create(
        OP, tenant_id="root", pool_id="hz-fsn", name=name or offer, vcpu=2, memory_gib=4,
        disk_gib=40, offer_id=offer,
    )  # fmt: skip


# ----- the document's walkthrough -----------------------------------------------------------


def test_offers_read_like_the_documents_example_plus_deprecated(
    fleet: Fleet, fake: FakeHetzner
) -> None:
    provider_pool(fleet, fake)
    listed = {(o["id"], o["region"]): o for o in offers(fleet, kind="vps", min_vcpu=2)}
    assert listed[("cx22", "fsn1")] == {
        "id": "cx22", "kind": "vps", "region": "fsn1", "vcpu": 2, "memoryGiB": 4, "diskGiB": 40,
        "pricePerHour": 0.0071, "currency": "EUR", "available": True, "deprecated": True,
    }  # fmt: skip
    assert listed[("cx23", "fsn1")]["deprecated"] is False


@pytest.mark.parametrize(
    ("query", "expected_ids"),
    [
        pytest.param({"kind": "vps", "min_vcpu": 4}, {"cx32", "cx33", "cx43", "cpx32"}, id="vps-4"),
        pytest.param({"min_vcpu": 8}, {"cx43"}, id="8-vcpu-any-kind"),
        pytest.param({"kind": "gpu"}, set(), id="no-gpu-offers"),
    ],
)
def test_offers_are_filtered_by_kind_and_min_vcpu(
    fleet: Fleet, fake: FakeHetzner, query: dict[str, Any], expected_ids: set[str]
) -> None:
    provider_pool(fleet, fake)
    items = offers(fleet, **query)
    assert {o["id"] for o in items} == expected_ids
    assert all(o["vcpu"] >= query.get("min_vcpu", 0) for o in items)
    assert items == sorted(items, key=lambda o: (o["id"], o["region"]))


def test_the_account_is_found_by_id_or_name(fleet: Fleet, fake: FakeHetzner) -> None:
    provider_pool(fleet, fake)
    account_id = fleet.api.provider_accounts.list(OP, tenant_id="root")["items"][0]["id"]
    by_id = fleet.api.provider_accounts.offers(OP, tenant_id="root", account_id=account_id)
    assert by_id["items"] == offers(fleet)
    with pytest.raises(NotFoundError):
        fleet.api.provider_accounts.offers(OP, tenant_id="root", account_id="nope")


def test_a_bad_filter_is_invalid_input(fleet: Fleet, fake: FakeHetzner) -> None:
    provider_pool(fleet, fake)
    with pytest.raises(InvalidInputError):
        offers(fleet, min_vcpu=-1)


def test_another_tenant_cannot_list_roots_offers(fleet: Fleet, fake: FakeHetzner) -> None:
    provider_pool(fleet, fake)
    fleet.api.tenants.create(OP, "acme")
    acme = token(fleet, "acme", "alice")
    with pytest.raises(FleetError) as refused:
        fleet.api.provider_accounts.offers(acme, tenant_id="root", account_id="hz")
    assert refused.value.code in ("FORBIDDEN", "NOT_FOUND")
    assert fake.count("GET", "/server_types") == 0


def test_the_cli_lists_offers_with_the_documents_flags(cli: Any, fake: FakeHetzner) -> None:
    cli("provider-accounts", "create", "--tenant", "root", "--name", "hz", "--provider",
        "hetzner", "--token-env", "HCLOUD_TOKEN", "--endpoint", fake.url)  # fmt: skip
    listed = cli("provider-accounts", "offers", "hz", "--tenant", "root", "--kind", "vps",
                 "--min-vcpu", "4", "--json")  # fmt: skip
    assert listed.exit_code == 0, listed.stderr
    assert {o["id"] for o in listed.json()["items"]} == {"cx32", "cx33", "cx43", "cpx32"}
    human = cli("provider-accounts", "offers", "hz", "--tenant", "root", "--min-vcpu", "4")
    assert human.stdout.splitlines()[0].split()[:3] == ["ID", "REGION", "KIND"]
    assert "warning: deprecated or unavailable offers: cx32" in human.stdout


# ----- provider errors keep their codes -------------------------------------------------------


def test_an_unset_token_variable_is_unauthenticated(
    fleet: Fleet, fake: FakeHetzner, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider_pool(fleet, fake)
    monkeypatch.delenv("HCLOUD_TOKEN")
    with pytest.raises(UnauthenticatedError) as failed:
        offers(fleet)
    assert failed.value.details["tokenEnv"] == "HCLOUD_TOKEN"
    assert TOKEN not in str(failed.value.to_json())


def test_an_unreachable_provider_is_provider_unavailable(fleet: Fleet, fake: FakeHetzner) -> None:
    provider_pool(fleet, fake)
    fake.stop()
    with pytest.raises(ProviderUnavailableError) as failed:
        offers(fleet)
    assert (failed.value.code, failed.value.http_status) == ("PROVIDER_UNAVAILABLE", 503)


def test_the_cli_renders_provider_unavailable_as_the_standard_error_json(
    cli: Any, fake: FakeHetzner
) -> None:
    cli("provider-accounts", "create", "--tenant", "root", "--name", "hz", "--provider",
        "hetzner", "--token-env", "HCLOUD_TOKEN", "--endpoint", fake.url)  # fmt: skip
    fake.stop()
    result = cli("provider-accounts", "offers", "hz", "--tenant", "root", "--json")
    assert result.exit_code == 1
    error = result.json()["error"]
    assert error["code"] == "PROVIDER_UNAVAILABLE"
    assert error["details"]["providerCode"] == "connect_error"
    assert set(error) == {"code", "message", "details"}
    text = cli("provider-accounts", "offers", "hz", "--tenant", "root")
    assert text.stderr.startswith("error: PROVIDER_UNAVAILABLE: ")


def test_a_provider_error_code_surfaces_through_offers(fleet: Fleet, fake: FakeHetzner) -> None:
    provider_pool(fleet, fake)
    fake.fail_next("forbidden", 403, method="GET", path="/server_types")
    with pytest.raises(FleetError) as failed:
        offers(fleet)
    assert (failed.value.code, failed.value.details["providerCode"]) == ("FORBIDDEN", "forbidden")


# ----- offer checks on provider-pool flavors ----------------------------------------------------


def test_a_flavor_from_a_current_offer_has_no_warnings(fleet: Fleet, fake: FakeHetzner) -> None:
    provider_pool(fleet, fake)
    made = create_flavor(fleet, "cx23")
    assert made["offerId"] == "cx23"
    assert "warnings" not in made


def test_a_deprecated_offer_is_a_warning(fleet: Fleet, fake: FakeHetzner) -> None:
    provider_pool(fleet, fake)
    made = create_flavor(fleet, "cx22")
    assert len(made["warnings"]) == 1
    assert "'cx22' is deprecated" in made["warnings"][0]


def test_an_offer_available_nowhere_is_a_warning(fleet: Fleet, fake: FakeHetzner) -> None:
    provider_pool(fleet, fake)
    for region in ("fsn1", "nbg1", "hel1"):
        fake.sell_out("cx33", region)
    made = create_flavor(fleet, "cx33")
    assert made["warnings"] == [
        "offer 'cx33' is not available in any region now (fsn1, hel1, nbg1); "
        "instances stay provisioning until it is"
    ]


def test_an_offer_that_does_not_exist_is_invalid_input_naming_the_nearest(
    fleet: Fleet, fake: FakeHetzner
) -> None:
    provider_pool(fleet, fake)
    with pytest.raises(InvalidInputError) as refused:
        create_flavor(fleet, "cx24")
    assert refused.value.details["offerId"] == "cx24"
    assert refused.value.details["nearest"] == ["cx22", "cx23", "cx32"]
    assert "nearest: cx22, cx23, cx32" in refused.value.message
    assert fleet.api.flavors.list(OP, tenant_id="root", pool_id="hz-fsn")["items"] == []


def test_changing_the_offer_is_checked_keeping_it_is_not(fleet: Fleet, fake: FakeHetzner) -> None:
    provider_pool(fleet, fake)
    create_flavor(fleet, "cx23", name="small")
    update = {"tenant_id": "root", "pool_id": "hz-fsn", "name": "small", "vcpu": 2,
              "memory_gib": 4, "disk_gib": 40}  # fmt: skip
    kept = fleet.api.flavors.update(OP, **update)
    assert "warnings" not in kept
    changed = fleet.api.flavors.update(OP, **update, offer_id="cx22")
    assert "deprecated" in changed["warnings"][0]
    with pytest.raises(InvalidInputError):
        fleet.api.flavors.update(OP, **update, offer_id="cx2")


def test_an_unreachable_provider_leaves_the_flavor_unchecked_with_a_warning(
    fleet: Fleet, fake: FakeHetzner
) -> None:
    provider_pool(fleet, fake)
    fake.stop()
    made = create_flavor(fleet, "cx23")
    assert made["offerId"] == "cx23"
    assert made["warnings"][0].startswith("offer 'cx23' was not checked: ")
    assert "PROVIDER_UNAVAILABLE" in made["warnings"][0]


def test_the_cli_prints_offer_warnings(cli: Any, fake: FakeHetzner) -> None:
    cli("provider-accounts", "create", "--tenant", "root", "--name", "hz", "--provider",
        "hetzner", "--token-env", "HCLOUD_TOKEN", "--endpoint", fake.url)  # fmt: skip
    cli("pools", "create", "--tenant", "root", "--name", "hz-fsn", "--kind", "provider",
        "--provider-account", "hz")  # fmt: skip
    flags = ["--tenant", "root", "--pool", "hz-fsn", "--vcpu", "2", "--memory-gib", "4",
             "--disk-gib", "40"]  # fmt: skip
    made = cli("flavors", "create", *flags, "--name", "cx22", "--offer", "cx22")
    assert made.exit_code == 0, made.stderr
    assert "warning: offer 'cx22' is deprecated" in made.stdout
    unknown = cli("flavors", "create", *flags, "--name", "nope", "--offer", "cx24", "--json")
    assert unknown.exit_code == 1
    assert unknown.json()["error"]["details"]["nearest"] == ["cx22", "cx23", "cx32"]


def test_offers_are_cached_per_account_for_a_short_time(
    fleet: Fleet, fake: FakeHetzner, clock: FakeClock
) -> None:
    provider_pool(fleet, fake)
    for name in ("a1", "a2", "a3", "a4", "a5"):
        create_flavor(fleet, "cx23", name=name)
    assert fake.count("GET", "/server_types") == 1
    clock.advance(fleet.api.offer_catalog.ttl_seconds + 1)
    create_flavor(fleet, "cx33", name="b1")
    assert fake.count("GET", "/server_types") == 2


def test_the_offer_lookup_holds_no_write_transaction(
    any_fleet: Fleet, fake: FakeHetzner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the provider answers slowly, other writers go ahead: the lookup runs before the transaction."""
    fleet = any_fleet
    provider_pool(fleet, fake)
    fake.slow_down(1.5)
    outcome: dict[str, Any] = {}
    catalog = fleet.api.offer_catalog
    asking = threading.Event()
    fetch = catalog._fetch

    def fetch_and_tell(*args: Any, **kwargs: Any) -> Any:
        asking.set()
        return fetch(*args, **kwargs)

    monkeypatch.setattr(catalog, "_fetch", fetch_and_tell)

    def create() -> None:
        outcome["flavor"] = create_flavor(fleet, "cx23")

    worker = threading.Thread(target=create)
    worker.start()
    assert asking.wait(10), "the worker never asked the provider"  # it now waits 1.5 s for it
    started = time.monotonic()
    fleet.api.tenants.create(OP, "acme")
    waited = time.monotonic() - started
    still_creating = worker.is_alive()
    worker.join(timeout=30)
    assert still_creating and waited < 1.0, f"another writer waited {waited:.2f}s"
    assert outcome["flavor"]["offerId"] == "cx23"


# ----- fleet provider-fake ---------------------------------------------------------------------


@pytest.mark.slow
def test_fleet_provider_fake_serves_the_hetzner_api(tmp_path: Path) -> None:
    port = _free_port()
    argv = [sys.executable, "-m", "bcfleet", "provider-fake", "--port", str(port)]
    server = subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=Path.cwd()
    )
    try:
        banner = server.stdout.readline() if server.stdout else ""
        assert f"http://127.0.0.1:{port}/v1" in banner
        answer = _get_when_up(f"http://127.0.0.1:{port}/v1/server_types")
        assert answer.status_code == 200
        assert any(t["name"] == "cx23" for t in answer.json()["server_types"])
    finally:
        server.terminate()
        server.wait(timeout=10)
    del tmp_path


def _free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _get_when_up(url: str) -> httpx.Response:
    def answer() -> httpx.Response | None:
        try:
            return httpx.get(url, headers={"Authorization": "Bearer any"}, timeout=2.0)
        except httpx.TransportError:
            return None

    return wait_for(answer, timeout=15, what=f"{url} to answer")


def test_warm_all_fills_the_cache_so_checks_inside_a_transaction_ask_nobody(
    fleet: Fleet, fake: FakeHetzner
) -> None:
    provider_pool(fleet, fake)
    catalog = fleet.api.offer_catalog
    assert catalog.warm_all() == 1
    asked = fake.count("GET", "/server_types")
    check = fleet.api.flavors.offer_check
    assert check is not None
    with fleet.read() as session:
        row = session.exec(select(Pool).where(Pool.name == "hz-fsn")).one()
        assert check(session, row, "cx22")[0].startswith("offer 'cx22' is deprecated")
    assert fake.count("GET", "/server_types") == asked

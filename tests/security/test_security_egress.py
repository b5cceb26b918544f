"""Outbound requests that cannot probe inside: the address classifier, webhook URLs at creation
and at delivery, redirects, and provider endpoints whose failures are never a 500."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from bcfleet.domain.egress import parse_host_literal, parse_ranges, refusal
from bcfleet.egress import EgressGuard, EgressRefused
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.jobs.webhooks import NO_ANSWER, REFUSED, run_webhooks
from bcfleet.settings import load_fleet_settings
from tests.support.builders import OP, token
from tests.support.http import error_code, served
from tests.support.security import allow_egress, capturing_server

LOOPBACK = parse_ranges("127.0.0.0/8,::1/128")


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        pytest.param("127.0.0.1", "loopback", id="v4-loopback"),
        pytest.param("127.255.0.9", "loopback", id="v4-loopback-range"),
        pytest.param("10.1.2.3", "private", id="10/8"),
        pytest.param("172.16.0.1", "private", id="172.16/12"),
        pytest.param("172.31.255.254", "private", id="172.16/12-top"),
        pytest.param("192.168.1.1", "private", id="192.168/16"),
        pytest.param("169.254.169.254", "metadata", id="metadata"),
        pytest.param("169.254.1.1", "link-local", id="v4-link-local"),
        pytest.param("100.64.0.1", "cgnat", id="cgnat"),
        pytest.param("100.100.100.200", "cgnat", id="alibaba-metadata-in-cgnat"),
        pytest.param("0.0.0.0", "unspecified", id="v4-unspecified"),
        pytest.param("224.0.0.1", "multicast", id="v4-multicast"),
        pytest.param("240.0.0.1", "reserved", id="v4-reserved"),
        pytest.param("255.255.255.255", "reserved", id="broadcast"),
        pytest.param("192.0.2.10", "reserved", id="documentation"),
        pytest.param("::1", "loopback", id="v6-loopback"),
        pytest.param("::", "unspecified", id="v6-unspecified"),
        pytest.param("fe80::1", "link-local", id="v6-link-local"),
        pytest.param("fd12:3456::1", "private", id="v6-ula"),
        pytest.param("fd00:ec2::254", "metadata", id="v6-metadata"),
        pytest.param("ff02::1", "multicast", id="v6-multicast"),
        pytest.param("::ffff:127.0.0.1", "loopback", id="v4-mapped-loopback"),
        pytest.param("::ffff:169.254.169.254", "metadata", id="v4-mapped-metadata"),
        pytest.param("64:ff9b::a00:1", "private", id="nat64-private"),
        pytest.param("2002:7f00:1::", "loopback", id="6to4-loopback"),
        pytest.param("8.8.8.8", None, id="public-v4"),
        pytest.param("172.32.0.1", None, id="just-past-172.16/12"),
        pytest.param("::ffff:8.8.8.8", None, id="v4-mapped-public"),
        pytest.param("2606:4700:4700::1111", None, id="public-v6"),
    ],
)
def test_the_classifier_refuses_every_address_that_is_not_public(
    address: str, expected: str | None
) -> None:
    assert refusal(ipaddress.ip_address(address)) == expected


@pytest.mark.parametrize(
    ("address", "allow", "expected"),
    [
        pytest.param("127.0.0.1", "127.0.0.0/8", None, id="allowed-range"),
        pytest.param("::ffff:127.0.0.1", "127.0.0.0/8", None, id="mapped-into-allowed"),
        pytest.param("::1", "127.0.0.0/8", "loopback", id="other-family"),
        pytest.param("10.0.0.1", "127.0.0.0/8", "private", id="outside-allowed"),
        pytest.param("10.9.0.1", "10.9.0.0/16", None, id="operator-network"),
    ],
)
def test_an_allowed_range_wins(address: str, allow: str, expected: str | None) -> None:
    assert refusal(ipaddress.ip_address(address), parse_ranges(allow)) == expected


@pytest.mark.parametrize(
    ("url", "address"),
    [
        pytest.param("http://2130706433/", "127.0.0.1", id="decimal"),
        pytest.param("http://0177.0.0.1/", "127.0.0.1", id="octal"),
        pytest.param("http://0x7f.1/", "127.0.0.1", id="hex-short"),
        pytest.param("http://127.1/", "127.0.0.1", id="two-part"),
        pytest.param("http://0/", "0.0.0.0", id="zero"),
        pytest.param("http://[::ffff:7f00:1]/", "::ffff:127.0.0.1", id="mapped-hex"),
        pytest.param("http://example.com/", None, id="a-name"),
        pytest.param("http://256.1.1.1/", None, id="out-of-range-is-a-name"),
        pytest.param("http://08.0.0.1/", None, id="bad-octal-is-a-name"),
    ],
)
def test_numeric_hosts_are_read_like_the_resolver_reads_them(url: str, address: str | None) -> None:
    host = urlsplit(url).hostname
    assert host is not None
    parsed = parse_host_literal(host)
    assert parsed == (None if address is None else ipaddress.ip_address(address))
    if parsed is not None and parsed.version == 4 and str(parsed) != "0.0.0.0":
        assert refusal(parsed) == "loopback"


def test_the_operator_allows_ranges_in_the_environment_or_fleet_toml(tmp_path: Path) -> None:
    none = tmp_path / "none.toml"
    env = {"BCFLEET_EGRESS_ALLOW": "127.0.0.0/8, ::1/128"}
    assert load_fleet_settings(none, env).egress_allow == LOOPBACK
    config = tmp_path / "fleet.toml"
    config.write_text('egress_allow = ["10.9.0.0/16"]\n')
    assert load_fleet_settings(config, {}).egress_allow == parse_ranges("10.9.0.0/16")
    assert load_fleet_settings(none, {}).egress_allow == ()
    with pytest.raises(InvalidInputError):
        load_fleet_settings(none, {"BCFLEET_EGRESS_ALLOW": "localhost"})


REFUSED_URLS = [
    pytest.param("http://127.0.0.1:5432/", True, id="postgres-port"),
    pytest.param("http://127.0.0.1:1/", True, id="closed-port"),
    pytest.param("http://localhost:8080/hook", True, id="name-resolving-to-loopback"),
    pytest.param("http://[::1]/", True, id="v6-loopback"),
    pytest.param("http://[::ffff:127.0.0.1]/", True, id="v4-mapped"),
    pytest.param("http://2130706433/", True, id="decimal-loopback"),
    pytest.param("http://0177.0.0.1/", True, id="octal-loopback"),
    pytest.param("http://169.254.169.254/latest/meta-data/", False, id="metadata"),
    pytest.param("http://10.0.0.5/hook", False, id="private"),
    pytest.param("http://192.168.1.1/hook", False, id="home-router"),
    pytest.param("http://100.64.0.1/hook", False, id="cgnat"),
    pytest.param("http://0.0.0.0:8080/", False, id="unspecified"),
    pytest.param("ftp://example.com/hook", False, id="not-http"),
]


@pytest.mark.parametrize(("url", "loopback"), REFUSED_URLS)
def test_webhook_urls_inside_are_invalid_input(fleet: Fleet, url: str, loopback: bool) -> None:
    fleet.api.tenants.create(OP, "acme")
    acme = token(fleet, "acme", "alice")
    with served(fleet) as (_server, root):
        refused = root.as_(acme).post("/v1/webhooks", json={"url": url})
        allow_egress(fleet, "127.0.0.0/8,::1/128")
        allowed = root.as_(acme).post("/v1/webhooks", json={"url": url})
    assert (refused.status_code, error_code(refused)) == (400, "INVALID_INPUT")
    assert allowed.status_code == (201 if loopback else 400)


def test_a_name_that_does_not_resolve_yet_is_accepted_and_checked_at_delivery(
    fleet: Fleet,
) -> None:
    fleet.api.tenants.create(OP, "acme")
    hook = fleet.api.webhooks.create(OP, tenant_id="acme", url="https://acme.example.test/hook")
    fleet.api.pools.create(OP, tenant_id="acme", name="p", kind="vps-host")
    run_webhooks(fleet, fleet.now())
    (delivery,) = fleet.api.webhooks.deliveries(OP, hook["id"])["items"]
    assert (delivery["lastStatus"], delivery["lastError"]) == (None, NO_ANSWER)


def test_delivery_checks_the_address_again_and_tells_open_from_closed_nothing(
    fleet: Fleet,
) -> None:
    """Allowed when registered, refused when delivered (the operator's allowance or DNS changed)."""
    fleet.api.tenants.create(OP, "acme")
    allow_egress(fleet, "127.0.0.0/8,::1/128")  # wherever localhost resolves
    with capturing_server() as open_port:
        port = urlsplit(open_port.url).port
        open_hook = fleet.api.webhooks.create(
            OP, tenant_id="acme", url=f"http://localhost:{port}/hook"
        )
        closed_hook = fleet.api.webhooks.create(OP, tenant_id="acme", url="http://127.0.0.1:1/")
        allow_egress(fleet, "")
        fleet.api.pools.create(OP, tenant_id="acme", name="p", kind="vps-host")
        assert run_webhooks(fleet, fleet.now())["retried"] == 2
        assert open_port.requests == []
    errors = {
        (d["lastStatus"], d["lastError"])
        for hook in (open_hook, closed_hook)
        for d in fleet.api.webhooks.deliveries(OP, hook["id"])["items"]
    }
    assert errors == {(None, REFUSED)}


def test_a_redirect_to_another_host_is_not_followed(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme")
    allow_egress(fleet)
    with capturing_server() as elsewhere, capturing_server() as receiver:
        receiver.status, receiver.headers = 302, {"Location": elsewhere.url + "/stolen"}
        hook = fleet.api.webhooks.create(OP, tenant_id="acme", url=receiver.url + "/hook")
        fleet.api.pools.create(OP, tenant_id="acme", name="p", kind="vps-host")
        run_webhooks(fleet, fleet.now())
        assert len(receiver.requests) == 1
        assert elsewhere.requests == []
    (delivery,) = fleet.api.webhooks.deliveries(OP, hook["id"])["items"]
    assert (delivery["state"], delivery["lastStatus"]) == ("pending", 302)


def test_the_guard_refuses_before_connecting() -> None:
    guard = EgressGuard(resolver=lambda _host, _port: ["10.0.0.7"])
    with pytest.raises(EgressRefused):
        guard.check_url("https://internal.example/")
    with pytest.raises(EgressRefused):
        guard.addresses("internal.example", 443)
    public = EgressGuard(resolver=lambda _host, _port: ["93.184.215.14", "10.0.0.7"])
    with pytest.raises(EgressRefused):  # one refused address refuses the host
        public.addresses("mixed.example", 443)


def _provider_account(fleet: Fleet, url: str) -> None:
    fleet.api.provider_accounts.create(
        OP, tenant_id="root", name="hz", provider="hetzner", token_env="HZ_T", endpoint=url
    )


@pytest.mark.parametrize(
    ("status", "body"),
    [
        pytest.param(418, {"error": {"code": "teapot", "message": "no"}}, id="unknown-code"),
        pytest.param(200, {"server_types": [1, 2]}, id="not-the-api-json"),
        pytest.param(200, b"\x00not json", id="not-json"),
        pytest.param(302, {}, id="redirect"),
    ],
)
def test_provider_failures_are_never_a_500(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch, status: int, body: object
) -> None:
    monkeypatch.setenv("HZ_T", "t")
    with capturing_server() as provider, served(fleet) as (_server, root):
        provider.status, provider.body = status, body
        if status == 302:
            provider.headers = {"Location": "http://169.254.169.254/"}
        _provider_account(fleet, provider.url + "/v1")
        answer = root.get("/v1/provider-accounts/hz/offers")
    # a list answer that is not JSON is not an empty list: the provider failed
    assert (answer.status_code, error_code(answer)) == (503, "PROVIDER_UNAVAILABLE")


def test_roots_own_endpoint_is_trusted_without_an_allowance(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HZ_T", "t")
    with capturing_server() as provider:
        _provider_account(fleet, provider.url + "/v1")
        assert fleet.api.provider_accounts.offers(OP, tenant_id="root", account_id="hz") == {
            "items": []
        }
        assert provider.requests

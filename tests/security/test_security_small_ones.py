"""The small ones: the docs and the root-only rule agree, integer query parameters are OpenAPI's
integers, huge values are never echoed in full, provider-account names are slugs, and
identifiers cannot pass for one another (mixed scripts, compatibility forms)."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import quote

import pytest

from bcfleet.domain.bounds import identifier_problem, parse_integer
from bcfleet.domain.policy_bounds import ROOT_ONLY_ACTIONS
from bcfleet.errors import ForbiddenError, InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.settings import FleetSettings
from tests.support.builders import OP, hosted_pool, token
from tests.support.http import error_code, served

DOCS = Path(__file__).resolve().parents[2] / "docs" / "security.md"
KEY = "uUZ7o0l1GZ8yJ6Yqk1sWv0z6Q1J3mQe7o6r0yN5g3Xc="


# ---------------------------------------------------------------------------
# (a) who may create provider accounts


def test_the_root_only_actions_docs_list_are_the_ones_the_code_denies() -> None:
    text = DOCS.read_text()
    start = text.index("`bcfleet/domain/policy_bounds.py` `ROOT_ONLY_ACTIONS`:")
    block = text[start:].split("\n\n")[1]
    listed = re.findall(r"^- `([^`]+)`", block, flags=re.MULTILINE)
    assert listed == list(ROOT_ONLY_ACTIONS)
    assert "compute:providers:manage" not in ROOT_ONLY_ACTIONS


def test_a_tenant_admin_manages_its_own_accounts_but_never_the_servers_secrets(
    sqlite_url: str, fleet: Fleet
) -> None:
    fleet.settings = FleetSettings(db_url=sqlite_url, secret_key=KEY)
    fleet.api.tenants.create(OP, "acme")
    admin = token(fleet, "acme", "alice", role="admin")
    member = token(fleet, "acme", "bob", role="member")
    accounts = fleet.api.provider_accounts
    made = accounts.create(admin, tenant_id="acme", name="hz", provider="hetzner", token="t0k")
    assert made["hasToken"] is True
    for root_only in ({"token_env": "HOME"}, {"endpoint": "http://127.0.0.1:1/v1"}):
        with pytest.raises(ForbiddenError):
            accounts.create(admin, tenant_id="acme", name="hz2", provider="hetzner", **root_only)
    with pytest.raises(ForbiddenError):
        accounts.create(member, tenant_id="acme", name="hz3", provider="hetzner", token="t0k")


# ---------------------------------------------------------------------------
# (b) integer query parameters


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(" 5", id="a-leading-blank"),
        pytest.param("5 ", id="a-trailing-blank"),
        pytest.param("+5", id="a-plus-sign"),
        pytest.param("5_0", id="an-underscore"),
        pytest.param("\u0665", id="an-arabic-indic-digit"),
        pytest.param("\uff15", id="a-full-width-digit"),
        pytest.param("0" * 28 + "5", id="29-digits-zero-padded"),
        pytest.param("05", id="one-leading-zero"),
        pytest.param("1e3", id="an-exponent"),
        pytest.param("5.5", id="a-fraction"),
        pytest.param("5.", id="a-bare-point"),
        pytest.param("", id="empty"),
        pytest.param("-", id="a-lone-minus"),
    ],
)
def test_an_integer_query_parameter_is_openapis_integer_only(fleet: Fleet, raw: str) -> None:
    assert parse_integer(raw) is None
    with served(fleet) as (_, api):
        answer = api.get("/v1/events", params={"limit": raw})
    assert (answer.status_code, error_code(answer)) == (400, "INVALID_INPUT")
    assert "ASCII digits" in answer.json()["error"]["message"]


def test_a_plain_integer_of_too_many_digits_is_told_the_parameters_range(fleet: Fleet) -> None:
    assert parse_integer("9" * 20) is None
    with served(fleet) as (_, api):
        answer = api.get("/v1/events", params={"limit": "9" * 20})
    assert (answer.status_code, error_code(answer)) == (400, "INVALID_INPUT")
    assert "between 1 and " in answer.json()["error"]["message"]


@pytest.mark.parametrize("raw", [" 5", "+5", "5_0", "\u0665", "\uff15", "0" * 28 + "5"])
def test_the_command_line_reads_integers_by_the_same_rule(cli: object, raw: str) -> None:
    result = cli("jobs", "list", "--runs", raw)  # type: ignore[operator]
    assert result.exit_code == 64
    assert "is not a whole number written in ASCII digits" in result.stderr
    assert cli("jobs", "list", "--runs", "5").exit_code == 0  # type: ignore[operator]


@pytest.mark.parametrize(
    ("raw", "value"), [("5", 5), ("1000", 1000), ("-0", 0), ("0", 0), ("5.0", 5), ("5.00", 5)]
)
def test_plain_integers_still_parse(fleet: Fleet, raw: str, value: int) -> None:
    assert parse_integer(raw) == value
    with served(fleet) as (_, api):
        answer = api.get("/v1/events", params={"limit": raw})
    assert answer.status_code == (200 if value >= 1 else 400)


# ---------------------------------------------------------------------------
# (c) a huge value is never echoed in full


@pytest.mark.parametrize(
    "literal",
    [pytest.param("1e308", id="1e308"), pytest.param("-2.5E+200", id="minus-2.5e200")],
)
def test_a_huge_number_is_echoed_short(fleet: Fleet, literal: str) -> None:
    pool = hosted_pool(fleet)
    body = f'{{"name": "g1.small", "vcpu": {literal}, "memoryGiB": 4, "diskGiB": 40}}'
    with served(fleet) as (_, api):
        answer = api.post(
            f"/v1/pools/{pool['id']}/flavors",
            content=body,
            headers={"Content-Type": "application/json"},
        )
    assert (answer.status_code, error_code(answer)) == (400, "INVALID_INPUT")
    text = answer.text
    assert "0" * 60 not in text and "9" * 60 not in text
    assert "e+" in answer.json()["error"]["message"] and len(text) < 2000


def test_a_long_text_is_echoed_short(fleet: Fleet) -> None:
    with served(fleet) as (_, api):
        answer = api.post("/v1/tenants", json={"id": "x" * 5000})
    assert (answer.status_code, error_code(answer)) == (400, "INVALID_INPUT")
    assert "x" * 100 not in answer.text


# ---------------------------------------------------------------------------
# (d) provider-account names


@pytest.mark.parametrize(
    "name",
    ["../../etc/passwd", "a/b", ".", "..", "<script>", "a b", "A", "a?b", "a#b", "%2e", "x" * 64],
)
def test_a_provider_account_name_that_is_not_a_slug_is_refused(fleet: Fleet, name: str) -> None:
    fleet.api.tenants.create(OP, "acme")
    with pytest.raises(InvalidInputError) as refused:
        fleet.api.provider_accounts.create(
            OP, tenant_id="acme", name=name, provider="hetzner", token_env="HCLOUD_TOKEN"
        )
    assert "provider account name" in refused.value.message
    with served(fleet) as (_, api):
        answer = api.post(
            "/v1/provider-accounts",
            params={"tenant": "acme"},
            json={"name": name, "provider": "hetzner", "tokenEnv": "HCLOUD_TOKEN"},
        )
    assert (answer.status_code, error_code(answer)) == (400, "INVALID_INPUT")
    assert fleet.api.provider_accounts.list(OP, tenant_id="acme")["items"] == []


@pytest.mark.parametrize("name", ["hz", "hz.fsn-1", "a_b", "0", "a..b", "x" * 63])
def test_every_accepted_provider_account_name_is_addressable_over_http(
    fleet: Fleet, name: str
) -> None:
    fleet.api.tenants.create(OP, "acme")
    with served(fleet) as (_, api):
        made = api.post(
            "/v1/provider-accounts",
            params={"tenant": "acme"},
            json={"name": name, "provider": "hetzner", "tokenEnv": "BCFLEET_UNSET_TOKEN"},
        )
        assert made.status_code == 201, made.text
        offers = api.get(f"/v1/provider-accounts/{quote(name, safe='')}/offers?tenant=acme")
    # the route found the account: its token variable is unset, so the provider is not asked
    assert (offers.status_code, error_code(offers)) == (401, "UNAUTHENTICATED")


# ---------------------------------------------------------------------------
# (e) identifiers cannot pass for one another


@pytest.mark.parametrize(
    ("name", "why"),
    [
        pytest.param("\u0430dmin", "mix letters of different scripts", id="cyrillic-a-in-admin"),
        pytest.param("ops-\u03bfn-call", "mix letters of different scripts", id="greek-omicron"),
        pytest.param("\uff41dmin", "compatibility forms", id="full-width-a"),
        pytest.param("\U0001d41admin", "compatibility forms", id="mathematical-bold-a"),
        pytest.param("\ufb01nance", "compatibility forms", id="fi-ligature"),
    ],
)
def test_a_look_alike_identifier_is_refused(fleet: Fleet, name: str, why: str) -> None:
    assert why in (identifier_problem("name", name) or "")
    fleet.api.tenants.create(OP, "acme")
    with pytest.raises(InvalidInputError) as refused:
        fleet.api.iam.create_principal(OP, tenant_id="acme", name=name)
    assert why in refused.value.message
    with served(fleet) as (_, api):
        answer = api.post("/v1/tenants/acme/tokens", json={"name": name})
    assert (answer.status_code, error_code(answer)) == (400, "INVALID_INPUT")


@pytest.mark.parametrize(
    "name",
    ["admin", "Müller", "Ελένη", "Алексей", "東京タワー", "Tokyo東京", "서울 Seoul", "ci@runner-7"],
)
def test_names_in_one_script_are_accepted(fleet: Fleet, name: str) -> None:
    assert identifier_problem("name", name) is None
    fleet.api.tenants.create(OP, "acme")
    assert fleet.api.iam.create_principal(OP, tenant_id="acme", name=name)["name"] == name

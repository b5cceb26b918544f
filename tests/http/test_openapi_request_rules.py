"""The request schemas are generated from the server's own rules, and the server holds requests
to them: the document and the server cannot drift apart."""

from __future__ import annotations

import sys

import pytest

from bcfleet.domain.bounds import forbidden
from bcfleet.domain.durations import parse_duration
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.http.app import openapi_document
from bcfleet.http.rules import duration, matches, text
from tests.support.builders import hosted_pool
from tests.support.http import error_code, served


def test_the_printable_pattern_refuses_exactly_what_bounds_refuses() -> None:
    pattern = text(None, min_length=0)["pattern"]
    for code in range(sys.maxunicode + 1):
        if 0xD800 <= code <= 0xDFFF:
            continue  # no JSON Schema string holds a lone surrogate
        char = chr(code)
        assert (not matches(pattern, f"a{char}")) == forbidden(char), hex(code)


@pytest.mark.parametrize(
    "spelling",
    ["12h", "90m", "2h30m", "1d", "45s", " 1D12H ", "0h1s", "0h", "1h1d", "1.5h", "", "h", "1w"],
)
def test_the_duration_pattern_is_the_parsers_grammar(spelling: str) -> None:
    try:
        parse_duration(spelling)
        parsed = True
    except InvalidInputError:
        parsed = False
    assert matches(duration()["pattern"], spelling) == parsed


def test_the_document_names_the_enums_and_bounds_the_server_checks() -> None:
    schemas = openapi_document()["components"]["schemas"]
    reservation = schemas["ReservationCreate"]
    assert reservation["properties"]["gpus"]["minimum"] == 1
    assert reservation["not"]["properties"]["binding"] == {"const": "node"}
    token = schemas["TokenCreate"]
    assert token["properties"]["role"]["enum"] == ["admin", "member", "viewer", "agent"]
    assert token["then"] == {"required": ["host"]}  # an agent names its host, no one else does
    assert token["else"] == {"not": {"required": ["host"]}}
    assert "pattern" in schemas["ReservationCreate"]["properties"]["duration"]
    assert schemas["ReservationBatch"]["properties"]["requests"]["maxItems"] == 100


def test_a_whole_number_written_with_a_fraction_is_that_integer(fleet: Fleet) -> None:
    pool = hosted_pool(fleet)
    with served(fleet) as (_, api):
        made = api.post(
            f"/v1/pools/{pool['id']}/flavors",
            json={"name": "g1.small", "vcpu": 2.0, "memoryGiB": 4e0, "diskGiB": 40},
        )
        half = api.post(
            f"/v1/pools/{pool['id']}/flavors",
            json={"name": "g1.half", "vcpu": 2.5, "memoryGiB": 4, "diskGiB": 40},
        )
    assert made.status_code == 201, made.text
    assert (made.json()["vcpu"], made.json()["memoryGiB"]) == (2, 4)
    assert (half.status_code, error_code(half)) == (400, "INVALID_INPUT")


def test_query_and_path_parameters_are_held_to_their_schemas(fleet: Fleet) -> None:
    with served(fleet) as (_, api):
        condition = api.get("/v1/instances", params={"condition": "not a type"})
        since = api.get("/v1/usage", params={"since": "1999-12-31T00:00:00Z"})
        delivery = api.post("/v1/webhooks/whk_x/deliveries/abc/redeliver")
        listed = api.get("/v1/instances", params={"condition": "PlacementDegraded"})
    for answer in (condition, since, delivery):
        assert (answer.status_code, error_code(answer)) == (400, "INVALID_INPUT")
    assert listed.status_code == 200


def test_a_schema_error_never_quotes_a_provider_token(fleet: Fleet) -> None:
    with served(fleet) as (_, api):
        answer = api.post(
            "/v1/provider-accounts",
            json={"name": "hz", "provider": "hetzner", "token": "secret-with space"},
        )
    assert (answer.status_code, error_code(answer)) == (400, "INVALID_INPUT")
    assert "secret-with" not in answer.text

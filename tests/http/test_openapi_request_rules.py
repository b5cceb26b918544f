"""The request schemas are generated from the server's own rules, and the server holds requests
to them: the document and the server cannot drift apart."""

from __future__ import annotations

import sys
import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bcfleet.domain.bounds import URL_MAX, URL_PARSER_WORDS, forbidden, url_problem
from bcfleet.domain.durations import parse_duration
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from bcfleet.http.app import openapi_document
from bcfleet.http.rules import duration, http_url, matches, text
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


def test_the_url_pattern_refuses_exactly_the_characters_url_problem_refuses() -> None:
    """Blanks (bounds.BLANKS, written out) are Unicode's Zs, the rest what bounds.forbidden says:
    every character either refuses, the first 12,544 code points and every 251st beyond."""
    pattern = http_url(URL_MAX)["pattern"]
    judged = {code for code in range(sys.maxunicode + 1) if _url_refuses(chr(code))}
    judged |= set(range(0x3100)) | set(range(0, sys.maxunicode + 1, 251))
    for code in sorted(judged - set(range(0xD800, 0xE000))):  # no JSON string holds a surrogate
        url = f"http://a/{chr(code)}"
        refused = _url_refuses(chr(code))
        assert (not matches(pattern, url)) == refused, hex(code)
        assert (url_problem("url", url, URL_MAX) is not None) == refused, hex(code)


def _url_refuses(char: str) -> bool:
    return forbidden(char) or unicodedata.category(char) == "Zs"


URL_PIECES = ["http", "HTTPS", "ftp", "://", ":", "@", "/", "?", "#", "[", "]", "::1", "1.2.3.4",
              "a", "Z", "9", "65535", "65536", "00080", " ", "\u00a0", "\u200b", "\t", "\uff03",
              "%20", "."]  # fmt: skip


@given(st.lists(st.sampled_from(URL_PIECES), max_size=12))
def test_the_url_pattern_is_the_rule_but_for_what_the_parser_adds(pieces: list[str]) -> None:
    """The OpenAPI pattern of a URL says what bounds.url_problem says, except the parser's part
    (a bracketed host that is no IPv6 address, NFKC), which the description states."""
    url = "".join(pieces)
    for candidate in (url, f"http://{url}", f"https://a{url}"):
        problem = url_problem("url", candidate, URL_MAX)
        by_pattern = matches(http_url(URL_MAX)["pattern"], candidate)
        assert by_pattern == (problem is None or URL_PARSER_WORDS in problem), (candidate, problem)

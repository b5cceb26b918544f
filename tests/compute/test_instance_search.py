"""instances.list filtered, sorted and paged by the server: a search, state, owner, pool and
host, a sort key either way, pages by cursor and the total, on SQLite and PostgreSQL, and the
same over HTTP (checked against the OpenAPI document)."""

from __future__ import annotations

from typing import Any

import pytest

from bcfleet.errors import InvalidInputError, NotFoundError
from bcfleet.fleet import Fleet
from tests.support.builders import OP, token
from tests.support.fleet import run_cli
from tests.support.http import error_code, served
from tests.support.many_instances import ManyInstances, many_instances, state_of

COUNT = 1_200  # more than one page of the console (PAGE_MAX = 1,000)


@pytest.fixture
def big(any_fleet: Fleet) -> ManyInstances:
    return many_instances(any_fleet, COUNT)


def names(page: dict[str, Any]) -> list[str]:
    return [i["name"] for i in page["items"]]


def every_page(fleet: Fleet, limit: int, **query: Any) -> tuple[list[str], list[int]]:
    """The names of every page, following the cursors, and the totals each page said."""
    seen: list[str] = []
    totals: list[int] = []
    after = None
    while True:
        page = fleet.api.instances.list(OP, limit=limit, after=after, **query)
        seen += names(page)
        totals.append(page["total"])
        if page["cursor"] is None:
            return seen, totals
        assert page["cursor"] == len(seen)
        after = page["cursor"]


def test_a_search_finds_one_instance_among_many_with_its_total(
    any_fleet: Fleet, big: ManyInstances
) -> None:
    page = any_fleet.api.instances.list(OP, q="vm-000123", limit=100)
    assert names(page) == ["vm-000123"]
    assert (page["total"], page["cursor"]) == (1, None)
    assert names(any_fleet.api.instances.list(OP, q="VM-00012 3", limit=100)) == [
        f"vm-{n:06d}" for n in (1223, 123) if n < COUNT
    ]  # each word in the name or the id, any case; pending first, then the newest
    by_id = any_fleet.api.instances.list(OP, q="0000000000000000000001199", limit=5)
    assert names(by_id) == ["vm-001199"]


@pytest.mark.parametrize(
    ("search", "found"),
    [("%", 0), ("vm_", 0), ("in%", 0), ("\\", 0), ("ins_", COUNT), ("vm-0001_", 0)],
)
def test_search_wildcards_are_plain_characters(
    any_fleet: Fleet, big: ManyInstances, search: str, found: int
) -> None:
    del big
    assert any_fleet.api.instances.list(OP, q=search, limit=10)["total"] == found


def test_filters_narrow_the_listing_and_the_total(any_fleet: Fleet, big: ManyInstances) -> None:
    expected = [n for n in range(COUNT) if n % 2 == 0 and state_of(n) == "running"]
    on_h1 = [n for n in expected if (n // 2) % 2 == 0]
    page = any_fleet.api.instances.list(
        OP, owner="acme", state="running", host="h1", pool="vps-fra", sort="name", limit=1000
    )
    assert names(page) == [f"vm-{n:06d}" for n in on_h1]
    assert page["total"] == len(on_h1)
    pending = any_fleet.api.instances.list(OP, state="pending", limit=1)
    assert pending["total"] == COUNT // 10
    assert any_fleet.api.instances.list(OP, owner="nobody", limit=5)["total"] == 0


@pytest.mark.parametrize(
    ("sort", "descending"),
    [
        pytest.param("name", False, id="name"),
        pytest.param("name", True, id="name-descending"),
        pytest.param("created", True, id="newest-first"),
        pytest.param("host", False, id="host-then-id"),
        pytest.param(None, False, id="pending-first-then-newest"),
        pytest.param(None, True, id="oldest-first-pending-last"),
    ],
)
def test_pages_follow_one_another_to_the_whole_listing(
    any_fleet: Fleet, big: ManyInstances, sort: str | None, descending: bool
) -> None:
    del big
    whole = names(any_fleet.api.instances.list(OP, sort=sort, descending=descending, limit=1000))
    seen, totals = every_page(any_fleet, 250, sort=sort, descending=descending)
    assert seen[:1000] == whole
    assert sorted(seen) == [f"vm-{n:06d}" for n in range(COUNT)]  # each once, none left out
    assert set(totals) == {COUNT}
    if sort == "name":
        assert seen == sorted(seen, reverse=descending)
    if sort is None:
        pending = COUNT // 10
        first, rest = (
            (seen[-pending:], seen[:-pending]) if descending else (seen[:pending], seen[pending:])
        )
        assert {state_of(int(n[3:])) for n in first} == {"pending"}
        assert rest == sorted(rest, reverse=not descending)


def test_a_host_sort_puts_instances_without_one_last(any_fleet: Fleet, big: ManyInstances) -> None:
    del big
    seen, _ = every_page(any_fleet, 400, sort="host")
    states = [state_of(int(n[3:])) for n in seen]
    assert "pending" not in states[: COUNT - COUNT // 10]
    assert set(states[COUNT - COUNT // 10 :]) == {"pending"}


def test_a_tenant_sees_only_its_own_and_may_not_name_a_host_it_cannot_see(
    any_fleet: Fleet, big: ManyInstances
) -> None:
    del big
    acme = token(any_fleet, "acme", "alice")
    page = any_fleet.api.instances.list(acme, q="vm-00012", sort="host", limit=100)
    assert names(page) == sorted(f"vm-{n:06d}" for n in range(120, 130) if n % 2 == 0)
    assert any_fleet.api.instances.list(acme, owner="globex", limit=5)["total"] == 0
    with pytest.raises(NotFoundError):
        any_fleet.api.instances.list(acme, host="h1", limit=5)


@pytest.mark.parametrize(
    "query",
    [
        pytest.param({"sort": "age"}, id="unknown-sort"),
        pytest.param({"q": "x" * 201}, id="search-too-long"),
        pytest.param({"q": "vm\x00"}, id="search-with-nul"),
        pytest.param({"after": -1}, id="negative-cursor"),
        pytest.param({"owner": ""}, id="empty-owner"),
    ],
)
def test_bad_filters_are_invalid_input(fleet: Fleet, query: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        fleet.api.instances.list(OP, limit=10, **query)


def test_over_http_the_filters_are_query_parameters(fleet: Fleet) -> None:
    many_instances(fleet, 30)
    with served(fleet) as (_, api):  # each answer checked against the document
        body = api.get("/v1/instances", params={"q": "vm-00001", "limit": "4"}).json()
        assert (body["total"], body["cursor"]) == (10, 4)
        assert names(body) == ["vm-000010", "vm-000019", "vm-000018", "vm-000017"]
        body = api.get(
            "/v1/instances",
            params={"q": "vm-00001", "limit": "4", "after": "8", "sort": "name",
                    "descending": "true"},
        ).json()  # fmt: skip
        assert (names(body), body["cursor"]) == (["vm-000011", "vm-000010"], None)
        body = api.get(
            "/v1/instances", params={"owner": "acme", "host": "h2", "state": "running"}
        ).json()
        assert names(body) == [
            f"vm-{n:06d}" for n in range(30) if n % 4 == 2 and state_of(n) == "running"
        ]
        assert "total" not in body
        for bad in ({"sort": "age"}, {"after": "-1"}, {"host": "nowhere"}):
            assert error_code(api.get("/v1/instances", params=bad)) in (
                "INVALID_INPUT",
                "NOT_FOUND",
            )


def test_the_cli_takes_the_same_filters(fleet: Fleet, sqlite_url: str) -> None:
    many_instances(fleet, 30)
    args = ("instances", "list", "--search", "vm-00001", "--owner", "acme", "--sort", "name",
            "--descending", "--limit", "2", "--after", "1")  # fmt: skip
    done = run_cli(*args, "--json", db=sqlite_url)
    assert done.exit_code == 0, done.stderr
    body: Any = done.json()
    assert (names(body), body["total"], body["cursor"]) == (["vm-000016", "vm-000014"], 5, 3)
    text = run_cli(*args, db=sqlite_url).stdout
    assert "vm-000016" in text and "2 of 5; next page: --after 3" in text
    assert run_cli("instances", "list", "--sort", "age", db=sqlite_url).exit_code == 64

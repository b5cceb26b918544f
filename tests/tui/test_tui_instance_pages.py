"""The Instances view of a fleet larger than one page: the server filters, sorts and counts,
the next page is read as the cursor nears the end, and "N of M" stays on the status line at
80 columns; locally and over HTTP. The fleet is written with one bulk insert."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bcfleet.client.fleet_client import FleetClient
from bcfleet.domain.instance_query import InstanceQuery
from bcfleet.fleet import Fleet
from bcfleet.http.app import create_app
from bcfleet.http.server import BackgroundServer
from bcfleet.tui.instance_pages import PAGE, server_query
from bcfleet.tui.remote_source import RemoteSource
from bcfleet.tui.screens.instances import COLUMNS, InstancesView
from bcfleet.tui.source import FleetSource, LocalSource
from tests.support.builders import token
from tests.support.many_instances import many_instances
from tests.support.tui import make_app, screen_text, settle, type_ahead

pytestmark = pytest.mark.anyio

COUNT = 1_200
NAME, TENANT, STATE, AGE, REASON = 0, 1, 2, 5, 6


@pytest.mark.parametrize(
    ("text", "sort", "reverse", "query", "local"),
    [
        pytest.param("vm-000123", None, False, InstanceQuery(q="vm-000123"), (), id="a-word"),
        pytest.param("vm 12", NAME, True, InstanceQuery(q="vm 12", sort="name", descending=True),
                     (), id="words-and-a-sort"),
        pytest.param("state:Running tenant:acme host:h1", None, False,
                     InstanceQuery(state="running", owner="acme", host="h1"), (), id="columns"),
        pytest.param("state:run !stopped ~^vm flavor:x", None, False, InstanceQuery(),
                     ("state:run", "!stopped", "~^vm", "flavor:x"), id="left-to-the-table"),
        pytest.param("tenant:~^acme$ host:~^ams\\.1$", None, False,
                     InstanceQuery(owner="acme", host="ams.1"), (), id="a-drill-downs-exact-terms"),
        pytest.param("tenant:~^acme.$", None, False, InstanceQuery(), ("tenant:~^acme.$",),
                     id="a-regex-is-left-to-the-table"),
        pytest.param("", AGE, False, InstanceQuery(sort="created", descending=True), (),
                     id="age-up-is-newest-first"),
        pytest.param("", REASON, True, InstanceQuery(), (), id="reason-sorted-here"),
    ],
)  # fmt: skip
def test_what_of_the_filter_and_sort_the_server_is_asked(
    text: str, sort: int | None, reverse: bool, query: InstanceQuery, local: tuple[str, ...]
) -> None:
    assert server_query(text, COLUMNS, sort, reverse) == (query, local)


@pytest.fixture
def big(fleet: Fleet) -> Fleet:
    many_instances(fleet, COUNT)
    return fleet


@pytest.fixture
def remote(big: Fleet) -> Iterator[RemoteSource]:
    with (
        BackgroundServer(create_app(big, tally_seconds=0)) as server,
        FleetClient(server.url, token(big, "root", "ops")) as client,
    ):
        yield RemoteSource(client, label=server.url)


def status(app: Any) -> str:
    return screen_text(app)[-2]


async def finds_one_among_many(source: FleetSource) -> None:
    app = make_app(source, start="instances")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        assert isinstance(view, InstancesView)
        assert view.table.row_count == 1000  # the first page: pending ones, then the newest
        assert status(app).startswith("1,000 of 1,200 instances")
        type_ahead(app, ["slash", *"vm-000123"])  # one burst, as a paste
        await settle(pilot)
        assert list(view.table.all_rows) == ["ins_00000000000000000000000123"]
        assert status(app).startswith("1 of 1,200 instances · filter vm-000123")
        await pilot.press("enter", "escape")  # the filter cleared: the first page again
        await settle(pilot)
        assert view.table.row_count == PAGE
        assert status(app).startswith(f"{PAGE} of 1,200 instances")
        await pilot.press("s")  # by NAME, on the server: the first names of all 1,200
        await settle(pilot)
        assert (view.table.row_count, view.table.cursor_row) == (PAGE, 0)  # from the top
        first = [str(view.table.get_row_at(i)[0]) for i in range(3)]
        assert first == ["vm-000000", "vm-000001", "vm-000002"]
        read = view.table.row_count
        await pilot.press("G")  # the cursor at the end of what is read: the next page comes
        await settle(pilot)
        assert view.table.row_count == read + PAGE
        assert status(app).startswith(f"{read + PAGE:,} of 1,200 instances · sort NAME ▲")


async def test_the_console_finds_an_instance_beyond_the_first_thousand(big: Fleet) -> None:
    await finds_one_among_many(LocalSource(big, label="sqlite:///fleet.db"))


async def test_over_http_too(remote: RemoteSource) -> None:
    await finds_one_among_many(remote)


async def test_terms_the_server_is_not_asked_are_said_on_the_status_line(big: Fleet) -> None:
    app = make_app(LocalSource(big, label="sqlite:///fleet.db"), start="instances")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = app.screen
        assert isinstance(view, InstancesView)
        type_ahead(app, ["slash", *"state:pending tenant:acme !vm-0000", "enter"])
        await settle(pilot)
        pending_acme = [n for n in range(COUNT) if n % 10 == 0 and n >= 100]  # not vm-0000xx
        assert sorted(view.table._shown) == [f"ins_{n:026d}" for n in pending_acme]
        assert status(app).startswith(f"{len(pending_acme)} of 1,200 instances")
        assert "!vm-0000 checked on the 120 read" in view.summary().plain
        type_ahead(app, ["slash", "ctrl+u", *"host:nowhere", "enter"])
        await settle(pilot)
        assert view.table.row_count == 0
        assert status(app).startswith("0 of 1,200 instances")
        assert "nowhere" in view.summary().plain

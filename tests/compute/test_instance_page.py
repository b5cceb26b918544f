"""instances.list with a limit: the ones that matter first (pending, then the newest) and the
total, through the API, over HTTP and in the dashboard's Instances view."""

from __future__ import annotations

from typing import Any

import pytest

from bcfleet.clock import FakeClock
from bcfleet.errors import InvalidInputError
from bcfleet.fleet import Fleet
from tests.support.builders import OP, flavor
from tests.support.capacity import DEGRADED, create, gpu_fleet, pool_with_hosts
from tests.support.http import error_code, served


def made_in_order(fleet: Fleet, clock: FakeClock) -> tuple[list[str], list[str]]:
    """Four placed instances a minute apart, then two that wait (too big for the one host)."""
    pool = pool_with_hosts(fleet, hosts=1)
    flavor(fleet, pool["id"], "small", vcpu=1, memory_gib=1, disk_gib=10)
    flavor(fleet, pool["id"], "huge", vcpu=64, memory_gib=64, disk_gib=10)
    placed, waiting = [], []
    for name in ("small", "small", "huge", "small", "huge", "small"):
        clock.advance(60)
        made = create(fleet, pool, name)
        (waiting if made["state"] == "pending" else placed).append(made["id"])
    assert len(waiting) == 2 and len(placed) == 4
    return placed, waiting


def test_a_limit_gives_pending_first_then_the_newest_and_the_total(
    any_fleet: Fleet, clock: FakeClock
) -> None:
    placed, waiting = made_in_order(any_fleet, clock)
    page = any_fleet.api.instances.list(OP, limit=4)
    assert [i["id"] for i in page["items"]] == [*reversed(waiting), *reversed(placed)][:4]
    assert page["total"] == 6
    everything = any_fleet.api.instances.list(OP)
    assert "total" not in everything  # without a limit: every instance, oldest first, as before
    in_creation_order = [placed[0], placed[1], waiting[0], placed[2], waiting[1], placed[3]]
    assert [i["id"] for i in everything["items"]] == in_creation_order


def test_the_page_reads_each_instance_as_the_full_list_does(fleet: Fleet, clock: FakeClock) -> None:
    made_in_order(fleet, clock)
    full = {i["id"]: i for i in fleet.api.instances.list(OP)["items"]}
    for item in fleet.api.instances.list(OP, limit=6)["items"]:
        assert item == full[item["id"]]


def test_a_limit_with_a_condition_counts_only_those_with_it(fleet: Fleet) -> None:
    pool = gpu_fleet(fleet)
    for _ in range(3):
        create(fleet, pool, "pin")
    create(fleet, pool, "plain")
    page = fleet.api.instances.list(OP, condition=DEGRADED, limit=2)
    assert len(page["items"]) == 2 and page["total"] == 3


@pytest.mark.parametrize("limit", [0, -1, 1001, True, 10**30])
def test_a_limit_out_of_bounds_is_invalid_input(fleet: Fleet, limit: Any) -> None:
    with pytest.raises(InvalidInputError, match="limit"):
        fleet.api.instances.list(OP, limit=limit)


def test_over_http_the_limit_is_a_query_parameter_and_total_is_in_the_document(
    fleet: Fleet, clock: FakeClock
) -> None:
    placed, waiting = made_in_order(fleet, clock)
    with served(fleet) as (_, api):
        answer = api.get("/v1/instances", params={"limit": "3"})  # checked against the document
        assert answer.status_code == 200
        body = answer.json()
        assert [i["id"] for i in body["items"]] == [*reversed(waiting), placed[-1]]
        assert body["total"] == 6
        assert error_code(api.get("/v1/instances", params={"limit": "0"})) == "INVALID_INPUT"
        assert "total" not in api.get("/v1/instances").json()

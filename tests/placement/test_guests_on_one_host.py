"""A guest placed on a host sees the guests already there: pinned CPUs are never handed out twice."""

from __future__ import annotations

import threading
import time
from typing import Any

from sqlalchemy import text
from sqlmodel import select

from bcfleet.fleet import Fleet
from bcfleet.store.models import Instance
from tests.support.builders import flavor
from tests.support.capacity import create, invariants_ok, pool_with_hosts


def test_pinned_guests_on_one_host_get_disjoint_cpus(any_fleet: Fleet) -> None:
    fleet = any_fleet
    pool = pool_with_hosts(fleet, cpus=18, numa_nodes=2)  # 16 guest CPUs
    flavor(fleet, pool["id"], "pin4", vcpu=4, memory_gib=2, disk_gib=10, placement={"pinned": True})
    placed = [create(fleet, pool, "pin4") for _ in range(4)]
    assert [i["state"] for i in placed] == ["running"] * 4
    with fleet.read() as session:
        placements = [i.host_placement or {} for i in session.exec(select(Instance)).all()]
    cpus = [c for p in placements for c in p["cpus"]]
    assert len(cpus) == 16 and len(set(cpus)) == 16
    assert create(fleet, pool, "pin4")["conditions"]  # the fifth has no CPU left to pin
    invariants_ok(fleet)


def test_a_guest_placed_while_another_holds_the_host_sees_it_once_it_commits(
    pg_fleet: Fleet,
) -> None:
    """PostgreSQL: the host's other guests are read behind the claim, in its round trip, so
    after the row locks it waited for. A placement whose claim waits on a guest being placed
    in an open transaction pins CPUs disjoint from that guest's once it commits (read before
    the claim, the open guest would be missed and its CPUs handed out again)."""
    fleet = pg_fleet
    pool = pool_with_hosts(fleet, cpus=18, numa_nodes=2)
    flavor(fleet, pool["id"], "pin4", vcpu=4, memory_gib=2, disk_gib=10, placement={"pinned": True})
    assert create(fleet, pool, "pin4")["state"] == "running"  # the host does not look empty
    placed, go_on = threading.Event(), threading.Event()

    def hold_the_host() -> None:
        with fleet.transaction() as joined:
            create(joined, pool, "pin4")  # its claim holds the host's rows until commit
            placed.set()
            go_on.wait(10)

    holder = threading.Thread(target=hold_the_host)
    holder.start()
    assert placed.wait(10)
    waiting: list[dict[str, Any]] = []
    behind = threading.Thread(target=lambda: waiting.append(create(fleet, pool, "pin4")))
    behind.start()
    try:
        assert _waits_on_a_lock(fleet), "the second placement never waited on the host's rows"
    finally:
        go_on.set()
        holder.join(10)
        behind.join(10)
    assert [i["state"] for i in waiting] == ["running"]
    with fleet.read() as session:
        placements = [i.host_placement or {} for i in session.exec(select(Instance)).all()]
    cpus = [c for p in placements for c in p["cpus"]]
    assert len(cpus) == 12 and len(set(cpus)) == 12
    invariants_ok(fleet)


def _waits_on_a_lock(fleet: Fleet) -> bool:
    query = text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock'"
    )
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with fleet.engine.connect() as connection:
            if connection.execute(query).scalar_one() > 0:
                return True
        time.sleep(0.01)
    return False

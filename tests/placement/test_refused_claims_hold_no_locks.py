"""A placement that moves on from a host it could not claim holds no lock on it (PostgreSQL).

Two placements trying the same hosts in opposite orders used to deadlock: each kept the row
locks of the host it was refused on while it waited for the other's.
"""

from __future__ import annotations

from typing import Any

import psycopg
from sqlalchemy import event

from bcfleet.fleet import Fleet
from tests.support.builders import flavor
from tests.support.capacity import create, invariants_ok, pool_with_hosts
from tests.support.db_faults import libpq_url

CLAIM = "WITH wanted (resource, n, rank)"


def test_a_refused_claim_lets_go_of_the_hosts_rows(pg_fleet: Fleet) -> None:
    pool = pool_with_hosts(pg_fleet, hosts=2)
    flavor(pg_fleet, pool["id"], "c2", vcpu=2, memory_gib=4, disk_gib=10)
    outsider = psycopg.connect(libpq_url(pg_fleet), autocommit=True)
    claimed: list[str] = []
    lockable: list[bool] = []

    def before(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if not statement.startswith(CLAIM):
            return
        node = params["node"]
        if not claimed:  # a concurrent writer takes the first host's memory just before
            outsider.execute(
                "UPDATE node_resources SET allocated = capacity "
                "WHERE node_id = %s AND resource = 'memoryGiB'",
                (node,),
            )
        else:  # moving on: the refused host's rows must be free for others
            with outsider.transaction():
                try:
                    outsider.execute(
                        "SELECT 1 FROM node_resources WHERE node_id = %s FOR UPDATE NOWAIT",
                        (claimed[0],),
                    )
                    lockable.append(True)
                except psycopg.errors.LockNotAvailable:
                    lockable.append(False)
        claimed.append(node)

    event.listen(pg_fleet.engine, "before_cursor_execute", before)
    try:
        made = create(pg_fleet, pool, "c2")
    finally:
        event.remove(pg_fleet.engine, "before_cursor_execute", before)
    first = claimed[0]
    outsider.execute(  # give the memory back so the invariants hold again
        "UPDATE node_resources SET allocated = 0 WHERE node_id = %s AND resource = 'memoryGiB'",
        (first,),
    )
    outsider.close()
    assert made["state"] == "running"
    assert len(claimed) == 2 and claimed[1] != first
    assert lockable == [True]
    assert first not in {made.get("hostId"), made.get("host")}
    invariants_ok(pg_fleet)

"""On PostgreSQL a first run claims an empty host whose inventory it keeps without reading the
claim's answer: the claim (and a charge expected on the stripes) carry guards, and the rows and
COMMIT go in their round trip. A guard that a concurrent writer breaks fails the transaction,
nothing of it is saved, and the call runs again carefully.
"""

from __future__ import annotations

from typing import Any

import psycopg
from sqlalchemy import event, text

from bcfleet.fleet import Fleet
from bcfleet.placement.quotas import quota_usage
from bcfleet.store import faults
from tests.support.builders import flavor
from tests.support.capacity import create, invariants_ok, pool_with_hosts
from tests.support.db_faults import libpq_url
from tests.support.statements import CLAIM

SHAPE = {"vcpu": 2, "memoryGiB": 4, "diskGiB": 10}


def _charged(fleet: Fleet, pool_id: str) -> dict[str, int]:
    with fleet.read() as session:
        usage = quota_usage(session, "acme", pool_id=pool_id)
    return {resource: used for (_t, _p, resource), used in usage.items() if used}


def _count(fleet: Fleet, sql: str) -> int:
    with fleet.read() as session:
        return int(session.execute(text(sql)).scalar_one())


def _race_the_unread_claim(fleet: Fleet, change: str) -> tuple[dict[str, Any], list[str]]:
    """Create twice; just before the second create's unread claim, an outsider runs `change`
    (with the claimed node's id) and commits. The claims' statements, in order."""
    pool = pool_with_hosts(fleet, hosts=3)
    flavor(fleet, pool["id"], "c2", vcpu=2, memory_gib=4, disk_gib=10)
    assert create(fleet, pool, "c2")["state"] == "running"  # keeps the inventories it saw
    outsider = psycopg.connect(libpq_url(fleet), autocommit=True)
    claims: list[str] = []

    def before(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if statement.startswith(CLAIM):
            unread = faults.GUARD_REFUSED in statement
            if unread and not claims:
                outsider.execute(change, (params["node"],))
            claims.append("unread" if unread else "read")

    event.listen(fleet.engine, "before_cursor_execute", before)
    try:
        assert create(fleet, pool, "c2")["state"] == "running"
    finally:
        event.remove(fleet.engine, "before_cursor_execute", before)
        outsider.close()
    return pool, claims


def test_an_unread_claim_on_a_host_taken_meanwhile_saves_nothing_and_runs_again(
    pg_fleet: Fleet,
) -> None:
    pool, claims = _race_the_unread_claim(
        pg_fleet,
        "UPDATE node_resources SET allocated = allocated + 1 "
        "WHERE node_id = %s AND resource = 'vcpu'",
    )
    assert claims == ["unread", "read"]  # the careful run reads its claim
    with pg_fleet.write() as session:  # the outsider's vCPU, not an allocation's: given back
        session.execute(
            text(
                "UPDATE node_resources SET allocated = allocated - 1 WHERE resource = 'vcpu' "
                "AND allocated % 2 = 1"
            )
        )
    assert _charged(pg_fleet, pool["id"]) == {r: 2 * n for r, n in SHAPE.items()}
    assert _count(pg_fleet, "SELECT count(*) FROM instances") == 2
    assert _count(pg_fleet, "SELECT count(*) FROM events WHERE type = 'instance.placed'") == 2
    invariants_ok(pg_fleet)


def test_an_unread_claim_on_a_host_with_a_new_inventory_runs_again(pg_fleet: Fleet) -> None:
    pool, claims = _race_the_unread_claim(
        pg_fleet,
        "UPDATE hosts SET inventory_generation = inventory_generation + 1 WHERE id = %s",
    )
    assert claims == ["unread", "read"]
    assert _charged(pg_fleet, pool["id"]) == {r: 2 * n for r, n in SHAPE.items()}
    assert _count(pg_fleet, "SELECT count(*) FROM allocations WHERE released_at IS NULL") == 2
    invariants_ok(pg_fleet)


def test_a_refused_guard_at_commit_counts_no_commit() -> None:
    runs: list[int] = []

    def call() -> str:
        runs.append(1)
        if len(runs) == 1:
            faults.commit_is_next()
            with faults.lost_connections(committing=lambda: True):
                raise _guard_error()
        return "done"

    assert faults.run_retrying(call) == "done"  # not "RunAgainCarefully raised where it may not be"
    assert len(runs) == 2


def _guard_error() -> Exception:
    from sqlalchemy.exc import DataError

    class Refused(Exception):
        sqlstate = "22P02"

    orig = Refused(f'invalid input syntax for type integer: "{faults.GUARD_REFUSED}: x 2"')
    return DataError("SELECT", {}, orig)


def test_an_unread_claim_is_taken_only_where_it_pays(pg_fleet: Fleet) -> None:
    pool = pool_with_hosts(pg_fleet, hosts=3)
    flavor(pg_fleet, pool["id"], "c2", vcpu=2, memory_gib=4, disk_gib=10)
    kinds: list[bool] = []

    def before(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if statement.startswith(CLAIM):
            kinds.append(faults.GUARD_REFUSED in statement)

    event.listen(pg_fleet.engine, "before_cursor_execute", before)
    try:
        for _ in range(3):
            assert create(pg_fleet, pool, "c2")["state"] == "running"
    finally:
        event.remove(pg_fleet.engine, "before_cursor_execute", before)
    # The first knows no inventory; the next two find theirs kept, on hosts still empty.
    assert kinds == [False, True, True]
    invariants_ok(pg_fleet)

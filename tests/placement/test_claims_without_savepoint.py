"""On PostgreSQL an API placement claims its first host without a savepoint; when a concurrent
writer meets it, the whole call is rolled back and runs once more with savepoints.

A refused claim would otherwise keep the refused host's row locks while the next host is tried
(tests/placement/test_refused_claims_hold_no_locks.py has the race this guards against).
"""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from sqlalchemy import event

from bcfleet.domain.numa import NotCandidate
from bcfleet.fleet import Fleet
from bcfleet.placement import instance_placer
from bcfleet.placement.quotas import quota_usage
from bcfleet.store import faults
from tests.support.builders import flavor
from tests.support.capacity import create, invariants_ok, pool_with_hosts
from tests.support.db_faults import libpq_url
from tests.support.statements import CLAIM, Statements

COUNTED = {"claim": CLAIM, "savepoint": "SAVEPOINT"}


def _charged(fleet: Fleet, pool_id: str) -> dict[str, int]:
    with fleet.read() as session:
        usage = quota_usage(session, "acme", pool_id=pool_id)
    return {resource: used for (_t, _p, resource), used in usage.items() if used}


def test_an_uncontended_placement_takes_no_savepoint(pg_fleet: Fleet) -> None:
    pool = pool_with_hosts(pg_fleet, hosts=2)
    flavor(pg_fleet, pool["id"], "c2", vcpu=2, memory_gib=4, disk_gib=10)
    seen = Statements(pg_fleet, COUNTED)
    try:
        made = create(pg_fleet, pool, "c2")
    finally:
        seen.remove()
    assert made["state"] == "running"
    assert seen.kinds == {"claim": 1}


def test_a_refused_claim_runs_the_call_again_with_a_savepoint_and_charges_once(
    pg_fleet: Fleet,
) -> None:
    pool = pool_with_hosts(pg_fleet, hosts=2)
    flavor(pg_fleet, pool["id"], "c2", vcpu=2, memory_gib=4, disk_gib=10)
    outsider = psycopg.connect(libpq_url(pg_fleet), autocommit=True)
    claimed: list[str] = []

    def before(_conn: Any, _cursor: Any, statement: str, params: Any, *_: Any) -> None:
        if statement.startswith(CLAIM):
            if not claimed:  # a concurrent writer takes the first host's memory just before
                outsider.execute(
                    "UPDATE node_resources SET allocated = capacity "
                    "WHERE node_id = %s AND resource = 'memoryGiB'",
                    (params["node"],),
                )
            claimed.append(params["node"])

    event.listen(pg_fleet.engine, "before_cursor_execute", before)
    seen = Statements(pg_fleet, COUNTED)
    try:
        made = create(pg_fleet, pool, "c2")
    finally:
        seen.remove()
        event.remove(pg_fleet.engine, "before_cursor_execute", before)
    outsider.execute(
        "UPDATE node_resources SET allocated = 0 WHERE node_id = %s AND resource = 'memoryGiB'",
        (claimed[0],),
    )
    outsider.close()
    assert made["state"] == "running"
    assert len(claimed) == 2 and claimed[1] != claimed[0]
    assert seen.kinds == {"claim": 2, "savepoint": 1}  # the careful run's, on the second host
    assert _charged(pg_fleet, pool["id"]) == {"vcpu": 2, "memoryGiB": 4, "diskGiB": 10}
    invariants_ok(pg_fleet)


def test_a_host_that_turns_out_not_to_fit_runs_the_call_again(
    pg_fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = pool_with_hosts(pg_fleet, hosts=2)
    flavor(pg_fleet, pool["id"], "c2", vcpu=2, memory_gib=4, disk_gib=10)
    chooser = instance_placer.choose_placement
    refused: list[str] = []

    def first_host_refuses(*args: Any, **kwargs: Any) -> Any:
        if not refused:
            refused.append(args[3])  # node_id
            raise NotCandidate("no NUMA node can hold the guest")
        return chooser(*args, **kwargs)

    monkeypatch.setattr(instance_placer, "choose_placement", first_host_refuses)
    made = create(pg_fleet, pool, "c2")
    assert made["state"] == "running"
    assert _charged(pg_fleet, pool["id"]) == {"vcpu": 2, "memoryGiB": 4, "diskGiB": 10}
    invariants_ok(pg_fleet)  # the refused host's claim went with the first run's transaction


def test_only_an_api_calls_first_run_may_take_the_path(fleet: Fleet) -> None:
    assert not faults.may_run_again_carefully()  # outside any call
    runs: list[bool] = []

    def call() -> str:
        runs.append(faults.may_run_again_carefully())
        if len(runs) == 1:
            raise faults.RunAgainCarefully
        return "done"

    assert faults.run_retrying(call) == "done"
    assert runs == [True, False]
    with fleet.transaction() as joined:
        assert joined.run_call(faults.may_run_again_carefully) is False


def test_a_careful_run_that_asks_again_is_a_bug_not_a_loop() -> None:
    def call() -> None:
        raise faults.RunAgainCarefully

    with pytest.raises(RuntimeError, match="may not be"):
        faults.run_retrying(call)

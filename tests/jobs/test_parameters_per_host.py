"""A vps.hosts tick and a plan's reading of the fleet bind no parameter per host: past 65,535
hosts a statement with one would be more than PostgreSQL takes, and the job or the plan would
fail there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import event

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from bcfleet.reconcile.apply import observe_state
from bench.common import T0, seed_pool


def most_parameters(tmp_path: Path, hosts: int) -> dict[str, int]:
    """The most parameters one statement bound, in a vps.hosts tick and in a plan's observe,
    on a fleet of `hosts` synced hosts."""
    url = f"sqlite:///{tmp_path}/hosts-{hosts}.db"
    fleet = Fleet.open(url, clock=FakeClock(T0))
    seed_pool(fleet, hosts)
    most = {"current": 0}

    def note(_conn: Any, _cursor: Any, _sql: str, parameters: Any, *_: Any) -> None:
        many = parameters if isinstance(parameters, list) else [parameters]
        most["current"] = max([most["current"], *(len(p or ()) for p in many)])

    event.listen(fleet.engine, "before_cursor_execute", note)
    try:
        counts = run_vps_hosts(fleet, fleet.now())
        assert counts["hosts"] == hosts and counts["hostErrors"] == 0
        tick, most["current"] = most["current"], 0
        observed = observe_state(fleet, LOCAL_OPERATOR)
        assert len(observed.capacity) == hosts
        return {"tick": tick, "observe": most["current"]}
    finally:
        event.remove(fleet.engine, "before_cursor_execute", note)
        fleet.close()


def test_the_tick_and_the_plan_bind_as_many_parameters_for_forty_hosts_as_for_three(
    tmp_path: Path,
) -> None:
    assert most_parameters(tmp_path, 40) == most_parameters(tmp_path, 3)

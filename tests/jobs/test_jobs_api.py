"""fleet.api.jobs and fleet.api.state: what the dashboard, the CLI and the HTTP routes read and run."""

from __future__ import annotations

import pytest

from bcfleet.api.jobs import job_names
from bcfleet.errors import ForbiddenError, LockedError, NotFoundError
from bcfleet.fleet import Fleet
from bcfleet.jobs import vps_hosts
from bcfleet.store import locks
from tests.support import jobs as job_fixtures
from tests.support.builders import OP, token


def _row(fleet: Fleet, job: str) -> dict[str, object]:
    return next(r for r in fleet.api.jobs.list(OP)["items"] if r["job"] == job)


def test_list_gives_every_job_with_its_failures_and_last_error(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert fleet.api.jobs.run(OP, "vps.hosts")["outcome"] == "ok"
    monkeypatch.setattr(vps_hosts, "run_vps_hosts", job_fixtures.failing_job)
    for _ in range(2):
        assert fleet.api.jobs.run(OP, "vps.hosts")["outcome"] == "error"
    items = fleet.api.jobs.list(OP)["items"]
    assert [r["job"] for r in items] == list(job_names())
    row = _row(fleet, "vps.hosts")
    assert (row["lastOutcome"], row["failures"]) == ("error", 2)
    assert "the provider said no" in str(row["lastError"])
    assert row["intervalSeconds"] == 30.0
    untouched = _row(fleet, "spares")
    assert (untouched["failures"], untouched["lastError"], untouched["lastRunAt"]) == (
        0,
        None,
        None,
    )
    runs = fleet.api.jobs.runs(OP, job="vps.hosts")
    assert [r["outcome"] for r in runs] == ["error", "error", "ok"]  # newest first


def test_only_roots_principals_read_jobs_and_only_roots_admin_runs_one(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme")
    viewer = token(fleet, "root", "watcher", role="viewer")
    member = token(fleet, "root", "helper", role="member")
    acme = token(fleet, "acme", "acme-admin", role="admin")
    assert len(fleet.api.jobs.list(viewer)["items"]) == len(job_names())
    assert fleet.api.jobs.runs(member, job="spares") == []
    for caller in (viewer, member, acme):
        with pytest.raises(ForbiddenError):
            fleet.api.jobs.run(caller, "vps.hosts")
        with pytest.raises(ForbiddenError):
            fleet.api.jobs.call(caller, "vps.hosts")
    for read in (fleet.api.jobs.list, fleet.api.jobs.status):
        with pytest.raises(ForbiddenError):
            read(acme)
    assert fleet.api.jobs.runs(OP, job="vps.hosts") == []  # nothing ran


def test_an_unknown_job_is_not_found_and_a_held_one_locked(fleet: Fleet) -> None:
    with pytest.raises(NotFoundError):
        fleet.api.jobs.run(OP, "vps.nothing")
    with pytest.raises(NotFoundError):
        fleet.api.jobs.runs(OP, job="vps.nothing")
    locks.take(fleet, "job:spares", holder="elsewhere", operation="job spares", ttl_seconds=60)
    with pytest.raises(LockedError):
        fleet.api.jobs.run(OP, "spares")


def test_call_runs_the_function_without_recording_a_run(fleet: Fleet) -> None:
    counts = fleet.api.jobs.call(OP, "vps.hosts")
    assert isinstance(counts, dict)
    assert fleet.api.jobs.runs(OP, job="vps.hosts") == []


def test_the_revision_moves_with_each_write_and_only_root_sees_it(fleet: Fleet) -> None:
    before = fleet.api.state.revision(OP)
    assert before is not None
    fleet.api.tenants.create(OP, "acme")
    after = fleet.api.state.revision(OP)
    assert after is not None and after > before
    assert fleet.api.state.revision(OP) == after  # reading does not move it
    acme = token(fleet, "acme", "acme-admin", role="admin")
    assert fleet.api.state.revision(acme) is None

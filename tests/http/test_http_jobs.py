"""/v1/jobs: each job's schedule and failures for root's principals, running one now for root's admin."""

from __future__ import annotations

import pytest

from bcfleet.api.jobs import job_names
from bcfleet.fleet import Fleet
from bcfleet.jobs import vps_hosts
from tests.support import jobs as job_fixtures
from tests.support.builders import OP, token
from tests.support.http import error_code, served


def test_root_reads_the_jobs_and_runs_one_now(
    fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    with served(fleet) as (_, api):
        ran = api.post("/v1/jobs/vps.hosts/run")
        monkeypatch.setattr(vps_hosts, "run_vps_hosts", job_fixtures.failing_job)
        failed = api.post("/v1/jobs/vps.hosts/run")
        listed = api.get("/v1/jobs")
        runs = api.get("/v1/jobs/vps.hosts/runs", params={"limit": 1})
    assert (ran.status_code, ran.json()["outcome"], ran.json()["job"]) == (200, "ok", "vps.hosts")
    assert (failed.status_code, failed.json()["outcome"]) == (200, "error")
    items = listed.json()["items"]
    assert [j["job"] for j in items] == list(job_names())
    row = next(j for j in items if j["job"] == "vps.hosts")
    assert (row["lastOutcome"], row["failures"], row["intervalSeconds"]) == ("error", 1, 30.0)
    assert "the provider said no" in row["lastError"]
    assert row["nextDueAt"] is not None
    assert [r["id"] for r in runs.json()["items"]] == [failed.json()["id"]]
    assert listed.json() == fleet.api.jobs.list(OP)


def test_other_callers_are_forbidden_and_unknown_jobs_not_found(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme")
    viewer = token(fleet, "root", "watcher", role="viewer")
    acme = token(fleet, "acme", "acme-admin", role="admin")
    with served(fleet) as (_, api):
        unknown = api.post("/v1/jobs/vps.nothing/run")
        as_viewer = api.as_(viewer)
        viewer_reads = as_viewer.get("/v1/jobs")
        viewer_runs = as_viewer.post("/v1/jobs/vps.hosts/run")
        acme_reads = api.as_(acme).get("/v1/jobs")
        acme_runs = api.as_(acme).post("/v1/jobs/vps.hosts/run")
    assert (unknown.status_code, error_code(unknown)) == (404, "NOT_FOUND")
    assert viewer_reads.status_code == 200
    for refused in (viewer_runs, acme_reads, acme_runs):
        assert (refused.status_code, error_code(refused)) == (403, "FORBIDDEN")
    assert fleet.api.jobs.runs(OP, job="vps.hosts") == []

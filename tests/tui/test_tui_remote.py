"""The dashboard over HTTP: RemoteSource reads the same things LocalSource does, through `fleet serve`."""

from __future__ import annotations

from bcfleet.domain.compute_settings import ComputeChange, SizeChange
from bcfleet.fleet import Fleet
from bcfleet.tui.remote_source import RemoteSource
from bcfleet.tui.source import LocalSource, PreviewRequest


def test_remote_reads_match_local_reads(fleet: Fleet, remote: RemoteSource) -> None:
    local = LocalSource(fleet)
    assert [h["name"] for h in remote.hosts()] == [h["name"] for h in local.hosts()]
    assert [r["id"] for r in remote.reservations()] == [r["id"] for r in local.reservations()]
    assert [i["id"] for i in remote.degraded()] == [i["id"] for i in local.degraded()]
    request = PreviewRequest(
        tenant="acme", pool="gpu-burst", gpus=4, duration="12h", nodes=1, spot=False
    )
    assert remote.preview(request) == local.preview(request)


def test_remote_jobs_match_local_jobs(fleet: Fleet, remote: RemoteSource) -> None:
    local = LocalSource(fleet)
    ran = remote.client.run_job("spares")
    assert [r["id"] for r in remote.job_runs("spares")] == [ran["id"]]
    assert remote.job_runs("spares") == local.job_runs("spares")
    assert remote.jobs() == local.jobs()
    assert next(j for j in remote.jobs() if j["job"] == "spares")["lastOutcome"] == ran["outcome"]


def test_remote_compute_settings_save(remote: RemoteSource) -> None:
    current = remote.compute_settings("acme")
    change = ComputeChange(sizes={"small": SizeChange(spares=2)})
    saved = remote.save_compute_settings("acme", current.settings, change)
    assert saved.message == "Your compute settings are saved."
    assert remote.compute_settings("acme").settings.setting("small").spares == 2

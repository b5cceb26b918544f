"""Faults stay local: a job that fails on one reservation, spare, metered subject or server keeps going.

Each test breaks exactly one item (a hostile value written straight into its row, or the fake
provider refusing one server), runs the job once through the runner, and checks that the other
items progressed, the broken one carries its error, `fleet doctor --json` names it, and the job
run is recorded with the failure count; then it mends the item and sees the fault go away.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import func, text
from sqlmodel import select

from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.jobs.providers import run_reconcile
from bcfleet.jobs.runner import RunResult, recent_runs, run_job
from bcfleet.providers.fake_server import FakeHetzner
from bcfleet.store.models import Instance
from bcfleet.store.models.usage import UsageWindow
from tests.support import metering as mb
from tests.support.builders import OP
from tests.support.compute import serverless_tenant
from tests.support.fleet import T0, run_cli
from tests.support.reservations import get, gpu_pool, reserve

HCLOUD = "hc-fault-test-token"


def hostile(fleet: Fleet, sql: str, **params: Any) -> None:
    """Write straight into the tables, past every check of the API."""
    with fleet.engine.begin() as connection:
        connection.execute(text(sql), params)


def is_postgres(fleet: Fleet) -> bool:
    return fleet.engine.dialect.name == "postgresql"


def doctor_warnings(fleet: Fleet) -> list[dict[str, Any]]:
    shown = run_cli("doctor", "--json", db=fleet.settings.db_url)
    assert shown.exit_code == 0, shown.stderr
    body = shown.json()
    assert isinstance(body, dict)
    return list(body["warnings"])


def faults_named(fleet: Fleet, job: str) -> list[tuple[str, str]]:
    """(kind, id) of each item `fleet doctor --json` says the job failed on."""
    return [(w["kind"], w["id"]) for w in doctor_warnings(fleet) if w["code"] == f"{job}.failed"]


def job_failed(conditions: list[dict[str, Any]], job_reason: str) -> dict[str, Any]:
    [condition] = [c for c in conditions if c["type"] == "JobFailed"]
    assert condition["reason"] == job_reason
    return condition


def recorded(fleet: Fleet, result: RunResult) -> dict[str, Any]:
    """The job run as `fleet jobs` lists it."""
    [run] = [r for r in recent_runs(fleet, job=result.job) if r["id"] == result.id]
    assert run["outcome"] == "ok"
    return run


# ----- reservations.retry ---------------------------------------------------------------------


def test_retry_places_the_others_when_one_pending_reservation_breaks(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet, hosts=1, gpus=4)
    holder = reserve(any_fleet, pool, tenant="beta")
    broken = reserve(any_fleet, pool, gpus=2)
    healthy = reserve(any_fleet, pool, tenant="beta", gpus=2)
    assert get(any_fleet, broken)["state"] == get(any_fleet, healthy)["state"] == "pending"
    any_fleet.api.reservations.cancel(OP, holder["id"])
    hostile(any_fleet, "UPDATE reservations SET binding = 'weird' WHERE id = :i", i=broken["id"])

    result = run_job(any_fleet, "reservations.retry")

    assert result.counts["failed"] == 1 and result.counts["placed"] == 1
    assert recorded(any_fleet, result)["counts"]["failed"] == 1
    assert get(any_fleet, healthy)["state"] in ("placed", "active")
    shown = get(any_fleet, broken)
    assert shown["state"] == "pending"
    condition = job_failed(shown["conditions"], "ReservationsRetry")
    assert "INVALID_INPUT" in condition["message"]
    assert healthy["id"] not in condition["message"]
    assert faults_named(any_fleet, "reservations.retry") == [("reservation", broken["id"])]
    [warning] = [w for w in doctor_warnings(any_fleet) if w["id"] == broken["id"]]
    assert warning["tenant"] == "acme" and "InvalidInputError" in warning["error"]

    hostile(any_fleet, "UPDATE reservations SET binding = 'pool' WHERE id = :i", i=broken["id"])
    again = run_job(any_fleet, "reservations.retry")
    assert again.counts["failed"] == 0
    assert [c["type"] for c in get(any_fleet, broken)["conditions"]].count("JobFailed") == 0
    assert faults_named(any_fleet, "reservations.retry") == []


def test_a_fault_on_a_reservation_the_job_no_longer_visits_is_dropped(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet, hosts=1, gpus=4)
    reserve(any_fleet, pool, tenant="beta")
    broken = reserve(any_fleet, pool, gpus=2)
    hostile(any_fleet, "UPDATE reservations SET nodes = 0 WHERE id = :i", i=broken["id"])
    assert run_job(any_fleet, "reservations.retry").counts["failed"] == 1
    assert faults_named(any_fleet, "reservations.retry") == [("reservation", broken["id"])]
    any_fleet.api.reservations.cancel(OP, broken["id"])
    assert run_job(any_fleet, "reservations.retry").counts["failed"] == 0
    assert faults_named(any_fleet, "reservations.retry") == []
    conditions = get(any_fleet, broken)["conditions"]
    assert [c for c in conditions if c["type"] == "JobFailed"] == []


# ----- reservations.lifecycle -----------------------------------------------------------------


def test_lifecycle_releases_the_others_when_one_reservation_breaks(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet, hosts=1, gpus=4)
    broken = reserve(any_fleet, pool, gpus=2, duration="1h")
    healthy = reserve(any_fleet, pool, tenant="beta", gpus=2, duration="1h")
    assert run_job(any_fleet, "reservations.lifecycle").counts["activated"] == 2
    any_fleet.clock.advance(seconds=3700)  # type: ignore[attr-defined]
    bad_time = "20000-01-01 00:00:00+00" if is_postgres(any_fleet) else "not a time"
    hostile(any_fleet, "UPDATE bookings SET starts_at = :t WHERE consumer_id = :i",
            t=bad_time, i=broken["id"])  # fmt: skip

    result = run_job(any_fleet, "reservations.lifecycle")

    assert (result.counts["released"], result.counts["failed"]) == (1, 1)
    assert recorded(any_fleet, result)["counts"]["failed"] == 1
    assert get(any_fleet, healthy)["state"] == "released"
    shown = get(any_fleet, broken)
    assert shown["state"] == "active"
    condition = job_failed(shown["conditions"], "ReservationsLifecycle")
    assert "internal error" in condition["message"]  # not a FleetError: no detail for the tenant
    assert faults_named(any_fleet, "reservations.lifecycle") == [("reservation", broken["id"])]

    hostile(any_fleet, "UPDATE bookings SET starts_at = :t WHERE consumer_id = :i",
            t=T0, i=broken["id"])  # fmt: skip
    again = run_job(any_fleet, "reservations.lifecycle")
    assert (again.counts["released"], again.counts["failed"]) == (1, 0)
    assert get(any_fleet, broken)["state"] == "released"
    assert faults_named(any_fleet, "reservations.lifecycle") == []


# ----- spares -----------------------------------------------------------------------------------


def _spares(fleet: Fleet, tenant: str) -> list[Instance]:
    with fleet.read() as session:
        return list(
            session.exec(
                select(Instance).where(
                    Instance.tenant_id == tenant,
                    Instance.purpose == "spare",
                    Instance.state != "deleted",
                )
            ).all()
        )


def test_spares_release_the_others_when_one_spare_breaks(any_fleet: Fleet) -> None:
    pool = serverless_tenant(any_fleet, "acme", spares={"large": 2})
    any_fleet.api.tenants.create(OP, "beta")
    any_fleet.api.pools.offer(OP, tenant_id="root", pool=pool["id"], to="beta")
    any_fleet.api.settings.compute_set(
        OP, tenant_id="beta", serverless_pool=pool["name"], spares={"large": 1}
    )
    assert run_job(any_fleet, "spares").counts["placed"] == 3
    any_fleet.api.settings.compute_set(OP, tenant_id="acme", spares={"large": 0})
    any_fleet.api.settings.compute_set(OP, tenant_id="beta", spares={"large": 2})
    broken, other = sorted(_spares(any_fleet, "acme"), key=lambda s: s.id)
    hostile(any_fleet, "UPDATE instances SET shape = :s WHERE id = :i",
            s='{"vcpu": "lots", "memoryGiB": 8, "diskGiB": 40}', i=broken.id)  # fmt: skip

    result = run_job(any_fleet, "spares")

    assert (result.counts["released"], result.counts["placed"], result.counts["failed"]) == (
        1,
        1,
        1,
    )
    assert recorded(any_fleet, result)["counts"]["failed"] == 1
    assert len(_spares(any_fleet, "beta")) == 2
    assert [s.id for s in _spares(any_fleet, "acme")] == [broken.id]
    shown = any_fleet.api.instances.show(OP, broken.id)
    assert job_failed(shown["conditions"], "Spares")["reason"] == "Spares"
    assert faults_named(any_fleet, "spares") == [("instance", broken.id)]
    assert any_fleet.api.instances.show(OP, other.id)["state"] == "deleted"

    hostile(any_fleet, "UPDATE instances SET shape = :s WHERE id = :i",
            s='{"vcpu": 2, "memoryGiB": 8, "diskGiB": 40}', i=broken.id)  # fmt: skip
    again = run_job(any_fleet, "spares")
    assert (again.counts["released"], again.counts["failed"]) == (1, 0)
    assert faults_named(any_fleet, "spares") == []


# ----- vps.usage --------------------------------------------------------------------------------


def _windows(fleet: Fleet, subject: str) -> int:
    with fleet.read() as session:
        return int(
            session.exec(
                select(func.count())
                .select_from(UsageWindow)
                .where(UsageWindow.subject_id == subject)
            ).one()
        )


def test_usage_bills_the_others_when_one_instance_breaks_and_catches_up_once_mended(
    any_fleet: Fleet,
) -> None:
    mb.tenant(any_fleet, "acme")
    pool_id = mb.pool(any_fleet)
    node_id = mb.node(any_fleet, pool_id)
    mb.standard_meters(any_fleet)
    first, broken, last = (mb.instance(any_fleet, pool_id, node_id, start=T0) for _ in range(3))
    bad_claims = '{"vcpu": "lots"}' if is_postgres(any_fleet) else '{"vcpu": '
    hostile(any_fleet, "UPDATE allocations SET claims = :c WHERE consumer_id = :i",
            c=bad_claims, i=broken.subject)  # fmt: skip
    any_fleet.clock.advance(seconds=3600 + 30)  # type: ignore[attr-defined]

    result = run_job(any_fleet, "vps.usage")

    assert result.counts["failed"] == 1
    assert recorded(any_fleet, result)["counts"]["failed"] == 1
    per_subject = 12 * 2  # twelve windows of vcpu and memory hours
    assert _windows(any_fleet, first.subject) == _windows(any_fleet, last.subject) == per_subject
    assert _windows(any_fleet, broken.subject) == 0
    shown = any_fleet.api.instances.show(OP, broken.subject)
    job_failed(shown["conditions"], "VpsUsage")
    [warning] = [w for w in doctor_warnings(any_fleet) if w["code"] == "vps.usage.failed"]
    assert (warning["kind"], warning["id"]) == ("instance", broken.subject)
    assert warning["unmeteredSince"] == "2026-11-30T10:00:00Z"

    hostile(any_fleet, "UPDATE allocations SET claims = :c WHERE consumer_id = :i",
            c='{"vcpu": 4, "memoryGiB": 8, "diskGiB": 40}', i=broken.subject)  # fmt: skip
    any_fleet.clock.advance(seconds=300)  # type: ignore[attr-defined]
    again = run_job(any_fleet, "vps.usage")
    assert again.counts["failed"] == 0
    assert _windows(any_fleet, broken.subject) == _windows(any_fleet, first.subject) == 13 * 2
    assert faults_named(any_fleet, "vps.usage") == []
    conditions = any_fleet.api.instances.show(OP, broken.subject)["conditions"]
    assert [c for c in conditions if c["type"] == "JobFailed"] == []


# ----- providers.reconcile ----------------------------------------------------------------------


@pytest.fixture
def provider_world(
    any_fleet: Fleet, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FakeHetzner]:
    monkeypatch.setenv("HCLOUD_TOKEN", HCLOUD)
    any_fleet.api.offer_catalog.client_options["timeout"] = 1.0
    with FakeHetzner(token=HCLOUD, clock=clock, boot_seconds=5.0) as fake:
        any_fleet.api.provider_accounts.create(
            OP, tenant_id="root", name="hz", provider="hetzner", token_env="HCLOUD_TOKEN",
            endpoint=fake.url,
        )  # fmt: skip
        any_fleet.api.tenants.create(OP, "acme")
        pool = any_fleet.api.pools.create(
            OP, tenant_id="root", name="hz-fsn", kind="provider", provider_account="hz"
        )
        any_fleet.api.pools.offer(OP, tenant_id="root", pool=pool["id"], to="acme")
        any_fleet.api.flavors.create(
            OP, tenant_id="root", pool_id="hz-fsn", name="cx23", vcpu=2, memory_gib=4,
            disk_gib=40, offer_id="cx23",
        )  # fmt: skip
        yield fake


def test_reconcile_deletes_the_other_servers_when_the_provider_refuses_one(
    any_fleet: Fleet, provider_world: FakeHetzner, clock: FakeClock
) -> None:
    fake = provider_world
    made = [
        any_fleet.api.instances.create(OP, tenant_id="acme", pool_id="hz-fsn", flavor="cx23")["id"]
        for _ in range(3)
    ]
    for _ in range(3):
        run_reconcile(any_fleet, clock.now())
        clock.advance(5)
    servers = {i: any_fleet.api.instances.show(OP, i)["providerServerId"] for i in made}
    assert all(servers.values())
    for instance_id in made:
        any_fleet.api.instances.delete(OP, instance_id)
    refused = made[1]
    with fake.state.lock:
        faults = fake.state.faults
        faults.fail_times, faults.fail_status, faults.fail_code = 1000, 403, "forbidden"
        faults.fail_method, faults.fail_path = "DELETE", f"/servers/{servers[refused]}"

    result = run_job(any_fleet, "providers.reconcile")

    assert (result.counts["deleted"], result.counts["failed"]) == (2, 1)
    assert recorded(any_fleet, result)["counts"]["failed"] == 1
    assert sorted(str(s["id"]) for s in fake.servers()) == [servers[refused]]
    shown = any_fleet.api.instances.show(OP, refused)
    assert "FORBIDDEN" in job_failed(shown["conditions"], "ProvidersReconcile")["message"]
    assert faults_named(any_fleet, "providers.reconcile") == [("instance", refused)]

    with fake.state.lock:
        fake.state.faults.fail_times = 0
    again = run_job(any_fleet, "providers.reconcile")
    assert (again.counts["deleted"], again.counts["failed"]) == (1, 0)
    assert fake.servers() == []
    assert faults_named(any_fleet, "providers.reconcile") == []


def test_a_clean_fleet_has_no_job_fault_warnings(any_fleet: Fleet) -> None:
    gpu_pool(any_fleet)
    for job in ("reservations.retry", "reservations.lifecycle", "spares", "vps.usage"):
        assert run_job(any_fleet, job).counts["failed"] == 0
    assert [w for w in doctor_warnings(any_fleet) if w["code"].endswith(".failed")] == []

"""Spare instances and the no-free-instance error of document 004: the spares job, deploys that take a spare, NO_CAPACITY."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from sqlmodel import select

from bcfleet.agent.simulate import boot_instances
from bcfleet.clock import FakeClock
from bcfleet.domain.retry_after import retry_after_without_spares
from bcfleet.errors import (
    ConflictError,
    InvalidInputError,
    NoCapacityError,
    NotFoundError,
    SizeInUseError,
)
from bcfleet.fleet import Fleet
from bcfleet.jobs.spares import run_spares
from bcfleet.placement.serverless import SERVICE_DISK_GIB, service_shape
from bcfleet.store.models import Instance, NodeResource, Quota
from tests.support.builders import OP, hosted_pool, token
from tests.support.compute import (
    capacity_host,
    legacy_service,
    make_spares_ready,
    serverless_tenant,
)

BOOT = 20.0  # settings.spare_boot_seconds, the simulated agent's boot delay


def spares(fleet: Fleet, tenant: str = "acme") -> list[Instance]:
    with fleet.read() as session:
        return list(
            session.exec(
                select(Instance)
                .where(
                    Instance.tenant_id == tenant,
                    Instance.purpose == "spare",
                    Instance.state != "deleted",
                )
                .order_by(Instance.created_at, Instance.id)  # type: ignore[arg-type]
            ).all()
        )


def instance(fleet: Fleet, instance_id: str) -> Instance:
    with fleet.read() as session:
        row = session.get(Instance, instance_id)
        assert row is not None
        return row


def allocated(fleet: Fleet) -> dict[str, int]:
    with fleet.read() as session:
        return {r.resource: r.allocated for r in session.exec(select(NodeResource)).all()}


def service(fleet: Fleet, name: str, size: str | None = "large", **kw: Any) -> str:
    made = fleet.api.services.create(
        OP, tenant_id="acme", workspace=kw.pop("workspace", "prod"), name=name, size=size, **kw
    )
    return str(made["id"])


# -- the spares job ------------------------------------------------------------------------


def test_spares_are_placed_with_the_sizes_service_shape_in_the_serverless_pool(
    fleet: Fleet,
) -> None:
    pool = serverless_tenant(fleet, spares={"large": 2, "small": 1})
    counts = run_spares(fleet, fleet.now())
    assert counts == {"tenants": 1, "placed": 3, "unschedulable": 0, "released": 0,
                      "quotaExceeded": 0, "failed": 0}  # fmt: skip
    rows = spares(fleet)
    assert sorted(r.size or "" for r in rows) == ["large", "large", "small"]
    large = next(r for r in rows if r.size == "large")
    assert large.shape == {"vcpu": 2, "memoryGiB": 8, "diskGiB": SERVICE_DISK_GIB, "gpus": 0}
    assert (large.pool_id, large.state, large.ready_at) == (pool["id"], "running", None)
    assert large.node_id is not None
    assert allocated(fleet) == {"vcpu": 5, "memoryGiB": 18, "diskGiB": 3 * SERVICE_DISK_GIB}


@pytest.mark.parametrize(
    ("size", "vcpu", "memory"),
    [("small", 1, 2), ("medium", 1, 4), ("large", 2, 8), ("xlarge", 4, 16)],
)
def test_service_shape_of_each_size(size: str, vcpu: int, memory: int) -> None:
    assert service_shape(size) == {"vcpu": vcpu, "memoryGiB": memory, "diskGiB": 20, "gpus": 0}


def test_a_spare_is_ready_only_when_its_agent_says_so_after_the_boot_delay(
    fleet: Fleet, clock: FakeClock
) -> None:
    serverless_tenant(fleet, spares={"large": 1})
    run_spares(fleet, clock.now())
    clock.advance(BOOT - 1)
    assert boot_instances(fleet, OP, clock.now()) == 0
    assert spares(fleet)[0].ready_at is None
    clock.advance(1)
    assert boot_instances(fleet, OP, clock.now()) == 1
    assert spares(fleet)[0].ready_at == clock.now()
    assert boot_instances(fleet, OP, clock.now()) == 0


def test_the_job_changes_nothing_when_every_size_has_its_spares(
    fleet: Fleet, clock: FakeClock
) -> None:
    serverless_tenant(fleet, spares={"medium": 2})
    make_spares_ready(fleet, clock)
    again = run_spares(fleet, clock.now())
    assert (again["placed"], again["released"]) == (0, 0)
    assert len(spares(fleet)) == 2


def test_a_taken_spare_is_replaced_at_the_next_tick(fleet: Fleet, clock: FakeClock) -> None:
    serverless_tenant(fleet, spares={"large": 2})
    make_spares_ready(fleet, clock)
    fleet.api.services.deploy(OP, service(fleet, "web"))
    assert len(spares(fleet)) == 1
    assert run_spares(fleet, clock.now())["placed"] == 1
    assert len(spares(fleet)) == 2


def test_lowering_spares_deletes_the_booting_ones_then_the_newest(
    fleet: Fleet, clock: FakeClock
) -> None:
    serverless_tenant(fleet, spares={"large": 2})
    make_spares_ready(fleet, clock)
    oldest = spares(fleet)[0].id
    fleet.api.settings.compute_set(OP, tenant_id="acme", spares={"large": 3})
    run_spares(fleet, clock.now())  # a third one, still booting
    fleet.api.settings.compute_set(OP, tenant_id="acme", spares={"large": 1})
    assert run_spares(fleet, clock.now())["released"] == 2
    assert [s.id for s in spares(fleet)] == [oldest]


def test_turning_a_size_off_removes_its_spares_and_gives_capacity_back(
    fleet: Fleet, clock: FakeClock
) -> None:
    serverless_tenant(fleet, spares={"small": 2, "large": 1})
    make_spares_ready(fleet, clock)
    web = service(fleet, "web")
    fleet.api.services.deploy(OP, web)  # takes the Large spare
    fleet.api.settings.compute_set(OP, tenant_id="acme", disable=["small"])
    counts = run_spares(fleet, clock.now())
    assert (counts["released"], counts["placed"]) == (2, 1)  # Small gone, Large replenished
    assert [s.size for s in spares(fleet)] == ["large"]
    served = fleet.api.services.show(OP, web)
    assert served["instanceState"] == "ready"
    assert allocated(fleet)["vcpu"] == 4  # two Large instances: the service's and the new spare


def test_without_a_serverless_pool_no_spares_are_kept(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme")
    fleet.api.settings.compute_set(OP, tenant_id="acme", spares={"large": 2})
    assert run_spares(fleet, fleet.now())["placed"] == 0
    assert spares(fleet) == []


def test_changing_the_serverless_pool_moves_the_spares(fleet: Fleet, clock: FakeClock) -> None:
    serverless_tenant(fleet, spares={"medium": 1})
    make_spares_ready(fleet, clock)
    ams = hosted_pool(fleet, "vps-ams")
    capacity_host(fleet, ams["id"], "ams-01")
    fleet.api.settings.compute_set(OP, tenant_id="acme", serverless_pool="vps-ams")
    counts = run_spares(fleet, clock.now())
    assert (counts["released"], counts["placed"]) == (1, 1)
    assert [s.pool_id for s in spares(fleet)] == [ams["id"]]


def test_a_spare_no_host_fits_stays_pending_with_its_reason_and_counts_as_kept(
    fleet: Fleet,
) -> None:
    serverless_tenant(fleet, spares={"large": 2}, vcpu=3)
    counts = run_spares(fleet, fleet.now())
    assert (counts["placed"], counts["unschedulable"]) == (1, 1)
    pending = next(s for s in spares(fleet) if s.node_id is None)
    assert pending.state == "pending"
    assert [c["type"] for c in pending.conditions] == ["Unschedulable"]
    assert run_spares(fleet, fleet.now())["placed"] == 0
    assert len(spares(fleet)) == 2


def test_a_spare_over_quota_is_not_placed_and_the_rest_goes_on(fleet: Fleet) -> None:
    pool = serverless_tenant(fleet)
    with fleet.write() as session:
        session.add(Quota(tenant_id="acme", pool_id=pool["id"], resource="vcpu", limit=3))
    fleet.api.settings.compute_set(OP, tenant_id="acme", spares={"large": 2, "small": 1})
    counts = run_spares(fleet, fleet.now())
    assert (counts["placed"], counts["quotaExceeded"]) == (2, 1)
    assert sorted(s.size or "" for s in spares(fleet)) == ["large", "small"]


# -- deploys take a spare at once ---------------------------------------------------------


def test_deploy_takes_a_ready_spare_at_once(fleet: Fleet, clock: FakeClock) -> None:
    serverless_tenant(fleet, spares={"large": 1})
    make_spares_ready(fleet, clock)
    spare = spares(fleet)[0].id
    body = fleet.api.services.deploy(OP, service(fleet, "web"))
    assert (body["status"], body["instanceId"], body["instanceState"]) == (
        "deployed", spare, "ready",
    )  # fmt: skip
    taken = instance(fleet, spare)
    assert (taken.purpose, taken.size) == ("service", "large")
    assert fleet.api.services.deploy(OP, body["id"])["instanceId"] == spare  # deployed already


def test_with_two_large_spares_two_deploys_at_once_succeed_and_the_third_gets_no_capacity(
    any_fleet: Fleet, clock: FakeClock
) -> None:
    fleet = any_fleet
    serverless_tenant(fleet, spares={"large": 2})
    make_spares_ready(fleet, clock)
    ids = [service(fleet, f"web-{i}") for i in range(3)]
    barrier = threading.Barrier(2)
    results: dict[str, Any] = {}

    def deploy(service_id: str) -> None:
        barrier.wait()
        try:
            results[service_id] = fleet.api.services.deploy(OP, service_id)
        except Exception as error:  # noqa: BLE001 - the test reports whatever went wrong
            results[service_id] = error

    threads = [threading.Thread(target=deploy, args=(i,)) for i in ids[:2]]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert [results[i]["status"] for i in ids[:2]] == ["deployed", "deployed"]
    assert results[ids[0]]["instanceId"] != results[ids[1]]["instanceId"]

    with pytest.raises(NoCapacityError) as refused:
        fleet.api.services.deploy(OP, ids[2])
    error = refused.value
    assert (error.code, error.http_status, error.instance_size) == ("NO_CAPACITY", 503, "large")
    assert error.retry_after_seconds is not None and error.retry_after_seconds > 0
    assert error.to_json()["error"]["details"] | {"retry_after": 0} == {
        "reason": "fleet_no_capacity", "instance_size": "large", "retry_after": 0,
    }  # fmt: skip
    assert "No free instance of size Large" in error.message
    assert "ask your admin to add capacity" in error.message
    assert fleet.api.services.show(OP, ids[2])["deployed"] is False

    make_spares_ready(fleet, clock)  # the spares job, then the boot delay
    assert fleet.api.services.deploy(OP, ids[2])["status"] == "deployed"


def test_retry_after_is_the_next_spares_tick_plus_the_boot_jittered_upwards(
    fleet: Fleet, clock: FakeClock
) -> None:
    serverless_tenant(fleet, spares={"large": 1})
    make_spares_ready(fleet, clock)  # the job looked at 10:00:00; now is 10:00:20
    fleet.api.services.deploy(OP, service(fleet, "a"))
    waits = set()
    for name in ("b", "c", "d", "e"):
        with pytest.raises(NoCapacityError) as refused:
            fleet.api.services.deploy(OP, service(fleet, name))
        waits.add(refused.value.retry_after_seconds)
    # 10 s to the next tick + 20 s of boot = 30 s, jittered up by at most 20 %
    assert all(w is not None and 30 <= w <= 36 for w in waits)


def test_retry_after_is_the_spares_interval_when_no_replacement_is_coming(fleet: Fleet) -> None:
    serverless_tenant(fleet)  # 0 spares for every size
    with pytest.raises(NoCapacityError) as refused:
        fleet.api.services.deploy(OP, service(fleet, "web"))
    interval = fleet.settings.job_intervals.get("spares", 30.0)
    assert refused.value.retry_after_seconds == retry_after_without_spares(interval)
    assert refused.value.details["retry_after"] == refused.value.retry_after_seconds
    assert refused.value.instance_size == "large"


def test_managed_hosting_takes_no_instance(fleet: Fleet) -> None:
    serverless_tenant(fleet)
    body = fleet.api.services.deploy(OP, service(fleet, "m", hosting="managed"))
    assert (body["status"], body["instanceId"]) == ("deployed", None)


def test_undeploy_releases_the_instance_and_its_capacity(fleet: Fleet, clock: FakeClock) -> None:
    serverless_tenant(fleet, spares={"large": 1})
    make_spares_ready(fleet, clock)
    web = service(fleet, "web")
    taken = fleet.api.services.deploy(OP, web)["instanceId"]
    body = fleet.api.services.undeploy(OP, web)
    assert (body["status"], body["instanceId"]) == ("undeployed", None)
    assert instance(fleet, taken).state == "deleted"
    assert allocated(fleet)["vcpu"] == 0


def test_a_legacy_service_deploys_on_large(fleet: Fleet, clock: FakeClock) -> None:
    serverless_tenant(fleet, spares={"large": 1})
    make_spares_ready(fleet, clock)
    old = legacy_service(fleet, "acme", "prod", "old", deployed=False)
    body = fleet.api.services.deploy(OP, old)
    assert (body["legacy"], body["effectiveSize"], body["memoryGiB"]) == (True, "large", 8)


def test_deploying_on_a_turned_off_size_is_refused(fleet: Fleet) -> None:
    serverless_tenant(fleet)
    web = service(fleet, "web", size="small")
    fleet.api.settings.compute_set(OP, tenant_id="acme", disable=["small"])
    with pytest.raises(InvalidInputError, match="Size Small is turned off"):
        fleet.api.services.deploy(OP, web)


def test_another_tenant_does_not_see_the_service(fleet: Fleet) -> None:
    serverless_tenant(fleet)
    web = service(fleet, "web")
    fleet.api.tenants.create(OP, "globex")
    outsider = token(fleet, "globex", "gus")
    with pytest.raises(NotFoundError):
        fleet.api.services.deploy(outsider, web)
    assert fleet.api.services.list(outsider)["items"] == []


def test_a_second_service_with_the_same_name_in_a_workspace_is_a_conflict(fleet: Fleet) -> None:
    serverless_tenant(fleet)
    service(fleet, "web")
    with pytest.raises(ConflictError):
        service(fleet, "web")
    service(fleet, "web", workspace="dev")


# -- moving sizes --------------------------------------------------------------------------


def test_moving_a_deployed_service_takes_a_spare_of_the_new_size(
    fleet: Fleet, clock: FakeClock
) -> None:
    serverless_tenant(fleet, spares={"large": 1, "xlarge": 1})
    make_spares_ready(fleet, clock)
    web = service(fleet, "web")
    before = fleet.api.services.deploy(OP, web)["instanceId"]
    body = fleet.api.services.set_size(OP, web, "xlarge")
    assert (body["size"], body["memoryGiB"], body["instanceState"]) == ("xlarge", 16, "ready")
    assert body["message"] == "Service web runs on Extra large (4 vCPU, 16 GiB memory)."
    assert instance(fleet, before).state == "deleted"


def test_moving_without_a_free_instance_of_the_new_size_changes_nothing(
    fleet: Fleet, clock: FakeClock
) -> None:
    serverless_tenant(fleet, spares={"large": 1})
    make_spares_ready(fleet, clock)
    web = service(fleet, "web")
    before = fleet.api.services.deploy(OP, web)
    with pytest.raises(NoCapacityError) as refused:
        fleet.api.services.set_size(OP, web, "medium")
    assert refused.value.instance_size == "medium"
    assert fleet.api.services.show(OP, web) == before


def test_moving_a_service_from_before_sizes_to_medium_says_its_memory_drops(
    fleet: Fleet,
) -> None:
    serverless_tenant(fleet)
    old = legacy_service(fleet, "acme", "prod", "old", deployed=False)
    body = fleet.api.services.set_size(OP, old, "medium")
    assert body["notices"] == [
        "Services deployed before instance sizes existed ran with 8 GiB memory; "
        "on Medium its memory drops to 4 GiB. Choose Large to keep 8 GiB."
    ]
    assert fleet.api.services.set_size(OP, old, "large")["notices"] == []


def test_moving_an_environment_moves_its_deployed_services(fleet: Fleet, clock: FakeClock) -> None:
    serverless_tenant(fleet, spares={"small": 1, "medium": 1})
    make_spares_ready(fleet, clock)
    env = fleet.api.environments.create(OP, tenant_id="acme", name="staging", size="small")
    web = service(fleet, "web", size=None, environment="staging")
    fleet.api.services.deploy(OP, web)
    moved = fleet.api.environments.update(OP, env["id"], size="medium")
    assert (moved["size"], moved["services"]) == ("medium", 1)
    assert fleet.api.services.show(OP, web)["effectiveSize"] == "medium"
    with pytest.raises(NoCapacityError):  # no Large spare: nothing moves
        fleet.api.environments.update(OP, env["id"], size="large")
    assert fleet.api.environments.show(OP, env["id"])["size"] == "medium"
    with pytest.raises(ConflictError, match="web"):
        fleet.api.environments.delete(OP, env["id"])


def test_undeploying_an_index_does_not_free_its_size_resetting_it_does(fleet: Fleet) -> None:
    serverless_tenant(fleet)
    index = fleet.api.indexes.create(
        OP, tenant_id="acme", workspace="search", name="docs", pod_size="xlarge", deployed=True
    )
    fleet.api.indexes.update(OP, index["id"], deployed=False)
    with pytest.raises(SizeInUseError, match="index docs"):
        fleet.api.settings.compute_set(OP, tenant_id="acme", disable=["xlarge"])
    assert fleet.api.indexes.update(OP, index["id"], default_pod_size=True)["podSize"] is None
    fleet.api.settings.compute_set(OP, tenant_id="acme", disable=["xlarge"])


# -- a streaming run waits ----------------------------------------------------------------


def stream_with_agent(fleet: Fleet, clock: FakeClock, service_id: str) -> list[dict[str, Any]]:
    """Consume a streaming deploy, letting the simulated agent look after every step."""
    events = []
    for event in fleet.api.services.deploy_stream(OP, service_id, poll_seconds=5):
        events.append(event)
        boot_instances(fleet, OP, clock.now())
    return events


def test_a_streaming_run_starts_an_instance_and_waits_until_it_is_ready(
    fleet: Fleet, clock: FakeClock
) -> None:
    serverless_tenant(fleet)  # no spares at all: the first Large service starts one from scratch
    web = service(fleet, "web")
    events = stream_with_agent(fleet, clock, web)
    phases = [e["phase"] for e in events]
    assert phases == ["no-capacity", "starting", *["waiting"] * 4, "ready"]
    assert events[0]["instanceSize"] == "large"
    assert events[1]["service"]["status"] == "starting"
    # booted 20 s after placement; the agent said so then, and the next poll saw it
    assert [e["waitedSeconds"] for e in events[2:]] == [5, 10, 15, 20, 25]
    done = events[-1]["service"]
    assert (done["status"], done["instanceState"]) == ("deployed", "ready")
    assert instance(fleet, done["instanceId"]).purpose == "service"


def test_a_streaming_run_takes_a_spare_that_is_still_booting(
    fleet: Fleet, clock: FakeClock
) -> None:
    serverless_tenant(fleet, spares={"large": 1})
    run_spares(fleet, clock.now())
    booting = spares(fleet)[0].id
    clock.advance(15)
    events = stream_with_agent(fleet, clock, service(fleet, "web"))
    assert [e["phase"] for e in events] == ["no-capacity", "starting", "waiting", "ready"]
    assert events[-1]["service"]["instanceId"] == booting
    assert events[-1]["waitedSeconds"] == 10  # ready 20 s after its placement, not 20 s from now


def test_a_streaming_run_deploys_at_once_when_a_spare_is_free(
    fleet: Fleet, clock: FakeClock
) -> None:
    serverless_tenant(fleet, spares={"large": 1})
    make_spares_ready(fleet, clock)
    events = list(fleet.api.services.deploy_stream(OP, service(fleet, "web")))
    assert [e["phase"] for e in events] == ["deployed"]


def test_a_streaming_run_gives_up_after_its_timeout_and_the_instance_keeps_starting(
    fleet: Fleet,
) -> None:
    serverless_tenant(fleet)
    web = service(fleet, "web")
    with pytest.raises(NoCapacityError, match="keeps starting"):
        list(fleet.api.services.deploy_stream(OP, web, poll_seconds=5, timeout_seconds=10))
    assert fleet.api.services.show(OP, web)["status"] == "starting"


def test_a_streaming_run_needs_a_serverless_pool(fleet: Fleet) -> None:
    fleet.api.tenants.create(OP, "acme")
    web = service(fleet, "web")
    with pytest.raises(InvalidInputError, match="no serverless pool"):
        list(fleet.api.services.deploy_stream(OP, web))


def test_two_deploys_of_one_service_at_once_take_one_instance(
    any_fleet: Fleet, clock: FakeClock
) -> None:
    fleet = any_fleet
    serverless_tenant(fleet, spares={"large": 2})
    make_spares_ready(fleet, clock)
    web = service(fleet, "web")
    barrier = threading.Barrier(2)
    results: list[Any] = []

    def deploy() -> None:
        barrier.wait()
        results.append(fleet.api.services.deploy(OP, web)["instanceId"])

    threads = [threading.Thread(target=deploy) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert len(results) == 2 and results[0] == results[1]
    assert len(spares(fleet)) == 1


def test_a_save_and_a_deploy_at_once_never_both_win(any_fleet: Fleet, clock: FakeClock) -> None:
    fleet = any_fleet
    serverless_tenant(fleet, spares={"xlarge": 1})
    make_spares_ready(fleet, clock)
    web = service(fleet, "web", size="xlarge")
    barrier = threading.Barrier(2)
    outcomes: dict[str, Any] = {}

    def attempt(name: str, call: Any) -> None:
        barrier.wait()
        try:
            outcomes[name] = call()
        except Exception as error:  # noqa: BLE001 - the loser's error is the point
            outcomes[name] = error

    threads = [
        threading.Thread(
            target=attempt, args=("deploy", lambda: fleet.api.services.deploy(OP, web))
        ),
        threading.Thread(
            target=attempt,
            args=(
                "save",
                lambda: fleet.api.settings.compute_set(OP, tenant_id="acme", disable=["xlarge"]),
            ),
        ),  # fmt: skip
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    deployed = isinstance(outcomes["deploy"], dict)
    saved = isinstance(outcomes["save"], dict)
    assert deployed != saved, outcomes
    loser = outcomes["save"] if deployed else outcomes["deploy"]
    assert isinstance(loser, SizeInUseError if deployed else InvalidInputError)


def test_moving_each_user_to_another_size_frees_the_size(fleet: Fleet, clock: FakeClock) -> None:
    serverless_tenant(fleet, spares={"large": 1, "medium": 1})
    make_spares_ready(fleet, clock)
    web = service(fleet, "web")
    fleet.api.services.deploy(OP, web)
    env = fleet.api.environments.create(OP, tenant_id="acme", name="qa", size="large")
    index = fleet.api.indexes.create(
        OP, tenant_id="acme", workspace="search", name="docs", pod_size="large"
    )
    with pytest.raises(SizeInUseError) as refused:
        fleet.api.settings.compute_set(OP, tenant_id="acme", disable=["large"])
    assert [u["kind"] for u in refused.value.details["sizes"][0]["users"]] == [
        "service", "environment", "index",
    ]  # fmt: skip
    fleet.api.services.set_size(OP, web, "medium")
    fleet.api.environments.update(OP, env["id"], size="small")
    fleet.api.indexes.update(OP, index["id"], pod_size="xlarge")
    saved = fleet.api.settings.compute_set(OP, tenant_id="acme", disable=["large"])
    assert saved["sizes"]["large"]["enabled"] is False

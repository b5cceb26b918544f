"""vps.usage windows in SQL: the documents' meters per subject, hand-computed cases, and the domain arithmetic."""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete

from bcfleet.clock import FakeClock
from bcfleet.fleet import Fleet
from bcfleet.store.models import Allocation, Instance
from bcfleet.store.models.jobs import JobState
from bcfleet.store.models.usage import UsageWindow
from tests.support import metering as mb
from tests.support.fleet import T0


def at(minutes: float, seconds: float = 0) -> datetime:
    return T0 + timedelta(minutes=minutes, seconds=seconds)


@pytest.fixture
def gpu_pool(fleet: Fleet) -> tuple[str, str]:
    """A vps-host pool with gpuModel L40S, one host, tenant acme, and the standard meters."""
    mb.tenant(fleet, "acme")
    pool = mb.pool(fleet, gpu_model="L40S")
    mb.standard_meters(fleet)
    return pool, mb.node(fleet, pool)


def test_placed_10_02_30_deleted_10_11_bills_2_5_plus_5_plus_1_minutes(
    fleet: Fleet, gpu_pool: tuple[str, str]
) -> None:
    pool, node = gpu_pool
    placed = mb.instance(fleet, pool, node, start=at(2, 30), end=at(11), vcpu=4, memory_gib=8)
    mb.meter_until(fleet, at(20))
    vcpu = [(r[2], r[3]) for r in mb.usage_rows(fleet) if r[1] == "vps.vcpu.hours"]
    assert vcpu == [
        (at(0), Decimal("0.166667")),  # 4 vCPU × 2.5 min = 1/6 h
        (at(5), Decimal("0.333333")),  # 4 × 5 min = 1/3
        (at(10), Decimal("0.066667")),  # 4 × 1 min = 1/15
    ]
    memory = [r[3] for r in mb.usage_rows(fleet) if r[1] == "vps.memory.gib.hours"]
    assert memory == [Decimal("0.333333"), Decimal("0.666667"), Decimal("0.133333")]
    assert sum(memory) == Decimal("1.133333")  # 8 GiB × 8.5 min, rounded once
    assert mb.usage_rows(fleet) == mb.expected_rows([placed], at(20))


def test_a_running_instance_is_metered_up_to_the_last_closed_window(
    fleet: Fleet, gpu_pool: tuple[str, str]
) -> None:
    pool, node = gpu_pool
    placed = mb.instance(fleet, pool, node, start=at(1), vcpu=2, memory_gib=4)
    counts = mb.meter_until(fleet, at(17))  # 10:15–10:20 is still open
    assert counts["windows"] == 3
    starts = sorted({r[2] for r in mb.usage_rows(fleet)})
    assert starts == [at(0), at(5), at(10)]
    assert mb.usage_rows(fleet) == mb.expected_rows([placed], at(17))


def test_a_window_is_metered_only_once_it_has_settled(
    fleet: Fleet, gpu_pool: tuple[str, str]
) -> None:
    from bcfleet.jobs.vps_usage import run_vps_usage

    pool, node = gpu_pool
    mb.instance(fleet, pool, node, start=at(1))
    run_vps_usage(fleet, at(5, 10))  # 10:00–10:05 closed 10 s ago: a placement may still commit
    assert mb.usage_rows(fleet) == []
    run_vps_usage(fleet, at(5, 30))
    assert {r[2] for r in mb.usage_rows(fleet)} == {at(0)}


def test_gpu_instance_bills_its_gpus_on_the_pools_model_lower_cased(
    fleet: Fleet, gpu_pool: tuple[str, str]
) -> None:
    pool, node = gpu_pool
    placed = mb.instance(fleet, pool, node, start=at(0), vcpu=8, memory_gib=32, gpus=2)
    mb.meter_until(fleet, at(60))
    rows = mb.usage_rows(fleet)
    assert {r[1] for r in rows} == {"vps.vcpu.hours", "vps.memory.gib.hours", "gpu.l40s.hours"}
    hourly = {m: sum(r[3] for r in rows if r[1] == m) for m in {r[1] for r in rows}}
    assert hourly == {
        "vps.vcpu.hours": Decimal(8),
        "vps.memory.gib.hours": Decimal(32),
        "gpu.l40s.hours": Decimal(2),
    }
    assert rows == mb.expected_rows([placed], at(60))


def test_spare_instances_bill_credits_only_one_per_instance_hour(
    fleet: Fleet, gpu_pool: tuple[str, str]
) -> None:
    pool, node = gpu_pool
    spare = mb.instance(fleet, pool, node, start=at(0), purpose="spare")
    taken = mb.instance(fleet, pool, node, start=at(0), purpose="service")
    mb.meter_until(fleet, at(120))
    rows = mb.usage_rows(fleet)
    assert {r[1] for r in rows} == {"credits"}
    assert sum(r[3] for r in rows if r[0] == spare.subject) == Decimal(2)
    assert sum(r[3] for r in rows if r[0] == taken.subject) == Decimal(2)


def test_provider_instances_are_not_metered(fleet: Fleet, gpu_pool: tuple[str, str]) -> None:
    mb.tenant(fleet, "acme")
    provider_pool = mb.pool(fleet, "hetzner-fsn", gpu_model=None, kind="provider")
    mb.provider_instance(fleet, provider_pool, start=at(0))
    counts = mb.meter_until(fleet, at(60))
    assert counts["written"] == 0
    assert mb.usage_rows(fleet) == []


@pytest.mark.parametrize(
    ("case", "expected_meter", "hours"),
    [
        pytest.param("regular", "gpu.l40s.hours", Decimal(4), id="regular-bills-from-activation"),
        pytest.param("spot", "gpu.l40s.spot.hours", Decimal(4), id="spot-bills-the-spot-meter"),
        pytest.param(
            "preempted",
            "gpu.l40s.spot.hours",
            Decimal(2),
            id="preempted-victim-bills-until-its-deadline",
        ),
        pytest.param("requeued", None, Decimal(0), id="requeued-victim-bills-nothing"),
        pytest.param("gang", "gpu.l40s.hours", Decimal(24), id="gang-bills-gpus-times-nodes"),
        pytest.param(
            "released-early", "gpu.l40s.hours", Decimal(1), id="cancelled-bills-until-release"
        ),
    ],
)
def test_reservations(
    fleet: Fleet,
    gpu_pool: tuple[str, str],
    case: str,
    expected_meter: str | None,
    hours: Decimal,
) -> None:
    pool, _ = gpu_pool
    fleet.api.meters.ensure(mb.OP, ["gpu.l40s.spot.hours"])
    kwargs: dict[str, object] = {"starts_at": at(0), "ends_at": at(60), "activated_at": at(0)}
    if case == "spot":
        kwargs["spot"] = True
    if case == "preempted":  # started before the deadline: cut back to end there
        kwargs.update(spot=True, ends_at=at(30), deadline=at(30), released_at=at(30, 4))
    if case == "requeued":  # starts after the deadline: bookings released, back to pending
        kwargs.update(spot=True, activated_at=None, state="pending", starts_at=at(10))
    if case == "gang":
        kwargs.update(gpus=3, nodes=4, ends_at=at(120))
    if case == "released-early":
        kwargs.update(released_at=at(15))
    placed = mb.reservation(fleet, pool, gpus=kwargs.pop("gpus", 4), **kwargs)  # type: ignore[arg-type]
    mb.meter_until(fleet, at(180))
    rows = mb.usage_rows(fleet)
    assert {r[1] for r in rows} == ({expected_meter} if expected_meter else set())
    assert sum((r[3] for r in rows), Decimal(0)) == hours
    assert rows == mb.expected_rows([placed], at(180))


def test_a_preempting_reservation_bills_its_regular_meter_from_activation(
    fleet: Fleet, gpu_pool: tuple[str, str]
) -> None:
    """Document 003: a preempt followed by a re-place bills each hour once."""
    pool, _ = gpu_pool
    fleet.api.meters.ensure(mb.OP, ["gpu.l40s.spot.hours"])
    victim = mb.reservation(
        fleet,
        pool,
        spot=True,
        starts_at=at(0),
        ends_at=at(32),
        deadline=at(32),
        activated_at=at(0),
        released_at=at(32),
    )
    preemptor = mb.reservation(fleet, pool, starts_at=at(32), ends_at=at(92), activated_at=at(32))
    mb.meter_until(fleet, at(120))
    rows = mb.usage_rows(fleet)
    spot = sum(r[3] for r in rows if r[0] == victim.subject)
    regular = sum(r[3] for r in rows if r[0] == preemptor.subject)
    assert (spot, regular) == (Decimal("0.533333"), Decimal(1))
    shared = [r for r in rows if r[2] == at(30)]
    assert sorted(r[3] for r in shared) == [Decimal("0.033333"), Decimal("0.050000")]


@pytest.mark.parametrize(
    "start",
    [
        pytest.param(at(0, 24.9995), id="half-a-millisecond-before-a-second"),
        pytest.param(at(4, 59.999999), id="last-microsecond-of-a-window"),
        pytest.param(at(5), id="on-a-boundary"),
    ],
)
def test_sub_millisecond_times_are_exact_on_sqlite_and_postgresql(
    any_fleet: Fleet, start: datetime
) -> None:
    mb.tenant(any_fleet, "acme")
    pool = mb.pool(any_fleet)
    mb.standard_meters(any_fleet)
    node = mb.node(any_fleet, pool)
    end = at(17, 0.000001)
    placed = mb.instance(any_fleet, pool, node, start=start, end=end, vcpu=3, gpus=1)
    mb.meter_until(any_fleet, at(30))
    assert mb.usage_rows(any_fleet) == mb.expected_rows([placed], at(30))


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    start_us=st.integers(min_value=0, max_value=3600 * 10**6),
    length_us=st.one_of(st.none(), st.integers(min_value=1, max_value=2 * 3600 * 10**6)),
    vcpu=st.integers(min_value=1, max_value=96),
    memory=st.integers(min_value=1, max_value=768),
    gpus=st.integers(min_value=0, max_value=8),
    spare=st.booleans(),
)
def test_sql_windows_equal_the_domain_arithmetic(
    fleet: Fleet,
    gpu_pool: tuple[str, str],
    start_us: int,
    length_us: int | None,
    vcpu: int,
    memory: int,
    gpus: int,
    spare: bool,
) -> None:
    pool, node = gpu_pool
    with fleet.write() as session:
        for model in (UsageWindow, Instance, Allocation, JobState):
            session.execute(delete(model))
    start = T0 + timedelta(microseconds=start_us)
    end = None if length_us is None else start + timedelta(microseconds=length_us)
    placed = mb.instance(
        fleet,
        pool,
        node,
        start=start,
        end=end,
        vcpu=vcpu,
        memory_gib=memory,
        gpus=gpus,
        purpose="spare" if spare else "tenant",
    )
    until = T0 + timedelta(hours=3, minutes=10)
    mb.meter_until(fleet, until)
    assert mb.usage_rows(fleet) == mb.expected_rows([placed], until)


def test_an_instance_placed_and_deleted_through_the_api_is_metered_from_placement_to_release(
    fleet: Fleet, clock: FakeClock
) -> None:
    from tests.support.capacity import create, pool_with_hosts, small_flavor

    pool = pool_with_hosts(fleet, gpus=1)
    small_flavor(fleet, pool, "gpu1", vcpu=4, memory_gib=8, disk_gib=40, gpus=1)
    fleet.api.usage.setup_meters(mb.OP)
    clock.set(at(2, 30))
    instance = create(fleet, pool, "gpu1")
    clock.set(at(11))
    fleet.api.instances.delete(mb.OP, instance["id"], tenant_id="acme")
    mb.meter_until(fleet, at(20))
    rows = mb.usage_rows(fleet)
    assert [(r[1], r[2], r[3]) for r in rows if r[1] == "gpu.l40s.hours"] == [
        ("gpu.l40s.hours", at(0), Decimal("0.041667")),  # 1 GPU × 2.5 min
        ("gpu.l40s.hours", at(5), Decimal("0.083333")),  # × 5 min
        ("gpu.l40s.hours", at(10), Decimal("0.016667")),  # × 1 min
    ]
    assert sum(r[3] for r in rows if r[1] == "vps.vcpu.hours") == Decimal("0.566667")  # 4 × 8.5 min


def test_spares_kept_by_the_spares_job_bill_credits_from_placement(
    fleet: Fleet, clock: FakeClock
) -> None:
    from tests.support.compute import make_spares_ready, serverless_tenant

    serverless_tenant(fleet, spares={"large": 2})
    fleet.api.usage.setup_meters(mb.OP)
    make_spares_ready(fleet, clock)
    mb.meter_until(fleet, at(60))
    rows = mb.usage_rows(fleet)
    assert {r[1] for r in rows} == {"credits"}
    per_spare = {s: sum(r[3] for r in rows if r[0] == s) for s in {r[0] for r in rows}}
    assert list(per_spare.values()) == [Decimal(1), Decimal(1)]  # 2 spares × 1 h × 1 credit


def test_document_003_each_side_pays_for_what_it_held(fleet: Fleet, clock: FakeClock) -> None:
    """Through the reservations API and the lifecycle job: the spot victim bills its spot meter
    until the deadline, the preemptor its regular meter from activation, a requeued victim nothing."""
    from bcfleet.jobs.reservations import run_lifecycle
    from tests.support.reservations import get, gpu_pool, reserve

    pool = gpu_pool(fleet)  # one node, 4 L40S
    fleet.api.usage.setup_meters(mb.OP)
    fleet.api.meters.create(mb.OP, "gpu.l40s.spot.hours")
    spot = reserve(fleet, pool, "beta", spot=True)
    run_lifecycle(fleet, fleet.now())
    requeued = reserve(fleet, pool, "beta", spot=True, start=at(60).isoformat())
    regular = reserve(fleet, pool, "acme")  # preempts: the deadline is now + 2 minutes
    assert get(fleet, requeued)["state"] == "pending"
    for _ in range(20):  # the lifecycle ticks every 10 s for 200 s
        clock.advance(seconds=10)
        run_lifecycle(fleet, fleet.now())
    assert get(fleet, spot)["state"] == "released"
    mb.meter_until(fleet, at(60))
    rows = mb.usage_rows(fleet)
    spent = {s: (sorted({r[1] for r in rows if r[0] == s}), sum(r[3] for r in rows if r[0] == s))
             for s in {r[0] for r in rows}}  # fmt: skip
    assert spent == {
        spot["id"]: (["gpu.l40s.spot.hours"], Decimal("0.133333")),  # 4 GPUs × 2 min
        regular["id"]: (["gpu.l40s.hours"], Decimal("3.866667")),  # 4 GPUs × 58 min
    }
    assert sum(r[3] for r in rows) == Decimal(4)  # one hour of 4 GPUs, billed once

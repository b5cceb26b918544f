"""Document 003 end to end with its numbers: a regular 4-GPU request preempts a 4-GPU spot reservation."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bcfleet.clock import format_time
from bcfleet.fleet import Fleet
from bcfleet.jobs.reservations import run_lifecycle, run_retry
from tests.support.builders import OP
from tests.support.capacity import invariants_ok
from tests.support.fleet import T0
from tests.support.reservations import events, get, gpu_pool, quota_used, reserve

TWO_MINUTES = timedelta(minutes=2)


def active_spot(fleet: Fleet, pool: dict[str, object], tenant: str = "acme") -> dict[str, object]:
    spot = reserve(fleet, pool, tenant, spot=True)
    run_lifecycle(fleet, fleet.now())
    assert get(fleet, spot)["state"] == "active"
    return spot


def test_started_victim_is_cut_back_to_the_deadline(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet)  # one node, 4 GPUs
    spot = active_spot(any_fleet, pool)
    regular = reserve(any_fleet, pool)
    deadline = format_time(T0 + TWO_MINUTES)
    assert regular["state"] == "placed"
    assert regular["during"] == {
        "start": deadline,
        "end": format_time(T0 + TWO_MINUTES + timedelta(hours=12)),
    }
    victim = get(any_fleet, spot)
    assert victim["state"] == "active" and victim["during"]["end"] == deadline
    [preempted] = [c for c in victim["conditions"] if c["type"] == "Preempted"]
    assert preempted["reason"] == "SpotPreempted"
    assert preempted["message"] == f"preempted by {regular['id']}"  # same tenant: named
    [event] = events(any_fleet, "acme", "reservation.preempting")
    assert event["data"]["at"] == deadline and event["data"]["by"] == regular["id"]
    assert event["subjectId"] == spot["id"]
    invariants_ok(any_fleet)


def test_cut_back_victim_is_released_at_the_deadline_and_refunded(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet)
    spot = active_spot(any_fleet, pool, "beta")
    regular = reserve(any_fleet, pool, "acme")
    assert quota_used(any_fleet, "beta", pool) == 4
    any_fleet.clock.advance(seconds=60)  # type: ignore[attr-defined]
    run_lifecycle(any_fleet, any_fleet.now())
    assert get(any_fleet, spot)["state"] == "active"  # keeps running until the deadline
    any_fleet.clock.advance(seconds=60)  # type: ignore[attr-defined]
    counts = run_lifecycle(any_fleet, any_fleet.now())
    assert counts == {"released": 1, "preemptedReleased": 1, "activated": 1, "failed": 0}
    victim = get(any_fleet, spot)
    assert victim["state"] == "released" and victim["releaseReason"] == "preempted"
    assert victim["during"]["end"] == format_time(T0 + TWO_MINUTES)  # billed until the deadline
    assert quota_used(any_fleet, "beta", pool) == 0
    [released] = events(any_fleet, "beta", "reservation.released")
    assert released["data"]["reason"] == "preempted" and "by" not in released["data"]
    assert get(any_fleet, regular)["state"] == "active"
    assert get(any_fleet, regular)["activatedAt"] == format_time(T0 + TWO_MINUTES)
    invariants_ok(any_fleet)


def test_victim_starting_after_the_deadline_is_requeued(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet)
    later = format_time(T0 + timedelta(hours=1))
    spot = reserve(any_fleet, pool, "acme", spot=True, start=later)
    assert spot["state"] == "placed"
    regular = reserve(any_fleet, pool, "acme")
    assert regular["state"] == "placed" and regular["during"]["start"] == format_time(
        T0 + TWO_MINUTES
    )
    victim = get(any_fleet, spot)
    assert victim["state"] == "pending" and victim["during"] is None
    [unschedulable] = victim["conditions"]
    assert (unschedulable["type"], unschedulable["reason"]) == ("Unschedulable", "SpotPreempted")
    assert quota_used(any_fleet, "acme", pool) == 8  # the requeued one keeps its charge
    [event] = events(any_fleet, "acme", "reservation.preempted")
    assert event["data"]["requeued"] is True and event["data"]["by"] == regular["id"]
    assert not events(any_fleet, "acme", "reservation.preempting")
    assert "activatedAt" not in victim  # never active: metering bills nothing for it
    invariants_ok(any_fleet)


def test_requeued_victim_retries_and_places_when_room_returns(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet)
    spot = reserve(any_fleet, pool, "acme", spot=True, start=format_time(T0 + timedelta(hours=1)))
    regular = reserve(any_fleet, pool, "acme")
    assert run_retry(any_fleet, any_fleet.now()) == {
        "tried": 1,
        "placed": 0,
        "stillPending": 1,
        "failed": 0,
    }
    any_fleet.api.reservations.cancel(OP, regular["id"])
    assert run_retry(any_fleet, any_fleet.now())["placed"] == 1
    assert get(any_fleet, spot)["state"] == "placed"
    invariants_ok(any_fleet)


def test_spot_never_preempts_and_goes_pending_with_the_counted_reason(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet, hosts=2)
    active_spot(any_fleet, pool)
    active_spot(any_fleet, pool)
    second = reserve(any_fleet, pool, spot=True)
    assert second["state"] == "pending"
    [condition] = second["conditions"]
    assert condition["reason"] == "NoNodeFits"
    assert condition["message"] == "no node fits (2 nodes): 2 × fits: 0 of 4 gpu free"
    assert not events(any_fleet, "acme", "reservation.preempting", "reservation.preempted")


def test_regular_reservations_are_never_preempted(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet)
    first = reserve(any_fleet, pool)
    second = reserve(any_fleet, pool)
    assert second["state"] == "pending"
    assert get(any_fleet, first)["conditions"] == []


def test_node_leases_never_preempt(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet)
    spot = active_spot(any_fleet, pool)
    lease = reserve(any_fleet, pool, binding="node")
    assert lease["state"] == "pending"
    assert lease["conditions"][0]["message"] == (
        "no node fits (1 node): 1 × fits: 0 of 4 gpu free, node lease needs all"
    )
    assert get(any_fleet, spot)["conditions"] == []


def test_a_retrying_regular_reservation_preempts(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet)
    first = reserve(any_fleet, pool)
    waiting = reserve(any_fleet, pool)
    assert waiting["state"] == "pending"
    any_fleet.api.reservations.cancel(OP, first["id"])
    spot = active_spot(any_fleet, pool, "beta")
    any_fleet.clock.advance(seconds=30)  # type: ignore[attr-defined]
    assert run_retry(any_fleet, any_fleet.now())["placed"] == 1
    placed = get(any_fleet, waiting)
    assert placed["during"]["start"] == format_time(any_fleet.now() + TWO_MINUTES)
    assert get(any_fleet, spot)["during"]["end"] == placed["during"]["start"]
    invariants_ok(any_fleet)


def test_spot_work_that_ends_before_the_deadline_is_not_preempted(fleet: Fleet) -> None:
    pool = gpu_pool(fleet)
    short = reserve(fleet, pool, spot=True, duration="1m")
    regular = reserve(fleet, pool)
    assert regular["during"]["start"] == format_time(T0 + TWO_MINUTES)
    assert get(fleet, short)["conditions"] == []
    assert not events(fleet, "acme", "reservation.preempting", "reservation.preempted")


@pytest.mark.parametrize("notice_ms", [300_000, 30_000])
def test_the_notice_is_a_setting(sqlite_url: str, notice_ms: int) -> None:
    from bcfleet.clock import FakeClock
    from tests.support.fleet import open_fleet

    fleet = open_fleet(sqlite_url, FakeClock(T0), spot_notice_ms=notice_ms)
    pool = gpu_pool(fleet)
    active_spot(fleet, pool)
    regular = reserve(fleet, pool)
    starts = format_time(T0 + timedelta(milliseconds=notice_ms))
    assert regular["during"]["start"] == starts
    preview = fleet.api.capacity.preview(OP, tenant_id="acme", pool_id=pool["id"], gpus=4,
                                         duration="1h", start=format_time(T0 + timedelta(days=2)))  # fmt: skip
    assert preview["fits"] is True
    fleet.close()


def test_the_notice_comes_from_the_environment() -> None:
    from bcfleet.settings import load_fleet_settings

    assert (
        load_fleet_settings(environ={"BCFLEET_SPOT_NOTICE_MS": "300000"}).spot_notice_ms == 300_000
    )
    assert load_fleet_settings(environ={}).spot_notice_ms == 120_000


def test_the_victims_node_sees_the_new_end(fleet: Fleet) -> None:
    pool = gpu_pool(fleet)
    spot = active_spot(fleet, pool)
    before = fleet.api.reservations.for_host(OP, "h1")
    assert [i["end"] for i in before["items"]] == [format_time(T0 + timedelta(hours=12))]
    regular = reserve(fleet, pool)
    after = fleet.api.reservations.for_host(OP, "h1")
    assert after["generation"] > before["generation"]
    ends = {i["reservationId"]: (i["start"], i["end"]) for i in after["items"]}
    assert ends[spot["id"]][1] == format_time(T0 + TWO_MINUTES)
    assert ends[regular["id"]][0] == format_time(T0 + TWO_MINUTES)
    assert len(after["items"][0]["gpus"]) == 4


def test_a_pool_lease_batch_preempts_for_its_regular_requests(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet, hosts=2)
    spot = active_spot(any_fleet, pool, "beta")
    batch = any_fleet.api.reservations.create_batch(
        OP, tenant_id="acme", pool_id=pool["id"],
        requests=[{"gpus": 4, "duration": "12h"}, {"gpus": 4, "duration": "12h"},
                  {"gpus": 2, "duration": "1h", "spot": True}],
    )  # fmt: skip
    first, second, spot_request = batch["items"]
    assert first["during"]["start"] == format_time(T0)  # fits on the free node
    assert second["during"]["start"] == format_time(T0 + TWO_MINUTES)  # preempts the spot work
    assert spot_request["state"] == "pending"  # spot never preempts
    assert get(any_fleet, spot)["during"]["end"] == format_time(T0 + TWO_MINUTES)
    invariants_ok(any_fleet)


def test_a_batch_is_all_or_nothing(fleet: Fleet) -> None:
    from bcfleet.errors import InvalidInputError

    pool = gpu_pool(fleet)
    with pytest.raises(InvalidInputError):
        fleet.api.reservations.create_batch(
            OP, tenant_id="acme", pool_id=pool["id"],
            requests=[{"gpus": 1, "duration": "1h"}, {"gpus": 1, "duration": "1h", "spot": True,
                                                      "binding": "node"}],
        )  # fmt: skip
    assert fleet.api.reservations.list(OP)["items"] == []

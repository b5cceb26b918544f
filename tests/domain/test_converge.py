"""The converge decider: what the host agent does to one guest's domain, desired spec × observed domain."""

from __future__ import annotations

from typing import Any

import pytest

from bcfleet.domain.converge import (
    Act,
    Action,
    Memo,
    Observed,
    Power,
    plan,
    plans,
    report_of,
    restart_backoff,
)

D = "digest-1"


def spec(state: str = "running", cpus: list[int] | None = None, cpuset: Any = (2, 3)) -> Any:
    return {
        "id": "ins_a",
        "state": state,
        "placement": {"cpus": cpus, "cpuset": list(cpuset), "mems": None},
    }


def acts(result: Any) -> list[str]:
    return [str(a.act) for a in result.actions]


RUNNING = Observed(Power.RUNNING, D, cpuset=(2, 3), memory_kib=1024)
OFF = Observed(Power.STOPPED, D)


@pytest.mark.parametrize(
    ("wanted", "observed", "memo", "now", "expected"),
    [
        pytest.param(spec(), None, Memo(), 0, ["define", "start"], id="new-guest-defined-and-started"),
        pytest.param(spec("stopped"), None, Memo(), 0, [], id="new-stopped-guest-left-undefined"),
        pytest.param(spec(), RUNNING, Memo(), 0, [], id="running-as-specified-untouched"),
        pytest.param(spec(), OFF, Memo(), 0, ["start"], id="defined-not-started-started-once"),
        pytest.param(spec(), Observed(Power.STOPPED, "old"), Memo(), 0, ["define", "start"],
                     id="changed-spec-redefined-before-its-start"),
        pytest.param(spec(), Observed(Power.RUNNING, "old", cpuset=(2, 3)), Memo(), 0, ["define"],
                     id="changed-spec-of-running-guest-redefined-for-next-start"),
        pytest.param(spec("stopped"), RUNNING, Memo(), 0, ["shutdown"], id="stop-asks-acpi-first"),
        pytest.param(spec("stopped"), RUNNING, Memo(shutdown_at=0, stopped=True), 29, [],
                     id="stop-waits-the-grace"),
        pytest.param(spec("stopped"), RUNNING, Memo(shutdown_at=0, stopped=True), 30, ["destroy"],
                     id="stop-destroys-after-the-grace"),
        pytest.param(spec("stopped"), OFF, Memo(), 0, [], id="stopped-guest-left-defined"),
        pytest.param(None, RUNNING, Memo(), 0, ["shutdown"], id="deleted-guest-asked-to-shut-down"),
        pytest.param(None, RUNNING, Memo(shutdown_at=0, stopped=True), 31, ["destroy", "undefine"],
                     id="deleted-guest-destroyed-after-grace-and-undefined"),
        pytest.param(None, OFF, Memo(), 0, ["undefine"], id="deleted-stopped-guest-undefined"),
        pytest.param(None, None, Memo(), 0, [], id="nothing-nowhere"),
        pytest.param(spec(), Observed(Power.RUNNING, D, cpuset=(2, 3, 4, 5)), Memo(), 0,
                     ["pin-cpus"], id="floating-guest-re-pinned-live"),
        pytest.param(spec(cpus=[2, 3]), Observed(Power.RUNNING, D, cpuset=(2, 3, 4, 5)), Memo(), 0,
                     [], id="pinned-guest-cpus-wait-for-the-next-start"),
    ],
)  # fmt: skip
def test_each_guest_is_brought_one_step_towards_its_spec(
    wanted: Any, observed: Observed | None, memo: Memo, now: float, expected: list[str]
) -> None:
    assert acts(plan(wanted, D, observed, memo, now)) == expected


def test_a_balloon_target_is_set_live_only_when_it_differs() -> None:
    assert plan(spec(), D, RUNNING, Memo(), 0, balloon_kib=512).actions == (
        Action(Act.SET_MEMORY, memory_kib=512),
    )
    assert plan(spec(), D, RUNNING, Memo(), 0, balloon_kib=1024).actions == ()
    assert plan(spec(), D, OFF, Memo(), 0, balloon_kib=512).actions == (Action(Act.START),)


def test_a_guest_that_crashed_is_started_again_with_a_growing_backoff_and_a_condition() -> None:
    crashed = Observed(Power.CRASHED, D, reason="crashed")
    first = plan(spec(), D, crashed, Memo(), 100)
    assert acts(first) == [] and "crashed" in first.condition
    assert first.memo.retry_at == 100 + restart_backoff(1)
    second = plan(spec(), D, crashed, first.memo, first.memo.retry_at)
    assert acts(second) == ["start"] and second.memo.failures == 2
    assert second.memo.retry_at == first.memo.retry_at + restart_backoff(2)
    assert acts(plan(spec(), D, crashed, second.memo, second.memo.retry_at - 1)) == []


def test_a_guest_destroyed_outside_bcfleet_gets_a_condition_but_one_it_stopped_does_not() -> None:
    destroyed = Observed(Power.STOPPED, D, reason="destroyed")
    assert "destroyed" in plan(spec(), D, destroyed, Memo(), 0).condition
    ours = plan(spec(), D, destroyed, Memo(stopped=True), 0)
    assert ours.condition == "" and acts(ours) == ["start"]


def test_a_start_forgets_an_earlier_shutdown_so_the_next_stop_gets_its_own_grace() -> None:
    started = plan(spec(), D, OFF, Memo(shutdown_at=0, stopped=True), 5)
    assert acts(started) == ["start"] and started.memo.shutdown_at is None
    assert acts(plan(None, D, RUNNING, started.memo, 6)) == ["shutdown"]


def test_running_clears_what_a_stop_left_so_a_later_crash_is_noticed() -> None:
    after = plan(spec(), D, RUNNING, Memo(stopped=True, failures=2, retry_at=10), 20).memo
    assert after.stopped is False and after.failures == 2
    assert plan(spec(), D, RUNNING, after, 10 + 300).memo == Memo()


@pytest.mark.parametrize(
    ("failures", "seconds"),
    [pytest.param(1, 5, id="first"), pytest.param(2, 10, id="doubles"),
     pytest.param(20, 300, id="capped")],
)  # fmt: skip
def test_the_restart_backoff(failures: int, seconds: float) -> None:
    assert restart_backoff(failures) == seconds


@pytest.mark.parametrize(
    ("observed", "reports"),
    [
        pytest.param(RUNNING, ("running", "ready"), id="running-is-ready"),
        pytest.param(OFF, ("stopped",), id="stopped"),
        pytest.param(None, ("stopped",), id="not-defined-is-stopped"),
        pytest.param(Observed(Power.CRASHED, D, reason="crashed"), ("crashed",), id="crashed"),
    ],
)
def test_what_the_agent_api_is_told(observed: Observed | None, reports: tuple[str, ...]) -> None:
    assert report_of(observed) == reports


def test_a_running_guest_whose_console_has_not_answered_is_running_but_not_ready() -> None:
    assert report_of(RUNNING, ready=False) == ("running",)


def test_plans_cover_every_spec_and_every_owned_domain_and_nothing_else() -> None:
    gone = {"ins_gone": OFF}
    result = plans([spec()], {"ins_a": D}, gone, {}, 0)
    assert {key: acts(p) for key, p in result.items()} == {
        "ins_a": ["define", "start"],
        "ins_gone": ["undefine"],
    }

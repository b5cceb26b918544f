"""What a host agent does to one guest's libvirt domain this round: desired spec × observed domain → actions.

The libvirt driver (bcfleet.agent.libvirt_driver) observes the domains it owns, asks plan()
for each instance id in turn, applies the actions in order and stops at the first libvirt
refuses. plan() is pure: the driver says what time it is and what it remembers of the guest
(Memo: when it asked for a shutdown, how often a start failed), and gets the memo back.

- no domain: define it from the rendered XML (then start it when it should run);
- the spec changed (its digest, bcfleet.domain.instance_spec.spec_digest, differs from the
  defined one): define it again; libvirt keeps a running guest as it is and uses the new
  definition at its next start (a resize, a pinned guest's CPUs);
- it should run and does not: start it, at once the first time, after a backoff when it
  crashed or was stopped outside bcfleet (a condition says so);
- it should stop, or no spec names it any more: ACPI shutdown, destroy after the grace
  period, and undefine once it is off when no spec names it;
- running: a floating guest's CPU set and the balloon's target are changed live.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from bcfleet.domain.states import AgentReport, InstanceState

SHUTDOWN_GRACE_SECONDS = 30.0
RESTART_BACKOFF_BASE_SECONDS = 5.0
RESTART_BACKOFF_CAP_SECONDS = 300.0


class Power(StrEnum):
    """A domain's power state as the driver reads it from libvirt."""

    RUNNING = "running"
    STOPPED = "stopped"
    CRASHED = "crashed"


class Act(StrEnum):
    """One libvirt call on one domain."""

    DEFINE = "define"
    START = "start"
    SHUTDOWN = "shutdown"
    DESTROY = "destroy"
    UNDEFINE = "undefine"
    SET_MEMORY = "set-memory"
    PIN_CPUS = "pin-cpus"


@dataclass(frozen=True)
class Action:
    act: Act
    cpuset: tuple[int, ...] = ()
    memory_kib: int = 0


@dataclass(frozen=True)
class Observed:
    """One owned domain as libvirt has it; cpuset and memory_kib only while it runs."""

    power: Power
    digest: str
    reason: str = ""  # why it is off, libvirt's word: "crashed", "destroyed", "shutdown", …
    cpuset: tuple[int, ...] = ()
    memory_kib: int = 0


@dataclass(frozen=True)
class Memo:
    """What the driver remembers of one guest between rounds (empty after a restart)."""

    shutdown_at: float | None = None
    stopped: bool = False  # bcfleet stopped it (or saw it stopped as asked)
    failures: int = 0
    retry_at: float = 0.0


@dataclass(frozen=True)
class Plan:
    actions: tuple[Action, ...]
    memo: Memo
    condition: str = ""
    reports: tuple[str, ...] = field(default=())


def restart_backoff(failures: int) -> float:
    """The wait before the n-th restart of a guest that stopped on its own: 5 s, 10 s, … 5 min."""
    wait = RESTART_BACKOFF_BASE_SECONDS * 2 ** max(failures - 1, 0)
    return float(min(RESTART_BACKOFF_CAP_SECONDS, wait))


def report_of(observed: Observed | None, *, ready: bool = True) -> tuple[str, ...]:
    """What the agent API is told of a domain: running (and ready: running, and its console
    answered when the agent watches for that), stopped, or crashed."""
    if observed is None or observed.power == Power.STOPPED:
        return (AgentReport.STOPPED,)
    if observed.power == Power.CRASHED:
        return (AgentReport.CRASHED,)
    return (AgentReport.RUNNING, AgentReport.READY) if ready else (AgentReport.RUNNING,)


def plan(
    spec: Mapping[str, Any] | None,
    digest: str,
    observed: Observed | None,
    memo: Memo,
    now: float,
    *,
    balloon_kib: int | None = None,
    grace: float = SHUTDOWN_GRACE_SECONDS,
) -> Plan:
    """The actions that bring one guest one step towards its spec (None: no spec names it).

    balloon_kib is the balloon decider's target for a running guest (None: leave it)."""
    if spec is None or spec.get("state", InstanceState.RUNNING) == InstanceState.STOPPED:
        return _stop(observed, memo, now, grace, delete=spec is None)
    actions: list[Action] = []
    if observed is None or observed.digest != digest:
        actions.append(Action(Act.DEFINE))
    if observed is not None and observed.power == Power.RUNNING:
        actions.extend(_live(spec, observed, balloon_kib))
        settled = now - memo.retry_at >= RESTART_BACKOFF_CAP_SECONDS
        return Plan(
            tuple(actions), Memo() if settled else replace(memo, shutdown_at=None, stopped=False)
        )
    return _start(actions, observed, memo, now)


def _start(actions: list[Action], observed: Observed | None, memo: Memo, now: float) -> Plan:
    outside = "" if observed is None or memo.stopped else observed.reason
    memo = replace(memo, shutdown_at=None)
    condition = f"the guest stopped outside bcfleet ({outside})" if outside else ""
    if outside and memo.failures == 0:
        memo = Memo(failures=1, retry_at=now + restart_backoff(1))
    if now < memo.retry_at:
        return Plan(tuple(actions), memo, condition)
    if outside:
        memo = replace(memo, failures=memo.failures + 1)
        memo = replace(memo, retry_at=now + restart_backoff(memo.failures))
    return Plan((*actions, Action(Act.START)), memo, condition)


def _stop(observed: Observed | None, memo: Memo, now: float, grace: float, delete: bool) -> Plan:
    if observed is None:
        return Plan((), Memo())
    if observed.power == Power.STOPPED or observed.power == Power.CRASHED:
        return Plan((Action(Act.UNDEFINE),) if delete else (), Memo(stopped=True))
    if memo.shutdown_at is None:
        return Plan((Action(Act.SHUTDOWN),), Memo(shutdown_at=now, stopped=True))
    if now - memo.shutdown_at >= grace:
        undefine = (Action(Act.UNDEFINE),) if delete else ()
        return Plan((Action(Act.DESTROY), *undefine), Memo(stopped=True))
    return Plan((), memo)


def _live(spec: Mapping[str, Any], observed: Observed, balloon_kib: int | None) -> list[Action]:
    actions = []
    placement = spec.get("placement") or {}
    cpuset = tuple(sorted(placement.get("cpuset") or ()))
    if placement.get("cpus") is None and cpuset and observed.cpuset != cpuset:
        actions.append(Action(Act.PIN_CPUS, cpuset=cpuset))
    if balloon_kib is not None and balloon_kib != observed.memory_kib:
        actions.append(Action(Act.SET_MEMORY, memory_kib=balloon_kib))
    return actions


def plans(
    specs: Sequence[Mapping[str, Any]],
    digests: Mapping[str, str],
    observed: Mapping[str, Observed],
    memos: Mapping[str, Memo],
    now: float,
    *,
    balloon_kib: Mapping[str, int] | None = None,
    grace: float = SHUTDOWN_GRACE_SECONDS,
) -> dict[str, Plan]:
    """plan() for every instance a spec names or an owned domain carries, by instance id."""
    wanted = {str(s["id"]): s for s in specs}
    targets = balloon_kib or {}
    return {
        key: plan(
            wanted.get(key),
            digests.get(key, ""),
            observed.get(key),
            memos.get(key, Memo()),
            now,
            balloon_kib=targets.get(key),
            grace=grace,
        )
        for key in sorted(set(wanted) | set(observed))
    }

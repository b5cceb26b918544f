"""The libvirt driver of `fleet agent run --hypervisor URI`: converges this host's owned domains to its specs.

Each round (and at once after a lifecycle event, bcfleet.agent.libvirt_events) it lists the
domains carrying bcfleet's metadata (bcfleet.agent.libvirt_domains), asks the pure decider
(bcfleet.domain.converge) what to do with each instance, and works on each alone: a call
libvirt refuses gives that instance a condition with libvirt's message and a backoff, and the
round goes on with the others. A lost connection (libvirtd restarted, unreachable) marks the
host degraded; the driver reconnects with a backoff and touches no domain meanwhile, so
running guests keep running. The connection opener is injected, so a test can hand the same
connection to a new driver (an agent restart) or fail opens on purpose.

Hooks for the memory deciders: `balloon` maps the running guests (spec, balloon target and
the domain's memory statistics) to new balloon targets in KiB; `admit` returns why a start
must be refused (huge pages the host cannot back), or None.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import libvirt

from bcfleet.agent import libvirt_domains as domains
from bcfleet.agent.libvirt_events import Watch, start_event_loop, unwatch, watch
from bcfleet.domain.converge import (
    Act,
    Memo,
    Observed,
    Plan,
    Power,
    plans,
    report_of,
    restart_backoff,
)
from bcfleet.domain.instance_spec import HostDomain, spec_digest
from bcfleet.domain.states import AgentReport

log = logging.getLogger("bcfleet.agent")
RECONNECT_BASE_SECONDS = 1.0
RECONNECT_CAP_SECONDS = 60.0
HOST = "host"


@dataclass(frozen=True)
class GuestMemory:
    """A running guest as the balloon decider sees it."""

    instance_id: str
    spec: Mapping[str, Any]
    balloon_kib: int
    stats: Mapping[str, int]


BalloonHook = Callable[[Sequence[GuestMemory]], Mapping[str, int]]
AdmitHook = Callable[[Mapping[str, Any]], str | None]


def _quiet(_ctx: Any, _error: Any) -> None:
    """libvirt prints every error on stderr by default; the driver reports its own."""


@dataclass
class _Link:
    """The connection, and how reconnecting has gone."""

    conn: libvirt.virConnect | None = None
    seen: Watch | None = None
    failures: int = 0
    retry_at: float = 0.0
    lost: str = ""


@dataclass
class LibvirtDriver:
    opener: Callable[[], libvirt.virConnect]
    grace: float = 30.0
    ready_line: str | None = None  # with host.console_dir: ready once the console logs it
    host: HostDomain = field(default_factory=HostDomain)
    balloon: BalloonHook | None = None
    admit: AdmitHook | None = None
    closes: bool = True  # close() closes the connection (not one a caller handed over)
    link: _Link = field(default_factory=_Link)
    memos: dict[str, Memo] = field(default_factory=dict)
    conditions: dict[str, str] = field(default_factory=dict)
    reported: dict[str, tuple[str, ...]] = field(default_factory=dict)
    memory_kib: dict[str, int] = field(default_factory=dict)  # running guests', last seen

    @classmethod
    def open(cls, uri: str, **options: Any) -> LibvirtDriver:
        """A driver on a libvirt URI; it connects in its first round (and again when lost)."""
        start_event_loop()
        return cls(opener=lambda: libvirt.open(uri), **options)

    @classmethod
    def on(cls, conn: libvirt.virConnect, **options: Any) -> LibvirtDriver:
        """A driver on an open connection (tests: a restarted agent on the same host)."""
        driver = cls(opener=lambda: conn, closes=False, **options)
        driver._attach(conn)
        return driver

    def _attach(self, conn: libvirt.virConnect) -> None:
        libvirt.registerErrorHandler(_quiet, None)
        self.link.conn, self.link.seen = conn, watch(conn)
        self.link.failures, self.link.lost = 0, ""
        self.conditions.pop(HOST, None)

    def _connected(self, now: float) -> libvirt.virConnect | None:
        if self.link.seen is not None and self.link.seen.lost.is_set():
            self._lose(now, "the connection was closed")
        if self.link.conn is not None:
            return self.link.conn
        if now < self.link.retry_at:
            return None
        try:
            self._attach(self.opener())
        except libvirt.libvirtError as exc:
            self._lose(now, str(exc))
        return self.link.conn

    def _lose(self, now: float, message: str) -> None:
        """The connection is gone: degraded until a reconnect, attempted after a backoff."""
        if self.link.conn is not None and self.link.seen is not None:
            unwatch(self.link.conn, self.link.seen)
        self.link.conn, self.link.seen = None, None
        self.link.failures += 1
        wait = min(RECONNECT_CAP_SECONDS, RECONNECT_BASE_SECONDS * 2 ** (self.link.failures - 1))
        self.link.retry_at = now + wait
        self.conditions[HOST] = f"libvirt unreachable, retrying in {wait:g} s: {message}"
        log.warning("host degraded: %s", self.conditions[HOST])

    def converge(self, specs: Sequence[Mapping[str, Any]], now: float) -> list[tuple[str, str]]:
        """One round: observe the owned domains, then bring each to its spec on its own."""
        conn = self._connected(now)
        if conn is None:
            return []
        try:
            mine = domains.owned(conn)
            observed = {key: domains.observe(owned) for key, owned in mine.items()}
        except libvirt.libvirtError as exc:
            self._lose(now, str(exc))
            return []
        wanted = {str(s["id"]): s for s in specs}
        digests = {key: spec_digest(spec) for key, spec in wanted.items()}
        targets = self._balloon_targets(mine, observed, wanted)
        changes: list[tuple[str, str]] = []
        after: dict[str, Observed | None] = dict(observed)  # each guest once worked on
        todo = plans(
            specs, digests, observed, self.memos, now, balloon_kib=targets, grace=self.grace
        )
        for key, step in todo.items():
            try:
                found = self._work(conn, key, step, wanted.get(key), mine.get(key))
            except libvirt.libvirtError as exc:
                if not _alive(conn):
                    self._lose(now, str(exc))
                    break
                self._refused(key, step, now, str(exc))
                found = _reread(mine.get(key))
            except ValueError as exc:  # a spec the renderer cannot map (a malformed PCI address)
                self._refused(key, step, now, str(exc))
                found = _reread(mine.get(key))
            if key in wanted:
                changes.extend(self._report(key, found))
            after[key] = found
        self.memory_kib = _running_memory(after, wanted)
        self._forget(set(wanted) | set(mine))
        return changes

    def _work(
        self,
        conn: libvirt.virConnect,
        key: str,
        step: Plan,
        spec: Mapping[str, Any] | None,
        mine: domains.Owned | None,
    ) -> Observed | None:
        """Apply one instance's plan in order; its observed state afterwards."""
        self.memos[key] = step.memo
        condition = step.condition
        for action in step.actions:
            if action.act == Act.START and spec is not None and self.admit is not None:
                refusal = self.admit(spec)
                if refusal:
                    condition = refusal
                    break
            mine = domains.apply(conn, action, spec, mine, self.host)
        self._condition(key, condition)
        if mine is None and spec is None:
            self.memos.pop(key, None)  # undefined: nothing left to remember
        return None if mine is None else domains.observe(mine)

    def _refused(self, key: str, step: Plan, now: float, message: str) -> None:
        """libvirt (or the renderer) refused: a condition with its message, and a backoff."""
        failures = step.memo.failures + 1
        retry_at = now + restart_backoff(failures)
        self.memos[key] = replace(step.memo, failures=failures, retry_at=retry_at)
        self._condition(key, f"refused: {message}")

    def _condition(self, key: str, message: str) -> None:
        if message:
            if self.conditions.get(key) != message:
                log.warning("%s: %s", key, message)
            self.conditions[key] = message
        else:
            self.conditions.pop(key, None)

    def _report(self, key: str, found: Observed | None) -> list[tuple[str, str]]:
        """The states of one guest that are new since the last report."""
        before = self.reported.get(key, ())
        states = report_of(found, ready=self._ready(key, found, before))
        self.reported[key] = states
        return [(key, state) for state in states if state not in before]

    def _ready(self, key: str, found: Observed | None, before: tuple[str, ...]) -> bool:
        """Running and, when the agent watches consoles for a ready line, the line was logged."""
        log = self.host.console_log(key)
        if self.ready_line is None or log is None or found is None:
            return True
        if found.power == Power.RUNNING and AgentReport.READY in before:
            return True  # ready until it stops (the log starts afresh at each start)
        return self.ready_line in _tail(Path(log))

    def _forget(self, live: set[str]) -> None:
        """Drop what is remembered of instances no spec and no domain names any more."""
        for table in (self.memos, self.reported):
            for key in set(table) - live:
                del table[key]
        for key in set(self.conditions) - live - {HOST}:
            del self.conditions[key]

    def _balloon_targets(
        self,
        mine: Mapping[str, domains.Owned],
        observed: Mapping[str, Observed],
        wanted: Mapping[str, Mapping[str, Any]],
    ) -> dict[str, int]:
        """The balloon decider's targets for the running guests (none without a decider)."""
        if self.balloon is None:
            return {}
        guests = []
        for key, seen in observed.items():
            if seen.power == Power.RUNNING and key in wanted:
                try:
                    raw = mine[key].domain.memoryStats()
                except libvirt.libvirtError:  # it stopped since it was observed: next round
                    continue
                stats = {k: int(v) for k, v in raw.items()}
                guests.append(GuestMemory(key, wanted[key], seen.memory_kib, stats))
        return dict(self.balloon(guests))

    def problems(self) -> dict[str, str]:
        return dict(self.conditions)

    def balloons(self) -> dict[str, int]:
        return {key: kib * 1024 for key, kib in self.memory_kib.items()}

    @property
    def degraded(self) -> bool:
        return HOST in self.conditions

    def pause(self, seconds: float, sleep: Callable[[float], None]) -> None:
        """Until the next round: `seconds`, or less when a lifecycle event arrives."""
        seen = self.link.seen
        if seen is None:
            sleep(seconds)
            return
        seen.wake.wait(seconds)
        seen.wake.clear()

    def close(self) -> None:
        """Stop watching the connection and close it (one this driver opened itself)."""
        conn, seen = self.link.conn, self.link.seen
        self.link.conn, self.link.seen = None, None
        if conn is not None and seen is not None:
            unwatch(conn, seen)
        if conn is not None and self.closes:
            with contextlib.suppress(libvirt.libvirtError):
                conn.close()


def _running_memory(
    seen: Mapping[str, Observed | None], wanted: Mapping[str, Any]
) -> dict[str, int]:
    """The memory (KiB) of each running guest that has a spec."""
    return {
        key: found.memory_kib
        for key, found in seen.items()
        if found is not None and found.power == Power.RUNNING and key in wanted
    }


def _tail(path: Path, size: int = 65536) -> str:
    """The end of a console log ("" before the guest wrote one)."""
    try:
        with path.open("rb") as log:
            log.seek(max(path.stat().st_size - size, 0))
            return log.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _alive(conn: libvirt.virConnect) -> bool:
    try:
        return bool(conn.isAlive())
    except libvirt.libvirtError:
        return False


def _reread(mine: domains.Owned | None) -> Observed | None:
    """The domain's state after a refused call (None when it is gone or was never defined)."""
    if mine is None:
        return None
    try:
        return domains.observe(mine)
    except libvirt.libvirtError:
        return None

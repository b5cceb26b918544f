"""A simulated hypervisor for `fleet agent run --simulate`: boots and stops guests after a delay.

apply() takes the specs the server wants and the time, and returns the state changes an
agent reports: a guest asked to run is "booting" for boot_seconds, then "running" and
"ready"; a guest asked to stop is "stopped"; a guest no spec names any more is removed.
It never reads the clock: the caller says what time it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bcfleet.domain.states import AgentReport, InstanceState


@dataclass
class Guest:
    instance_id: str
    state: str  # booting | running | stopped
    since: float


class SimulatedHypervisor:
    """The guests of one simulated host, keyed by instance id."""

    def __init__(self, boot_seconds: float) -> None:
        self.boot_seconds = boot_seconds
        self.guests: dict[str, Guest] = {}

    def apply(self, specs: Iterable[Mapping[str, Any]], now: float) -> list[tuple[str, str]]:
        """Move every guest one step towards its spec; returns (instance id, new state) pairs."""
        changes: list[tuple[str, str]] = []
        wanted = {str(s["id"]): str(s.get("state", InstanceState.RUNNING)) for s in specs}
        for instance_id in sorted(set(self.guests) - set(wanted)):
            del self.guests[instance_id]
        for instance_id, desired in sorted(wanted.items()):
            changes.extend(self._step(instance_id, desired, now))
        return changes

    def converge(self, specs: Sequence[Mapping[str, Any]], now: float) -> list[tuple[str, str]]:
        """The Hypervisor seam (bcfleet.agent.seam): apply()."""
        return self.apply(specs, now)

    def problems(self) -> dict[str, str]:
        return {}

    def balloons(self) -> dict[str, int]:
        return {}  # simulated guests have no balloon

    def pause(self, seconds: float, sleep: Callable[[float], None]) -> None:
        sleep(seconds)

    def close(self) -> None:
        pass

    def _step(self, instance_id: str, desired: str, now: float) -> list[tuple[str, str]]:
        guest = self.guests.get(instance_id)
        if desired == InstanceState.STOPPED:
            if guest is None or guest.state != AgentReport.STOPPED:
                self.guests[instance_id] = Guest(instance_id, AgentReport.STOPPED, now)
                return [(instance_id, AgentReport.STOPPED)]
            return []
        if guest is None or guest.state == AgentReport.STOPPED:
            self.guests[instance_id] = Guest(instance_id, "booting", now)
            guest = self.guests[instance_id]
        if guest.state == "booting" and now - guest.since >= self.boot_seconds:
            guest.state, guest.since = AgentReport.RUNNING, now
            return [(instance_id, AgentReport.RUNNING), (instance_id, AgentReport.READY)]
        return []

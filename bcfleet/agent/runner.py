"""`fleet agent run`: report this host's inventory, pull its InstanceSpecs, report guest states.

Each round reports the inventory (the first round, then every `inventory_every` rounds),
pulls the specs and, with a hypervisor (the simulated one, or libvirt's with
--hypervisor URI: bcfleet.agent.seam), brings the guests to them and reports the state
changes. With neither, the agent writes each spec's libvirt domain XML into `domains_dir`
(when given) for the host's tooling to define.
Rounds are bounded by `rounds` (None: until interrupted).
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bcfleet.agent.hypervisor import SimulatedHypervisor
from bcfleet.agent.inventory import read_inventory
from bcfleet.agent.remote import AgentConnection
from bcfleet.agent.seam import Hypervisor, open_libvirt
from bcfleet.domain.converge import SHUTDOWN_GRACE_SECONDS
from bcfleet.domain.guest_view import GUEST_PREFIX
from bcfleet.domain.instance_spec import HostDomain, render_libvirt_domain
from bcfleet.domain.inventory_age import AGENT_ROUND_SECONDS, INVENTORY_EVERY_ROUNDS
from bcfleet.domain.simulated_inventory import two_socket_host


def simulated_inventory(host: str, gpus: int = 0) -> dict[str, Any]:
    """A two-socket host's inventory, the same every time for the same host name."""
    return two_socket_host(seed=zlib.crc32(host.encode()), gpus=gpus, hostname=host)


@dataclass
class AgentOptions:
    host: str
    simulate: bool = False
    boot_seconds: float = 20.0
    interval: float = AGENT_ROUND_SECONDS
    inventory_every: int = INVENTORY_EVERY_ROUNDS
    rounds: int | None = None
    domains_dir: Path | None = None
    inventory: dict[str, Any] | None = None  # None: this machine's (or simulated with --simulate)
    hypervisor_uri: str | None = None  # a libvirt URI: run the guests there
    host_domain: HostDomain = field(default_factory=HostDomain)  # with hypervisor_uri
    shutdown_grace: float = SHUTDOWN_GRACE_SECONDS  # ACPI shutdown, then destroy
    ready_line: str | None = None  # ready once a guest's console logs it (host_domain.console_dir)


@dataclass
class AgentReport:
    rounds: int = 0
    inventories: int = 0
    specs: int = 0
    states: list[tuple[str, str]] = field(default_factory=list)
    conditions: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "inventoriesReported": self.inventories,
            "specs": self.specs,
            "states": [{"instanceId": i, "state": s} for i, s in self.states],
            "conditions": [{"on": k, "message": m} for k, m in sorted(self.conditions.items())],
        }


class Agent:
    """One host's agent over one connection."""

    def __init__(
        self,
        connection: AgentConnection,
        options: AgentOptions,
        *,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        hypervisor: Hypervisor | None = None,
    ) -> None:
        self.connection = connection
        self.options = options
        self.now = now
        self.sleep = sleep
        self.hypervisor = hypervisor
        if hypervisor is None and options.simulate:
            self.hypervisor = SimulatedHypervisor(options.boot_seconds)
        elif hypervisor is None and options.hypervisor_uri:
            self.hypervisor = open_libvirt(
                options.hypervisor_uri,
                host=options.host_domain,
                grace=options.shutdown_grace,
                ready_line=options.ready_line,
            )
        self.report = AgentReport()

    def inventory(self) -> dict[str, Any]:
        if self.options.inventory is not None:
            return self.options.inventory
        if self.options.simulate:
            return simulated_inventory(self.options.host)
        return read_inventory()

    def round(self) -> None:
        """Report the inventory when due, pull the specs, act them out, report what changed."""
        host = self.options.host
        if self.report.rounds % max(self.options.inventory_every, 1) == 0:
            self.connection.report_inventory(host, self.inventory())
            self.report.inventories += 1
        specs = self.connection.specs(host)
        self.report.specs = len(specs)
        if self.hypervisor is not None:
            for instance_id, state in self.hypervisor.converge(specs, self.now()):
                if self.connection.report_state(host, instance_id, state):
                    self.report.states.append((instance_id, state))
            self.report.conditions = self.hypervisor.problems()
        elif self.options.domains_dir is not None:
            write_domains(self.options.domains_dir, specs)
        self.report.rounds += 1

    def run(self) -> AgentReport:
        """Rounds every `interval` seconds until `rounds` are done (forever when None)."""
        while self.options.rounds is None or self.report.rounds < self.options.rounds:
            self.round()
            if self.options.rounds is None or self.report.rounds < self.options.rounds:
                self.pause()
        return self.report

    def pause(self) -> None:
        """Until the next round: the interval, cut short by a hypervisor that saw something."""
        if self.hypervisor is None:
            self.sleep(self.options.interval)
        else:
            self.hypervisor.pause(self.options.interval, self.sleep)


def write_domains(directory: Path, specs: Sequence[Mapping[str, Any]]) -> list[Path]:
    """Each spec's libvirt domain XML as <id>.xml (an instance id, or the opaque guest id a
    token other than root's admin gets); files of gone guests removed."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in specs:
        path = directory / f"{spec['id']}.xml"
        path.write_text(render_libvirt_domain(spec), encoding="utf-8")
        written.append(path)
    ours = set(directory.glob("ins_*.xml")) | set(directory.glob(f"{GUEST_PREFIX}*.xml"))
    for stale in ours - set(written):
        stale.unlink()
    return written

"""`fleet agent run`: report this host's inventory, pull its InstanceSpecs, report guest states.

Each round reports the inventory (the first round, then every `inventory_every` rounds),
pulls the specs and, with a hypervisor (the simulated one, or libvirt's with
--hypervisor URI: bcfleet.agent.seam), brings the guests to them and reports the state
changes. With neither, the agent writes each spec's libvirt domain XML into `domains_dir`
(when given) for the host's tooling to define.
Rounds are bounded by `rounds` (None: until interrupted).

Every spec id the server sends is checked against the id formats (``spec_id_problem``)
before it is used at all: it names a file and a URL, so a spec with any other id is
refused, said once through `warn`, kept in the report, and skipped; the others go on.
"""

from __future__ import annotations

import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bcfleet.agent.host_policy import HostPolicy
from bcfleet.agent.hypervisor import SimulatedHypervisor
from bcfleet.agent.inventory import read_inventory
from bcfleet.agent.remote import AgentConnection
from bcfleet.agent.seam import Hypervisor, open_libvirt
from bcfleet.domain.balloon import DEFAULT_FLOOR_PERCENT
from bcfleet.domain.bounds import shown
from bcfleet.domain.converge import SHUTDOWN_GRACE_SECONDS
from bcfleet.domain.guest_view import GUEST_PREFIX, is_guest_id
from bcfleet.domain.instance_spec import HostDomain, InstanceSpecJson, render_libvirt_domain
from bcfleet.domain.inventory_age import AGENT_ROUND_SECONDS, INVENTORY_EVERY_ROUNDS
from bcfleet.domain.simulated_inventory import two_socket_host
from bcfleet.errors import InvalidInputError
from bcfleet.ids import has_prefix


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
    host_root: str = "/"  # with hypervisor_uri: where /proc and /sys are read (host_policy)
    balloon_floor_percent: int = DEFAULT_FLOOR_PERCENT  # for a spec that names none


@dataclass
class AgentReport:
    rounds: int = 0
    inventories: int = 0
    specs: int = 0
    states: list[tuple[str, str]] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)  # why specs were skipped, each said once
    conditions: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "inventoriesReported": self.inventories,
            "specs": self.specs,
            "states": [{"instanceId": i, "state": s} for i, s in self.states],
            "refused": [{"reason": r} for r in self.refused],
            "conditions": [{"on": k, "message": m} for k, m in sorted(self.conditions.items())],
        }


def spec_id_problem(spec: object) -> str | None:
    """Why a spec from the server cannot be used here, or None: its id must be an instance
    id (root's admin's view) or an opaque guest id, by their formats (ids.has_prefix,
    guest_view.is_guest_id), since it names a file and a URL."""
    spec_id = spec.get("id") if isinstance(spec, Mapping) else None
    if isinstance(spec_id, str) and (has_prefix(spec_id, "ins") or is_guest_id(spec_id)):
        return None
    return (
        f"spec id {shown(spec_id)} from the server is neither an instance id (ins_…) "
        "nor a guest id (gst_…); spec skipped"
    )


def checked_specs(specs: Sequence[object]) -> tuple[list[InstanceSpecJson], list[str]]:
    """The specs whose ids pass spec_id_problem, and why each other one was refused."""
    usable: list[InstanceSpecJson] = []
    refused: list[str] = []
    for spec in specs:
        problem = spec_id_problem(spec)
        if problem is None:
            usable.append(spec)  # type: ignore[arg-type]  # a Mapping with a checked id
        else:
            refused.append(problem)
    return usable, refused


class Agent:
    """One host's agent over one connection."""

    def __init__(
        self,
        connection: AgentConnection,
        options: AgentOptions,
        *,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        warn: Callable[[str], None] = lambda _reason: None,
        hypervisor: Hypervisor | None = None,
    ) -> None:
        self.connection = connection
        self.options = options
        self.now = now
        self.sleep = sleep
        self.warn = warn
        self.hypervisor = hypervisor
        if hypervisor is None and options.simulate:
            self.hypervisor = SimulatedHypervisor(options.boot_seconds)
        elif hypervisor is None and options.hypervisor_uri:
            policy = HostPolicy(options.host_root, options.balloon_floor_percent)
            self.hypervisor = open_libvirt(
                options.hypervisor_uri,
                host=options.host_domain,
                grace=options.shutdown_grace,
                ready_line=options.ready_line,
                balloon=policy.balloon,
                admit=policy.admit,
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
        specs, refused = checked_specs(self.connection.specs(host))
        self.report.specs = len(specs)
        if self.hypervisor is not None:
            for instance_id, state in self.hypervisor.converge(specs, self.now()):
                if self.connection.report_state(host, instance_id, state):
                    self.report.states.append((instance_id, state))
            self.report.conditions = self.hypervisor.problems()
            guests = [str(spec["id"]) for spec in specs]
            balloons = self.hypervisor.balloons()
            self.connection.report_guests(host, guests, self.report.conditions, balloons)
        elif self.options.domains_dir is not None:
            write_domains(self.options.domains_dir, specs, refused)
        self._refused(refused)
        self.report.rounds += 1

    def _refused(self, reasons: list[str]) -> None:
        """Say each new reason once (a hostile spec comes back every round)."""
        for reason in reasons:
            if reason not in self.report.refused:
                self.report.refused.append(reason)
                self.warn(reason)

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


def domain_path(directory: Path, spec: Mapping[str, Any]) -> Path:
    """DIR/<id>.xml for a spec; INVALID_INPUT for an id spec_id_problem refuses, or for a
    file that would resolve anywhere but directly in DIR (a symbolic link out of it)."""
    problem = spec_id_problem(spec)
    if problem is not None:
        raise InvalidInputError(problem, {"id": shown(spec.get("id"))})
    path = directory / f"{spec['id']}.xml"
    if path.resolve().parent != directory.resolve():
        raise InvalidInputError(
            f"{path} resolves outside {directory}; spec skipped", {"id": spec["id"]}
        )
    return path


def write_domains(
    directory: Path, specs: Sequence[Mapping[str, Any]], refused: list[str] | None = None
) -> list[Path]:
    """Each spec's libvirt domain XML as <id>.xml (an instance id, or the opaque guest id a
    token other than root's admin gets); files of gone guests removed.

    A spec domain_path refuses is skipped, its reason appended to `refused`; without that
    list the first refusal is raised."""
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for spec in specs:
        try:
            path = domain_path(directory, spec)
        except InvalidInputError as error:
            if refused is None:
                raise
            refused.append(error.message)
            continue
        path.write_text(render_libvirt_domain(spec), encoding="utf-8")
        written.append(path)
    ours = set(directory.glob("ins_*.xml")) | set(directory.glob(f"{GUEST_PREFIX}*.xml"))
    for stale in ours - set(written):
        stale.unlink()
    return written

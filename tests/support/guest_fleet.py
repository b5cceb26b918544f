"""A whole fleet around real guests: a FleetConfig applied, `fleet serve` and `fleet agent run
--hypervisor` on an embedded QEMU root (tests/support/real_guest.py), as subprocesses.

Used by tests/agent/test_real_guest_e2e.py, bench/bench_guest_ready.py and
scripts/real-guest-demo. The agent reads its host memory below a fake root (``--host-root``):
``proc/meminfo`` and ``proc/pressure/memory`` are files the caller rewrites to simulate memory
pressure; ``sys`` links to the real /sys, so the huge pages are the host's own. The embedded
driver has no storage driver (no storage pools), so the agent runs the guests with --no-disk:
they boot the guest image's kernel and initramfs.

A process that has opened an embed root holds it until it exits (closing the connection does
not let it go: libvirt 9.0's embedded driver keeps the root's pid file locked), and
real_host() opened its root to probe the accelerator. So the agent gets a root of its own, a
short path in /tmp (QEMU's monitor socket path must stay under 108 bytes) seeded with
real_host()'s qemu.conf and capabilities cache; it is read only after the agent exited, by
another process (owned_domains()), and its QEMU processes are checked and killed here.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support.real_guest import (
    RealHost,
    console_text,
    embed_uri,
    kill_qemu,
    prepare_root,
)
from tests.support.waiting import wait_until

HOST = "h1"
POOL = "guests"
MEMTOTAL = re.compile(r"bcfleet-guest memtotal-kib (\d+)")
METERS = ("vps.vcpu.hours", "vps.memory.gib.hours")
FAKE_TOTAL_KIB = 8 * 1024 * 1024  # the fake host's MemTotal
CONFIG = """\
apiVersion: bcfleet.dev/v1
kind: FleetConfig
tenants:
  - { id: root }
pools:
  - name: guests
    kind: vps-host
    owner: root
    policy:
      overcommit: { memoryGiB: 1.5 }   # floating guests get a balloon
      hostReserve: { vcpu: 0, memoryGiB: 1, diskGiB: 1 }
hosts:
  - { name: h1, pool: guests, labels: { bc.dev/cap.instance.placement: "true" } }
flavors:
  - { pool: guests, name: pinned, vcpu: 1, memoryGiB: 1, diskGiB: 1,
      placement: { pinned: true, hugepageSizeBytes: 2097152 } }
  - { pool: guests, name: floating, vcpu: 1, memoryGiB: 1, diskGiB: 1 }
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def last_memtotal(log: Path) -> int | None:
    """The guest's MemTotal (KiB) as its console last printed it."""
    found = MEMTOTAL.findall(console_text(log))
    return int(found[-1]) if found else None


@dataclass
class GuestFleet:
    """The running fleet: its database, server, agent and the agent's fake host root."""

    host: RealHost
    work: Path
    db: str
    url: str = ""
    token: str = ""
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    @property
    def consoles(self) -> Path:
        return self.work / "console"

    @property
    def fake_root(self) -> Path:
        return self.work / "host-root"

    @property
    def agent_log(self) -> Path:
        return self.work / "agent.log"

    def cli(self, *args: str, timeout: float = 60, now: str | None = None) -> Any:
        """`fleet ARGS --json` as the local operator (at `now`: BCFLEET_NOW); its JSON (a
        failure raises)."""
        argv = [sys.executable, "-m", "bcfleet", *args, "--json", "--db", self.db]
        env = {**os.environ, **({"BCFLEET_NOW": now} if now else {})}
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=timeout, check=False, env=env
        )
        assert done.returncode == 0, f"fleet {' '.join(args)}: {done.stderr}{done.stdout}"
        return json.loads(done.stdout) if done.stdout.strip() else None

    def memory(self, available_percent: int, avg10: float = 0.0) -> None:
        """What the agent reads as this host's memory from now on."""
        proc = self.fake_root / "proc"
        (proc / "pressure").mkdir(parents=True, exist_ok=True)
        available = FAKE_TOTAL_KIB * available_percent // 100
        (proc / "meminfo.new").write_text(
            f"MemTotal:       {FAKE_TOTAL_KIB} kB\nMemAvailable:   {available} kB\n"
        )
        (proc / "meminfo.new").replace(proc / "meminfo")
        (proc / "pressure" / "memory").write_text(
            f"some avg10={avg10:.2f} avg60=0.00 avg300=0.00 total=0\n"
        )

    def console_log(self, spec_id: str) -> Path:
        return self.consoles / f"{spec_id}.log"

    def new_console(self, known: set[Path], timeout: float) -> Path:
        """The console log of the guest started after `known` were there."""
        found: list[Path] = []
        wait_until(
            lambda: found.extend(set(self.consoles.glob("*.log")) - known) or found,
            timeout=timeout,
            what="a new guest's console log",
        )
        return found[0]

    def create(self, flavor: str) -> str:
        made = self.cli("instances", "create", "--tenant", "root", "--pool", POOL,
                        "--flavor", flavor)  # fmt: skip
        assert made["state"] == "running", made
        return str(made["id"])

    def start(self) -> None:
        """`fleet serve`, then the agent on the embed root; the host's capacity rows."""
        self.cli("apply", "-f", str(self.work / "fleet.yaml"), "--yes")
        for meter in METERS:  # what vps.usage bills a hosted instance by
            self.cli("billing", "meters", "create", meter)
        made = self.cli("iam", "tokens", "create", "--tenant", "root", "--name", "h-agent",
                        "--role", "agent", "--host", HOST)  # fmt: skip
        self.token = made["token"]
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self._spawn("serve", "--port", str(port), "--db", self.db, log=self.work / "serve.log")
        wait_until(self._healthy, timeout=30, what="fleet serve to answer /healthz")
        self._spawn(*self.agent_argv(), log=self.agent_log)
        wait_until(self._reported, timeout=60, what="the agent's first inventory report")
        self.cli("jobs", "tick", "--job", "vps.hosts")

    def agent_argv(self) -> list[str]:
        image = self.host.image
        return ["agent", "run", "--server", self.url, "--token", self.token, "--host", HOST,
                "--hypervisor", self.host.uri, "--domain-type", self.host.domain_type,
                "--kernel", str(image.kernel), "--initrd", str(image.initrd),
                "--cmdline", image.cmdline, "--no-disk", "--console-dir", str(self.consoles),
                "--ready-line", image.ready_line, "--interval", "1",
                "--shutdown-grace", "20", "--host-root", str(self.fake_root)]  # fmt: skip

    def _spawn(self, *args: str, log: Path) -> None:
        with log.open("wb") as out:
            self.processes.append(
                subprocess.Popen(
                    [sys.executable, "-m", "bcfleet", *args],
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as answer:
                return bool(answer.status == 200)
        except OSError:
            return False

    def _reported(self) -> bool:
        rows = self.cli("hosts", "list")["items"]
        return any(row["name"] == HOST and row["inventoryReportedAt"] for row in rows)

    def stop_processes(self) -> None:
        """The agent, then the server: SIGINT (the agent closes its connection), then SIGKILL."""
        for process in reversed(self.processes):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=10)
        self.processes.clear()


LIST_DOMAINS = """
import json, sys, libvirt
libvirt.virEventRegisterDefaultImpl()
connection = libvirt.open(sys.argv[1])
print(json.dumps([domain.name() for domain in connection.listAllDomains()]))
connection.close()
"""


def owned_domains(uri: str) -> list[str]:
    """The domains left in the agent's root, read once the agent has exited, by a process of
    its own (this one holds real_host()'s root, and a process embeds one root only)."""
    done = subprocess.run([sys.executable, "-c", LIST_DOMAINS, uri], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    names: list[str] = json.loads(done.stdout.strip().splitlines()[-1])
    return names


@contextlib.contextmanager
def agent_root(host: RealHost) -> Iterator[RealHost]:
    """The host on an embed root of the agent's own (see the module docstring); on leaving,
    its QEMU processes killed (the test fails if any was left) and the root removed."""
    root = Path(tempfile.mkdtemp(prefix="bcf-embed-"))
    try:
        prepare_root(root, host.hugetlbfs)
        if (host.root / "cache").is_dir():
            shutil.copytree(host.root / "cache", root / "cache")
        yield dataclasses.replace(host, uri=embed_uri(root), root=root)
        left = kill_qemu(root)
        assert not left, f"QEMU processes were left running: {left}"
    finally:
        kill_qemu(root)
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def guest_fleet(real: RealHost, work: Path) -> Iterator[GuestFleet]:
    """A fleet serving and an agent running on its own embed root (agent_root()); everything
    stopped on leaving."""
    with agent_root(real) as host, fleet_on(host, work) as fleet:
        yield fleet


@contextlib.contextmanager
def fleet_on(host: RealHost, work: Path) -> Iterator[GuestFleet]:
    work.mkdir(parents=True, exist_ok=True)
    (work / "fleet.yaml").write_text(CONFIG)
    fleet = GuestFleet(host, work, f"sqlite:///{work / 'fleet.db'}")
    fleet.consoles.mkdir(exist_ok=True)
    fleet.memory(available_percent=50)
    (fleet.fake_root / "sys").symlink_to("/sys")
    try:
        fleet.start()
        yield fleet
    finally:
        fleet.stop_processes()

"""The scale-out soak's processes: a seeded PostgreSQL fleet, `fleet serve` replicas, `fleet jobs run` daemons.

bench/bench_scaleout.py and tests/scaleout run them. A replica is started on a
free port and waited for by polling /healthz; the killer thread sends SIGKILL
to one replica every few seconds, in turn, and starts it again on the same
port. Every process is ended in `Cluster.stop` (call it in a finally).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.domain.simulated_inventory import two_socket_host
from bcfleet.fleet import Fleet
from bcfleet.jobs.registry import job_names
from bcfleet.jobs.vps_hosts import run_vps_hosts

ROOT = Path(__file__).resolve().parent.parent
PLACEMENT = {"bc.dev/cap.instance.placement": "true"}
TENANT = "soak"
FLAVOR = "s1.small"  # 2 vCPU, 4 GiB, 40 GiB
READY_TIMEOUT = 60.0
HEALTH_POLL = 0.05


@dataclass(frozen=True)
class World:
    """What the load needs to know of the seeded fleet."""

    pool_id: str
    token: str
    vcpu_limit: int
    gpu_limit: int


def seed(url: str, *, hosts: int, vcpu_limit: int, gpu_limit: int) -> World:
    """Tenant 'soak' with an admin token, a GPU pool of `hosts` hosts offered to it with a flavor,
    quotas on vCPU and GPUs (so that the load meets them), and its serverless pool set to it."""
    fleet = Fleet.open(url)
    try:
        api, op = fleet.api, LOCAL_OPERATOR
        api.tenants.create(op, TENANT)
        pool = api.pools.create(op, tenant_id="root", name="soak", kind="vps-host",
                                gpu_model="L40S")  # fmt: skip
        api.pools.offer(op, tenant_id="root", pool=pool["id"], to=TENANT)
        api.flavors.create(op, tenant_id="root", pool_id=pool["id"], name=FLAVOR, vcpu=2,
                           memory_gib=4, disk_gib=40)  # fmt: skip
        for i in range(hosts):
            name = f"soak-{i:03d}"
            api.hosts.adopt(op, tenant_id="root", pool=pool["id"], name=name, labels=PLACEMENT)
            api.hosts.report(op, host=name,
                             inventory=two_socket_host(seed=i, gpus=4, hostname=name))  # fmt: skip
        run_vps_hosts(fleet, fleet.now())
        api.quotas.set(op, tenant_id=TENANT, pool=pool["id"],
                       limits={"vcpu": vcpu_limit, "gpu": gpu_limit})  # fmt: skip
        api.settings.compute_set(op, tenant_id=TENANT, serverless_pool="soak")
        made = api.iam.create_token(op, tenant_id=TENANT, name="soak", role="admin")
        return World(pool["id"], str(made["token"]), vcpu_limit, gpu_limit)
    finally:
        fleet.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _fleet_process(args: list[str], url: str, log: IO[bytes]) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("BCFLEET_NOW", None)  # every process keeps real time: they share one database
    argv = [sys.executable, "-m", "bcfleet", *args, "--db", url]
    return subprocess.Popen(argv, env=env, cwd=ROOT, stdout=log, stderr=log)


@dataclass
class Replica:
    """One `fleet serve` process on its own port; started again on the same port after a kill."""

    url: str
    log: IO[bytes]
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    starts: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        args = ["serve", "--port", str(self.port), "--log-level", "warning"]
        self.process = _fleet_process(args, self.url, self.log)
        self.starts += 1

    def wait_ready(self, timeout: float = READY_TIMEOUT) -> None:
        """Poll /healthz until it answers 200; the process dying or the timeout is an error."""
        deadline = time.monotonic() + timeout
        pause = threading.Event()
        while time.monotonic() < deadline:
            if self.process is None or self.process.poll() is not None:
                raise RuntimeError(f"replica on port {self.port} exited before it was ready")
            try:
                if httpx.get(f"{self.base_url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            pause.wait(HEALTH_POLL)
        raise RuntimeError(f"replica on port {self.port} not ready after {timeout:g} s")

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.kill()


def daemon_args(job_interval: float) -> list[str]:
    """`fleet jobs run` with every job at job_interval seconds."""
    args = ["jobs", "run"]
    for name in job_names():
        args += ["--interval", f"{name}={job_interval:g}"]
    return args


@dataclass
class Cluster:
    """The replicas, the job daemons and the killer thread of one soak."""

    url: str
    replicas: int
    daemons: int
    job_interval: float
    log: IO[bytes]
    servers: list[Replica] = field(default_factory=list)
    runners: list[subprocess.Popen[bytes]] = field(default_factory=list)
    kills: int = 0
    restart_error: str | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _killer: threading.Thread | None = None

    def start(self) -> None:
        self.servers = [Replica(self.url, self.log) for _ in range(self.replicas)]
        for server in self.servers:
            server.start()
        self.runners = [
            _fleet_process(daemon_args(self.job_interval), self.url, self.log)
            for _ in range(self.daemons)
        ]
        for server in self.servers:
            server.wait_ready()

    @property
    def base_urls(self) -> list[str]:
        return [s.base_url for s in self.servers]

    def start_killing(self, every: float) -> None:
        """SIGKILL one replica every `every` seconds, in turn, and start it again at once.

        The killer does not wait for the new process to be ready (start-up takes seconds
        on a busy machine): the kills keep their pace, and `wait_all_ready` checks
        afterwards that every replica came back.
        """

        def loop() -> None:
            turn = 0
            while not self._stop.wait(every):
                server = self.servers[turn % len(self.servers)]
                turn += 1
                server.kill()
                self.kills += 1
                server.start()

        self._killer = threading.Thread(target=loop, name="soak killer", daemon=True)
        self._killer.start()

    def stop_killing(self) -> None:
        self._stop.set()
        if self._killer is not None:
            self._killer.join()

    def wait_all_ready(self) -> None:
        """After the kills: every replica answers /healthz again (else restart_error says why)."""
        for server in self.servers:
            try:
                server.wait_ready()
            except RuntimeError as exc:
                self.restart_error = str(exc)
                return

    def stop(self) -> None:
        """End every process this cluster started: daemons with SIGTERM (they exit 0), replicas."""
        self.stop_killing()
        for runner in self.runners:
            if runner.poll() is None:
                runner.send_signal(signal.SIGTERM)
        for runner in self.runners:
            try:
                runner.wait(30)
            except subprocess.TimeoutExpired:
                runner.kill()
                runner.wait()
        for server in self.servers:
            server.stop()

    def daemon_exit_codes(self) -> list[int | None]:
        return [r.returncode for r in self.runners]


def describe(cluster: Cluster) -> dict[str, Any]:
    return {
        "replicas": cluster.replicas,
        "daemons": cluster.daemons,
        "kills": cluster.kills,
        "replicaStarts": sum(s.starts for s in cluster.servers),
    }

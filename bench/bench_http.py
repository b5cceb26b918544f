"""HTTP API load: requests/s, p50/p99 and errors for flavors list and a create, from a second process.

`fleet serve` runs in its own process on 127.0.0.1 over a seeded SQLite (or --pg) fleet; this
process sends the load with a few threads, each with its own connection. Every scenario is
bounded by --requests and --seconds. The create is reservations.create when the server
serves it, else instances.create (a placement through the whole stack). Prints a JSON line last.

    python bench/bench_http.py [--requests 2000] [--seconds 20] [--concurrency 4] [--hosts 250]
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx  # noqa: E402

from bcfleet.api.auth import LOCAL_OPERATOR  # noqa: E402
from bcfleet.clock import FakeClock  # noqa: E402
from bcfleet.domain.simulated_inventory import two_socket_host  # noqa: E402
from bcfleet.fleet import Fleet  # noqa: E402
from bcfleet.jobs.vps_hosts import run_vps_hosts  # noqa: E402
from bcfleet.settings import FleetSettings  # noqa: E402
from bench.common import T0, emit, scratch_pg, summary  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PLACEMENT = {"bc.dev/cap.instance.placement": "true"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def seed(url: str, hosts: int) -> tuple[str, str]:
    """A pool of `hosts` two-socket hosts with 8 GPUs each, offered to tenant 'bench'.

    Returns (pool id, a token of bench's admin). Hosts report through the API and the
    vps.hosts job derives their capacity rows and GPU atoms, as in a real fleet.
    """
    fleet = Fleet.open(url, clock=FakeClock(T0), settings=FleetSettings(db_url=url))
    api, op = fleet.api, LOCAL_OPERATOR
    api.tenants.create(op, "bench")
    pool = api.pools.create(op, tenant_id="root", name="bench", kind="vps-host", gpu_model="L40S")
    api.pools.offer(op, tenant_id="root", pool=pool["id"], to="bench")
    api.flavors.create(op, tenant_id="root", pool_id=pool["id"], name="b1.small", vcpu=2,
                       memory_gib=4, disk_gib=40)  # fmt: skip
    for i in range(hosts):
        name = f"bench-{i:05d}"
        api.hosts.adopt(op, tenant_id="root", pool=pool["id"], name=name, labels=PLACEMENT)
        api.hosts.report(op, host=name, inventory=two_socket_host(seed=i, gpus=8, hostname=name))
    run_vps_hosts(fleet, fleet.now())
    made = api.iam.create_token(op, tenant_id="bench", name="bench", role="admin")
    fleet.close()
    return pool["id"], str(made["token"])


def start_server(url: str, port: int) -> subprocess.Popen[bytes]:
    """`fleet serve` in a second process, waited for (at most 30 s)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "bcfleet", "serve", "--db", url, "--port", str(port),
            "--log-level", "warning"]  # fmt: skip
    server = subprocess.Popen(argv, env=env, cwd=ROOT)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.1)
    server.kill()
    raise SystemExit("the server did not start")


def stop_server(server: subprocess.Popen[bytes]) -> None:
    server.send_signal(signal.SIGINT)
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(5)


Request = Callable[[httpx.Client, int], httpx.Response]


def load(
    base: str, token: str, request: Request, *, requests: int, seconds: float, concurrency: int
) -> dict[str, Any]:
    """Send up to `requests` requests within `seconds` from `concurrency` threads."""
    samples: list[float] = []
    errors: dict[str, int] = {}
    lock = threading.Lock()
    counter = iter(range(requests))
    deadline = time.monotonic() + seconds

    def worker() -> None:
        headers = {"Authorization": f"Bearer {token}"}
        with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
            while time.monotonic() < deadline:
                with lock:
                    n = next(counter, None)
                if n is None:
                    return
                start = time.perf_counter()
                try:
                    status = str(request(client, n).status_code)
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                elapsed = time.perf_counter() - start
                with lock:
                    samples.append(elapsed)
                    if not status.startswith("2"):
                        errors[status] = errors.get(status, 0) + 1

    started = time.perf_counter()
    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)
    wall = time.perf_counter() - started
    result: dict[str, Any] = summary(samples) if samples else {"count": 0}
    result["perSecond"] = round(len(samples) / wall, 1)  # sustained, across all threads
    result["errors"] = errors
    return result


def creator(base: str, token: str, pool_id: str) -> tuple[str, Request]:
    """reservations.create when served, else instances.create."""
    document = httpx.get(f"{base}/v1/openapi.json", timeout=10).json()
    served = {op["operationId"] for item in document["paths"].values() for op in item.values()}
    if "reservations.create" in served:
        body = {"pool": pool_id, "gpus": 1, "duration": "1h"}

        def reserve(client: httpx.Client, n: int) -> httpx.Response:
            return client.post("/v1/reservations", json={**body, "idempotencyKey": f"b{n}"})

        return "reservations.create", reserve
    del token

    def place(client: httpx.Client, n: int) -> httpx.Response:
        return client.post(
            "/v1/instances", json={"pool": pool_id, "flavor": "b1.small", "name": f"b{n}"}
        )

    return "instances.create", place


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--hosts", type=int, default=250, help="8 GPUs each")
    parser.add_argument(
        "--pg",
        help="PostgreSQL instead of SQLite: an admin URL, beside which a scratch database is "
        "made and dropped (nothing is written to its own database)",
    )
    args = parser.parse_args()
    with ExitStack() as scratch:
        tmp = scratch.enter_context(tempfile.TemporaryDirectory())
        url = scratch.enter_context(scratch_pg(args.pg)) if args.pg else f"sqlite:///{tmp}/bench.db"
        pool_id, token = seed(url, args.hosts)
        port = free_port()
        server = start_server(url, port)
        base = f"http://127.0.0.1:{port}"
        bounds = {
            "requests": args.requests,
            "seconds": args.seconds,
            "concurrency": args.concurrency,
        }
        try:
            flavors = load(
                base, token, lambda c, _n: c.get(f"/v1/pools/{pool_id}/flavors"), **bounds
            )
            name, create = creator(base, token, pool_id)
            created = load(base, token, create, **bounds)
        finally:
            stop_server(server)
    result = {
        "bench": "http",
        "engine": "postgresql" if args.pg else "sqlite",
        "hosts": args.hosts,
        "concurrency": args.concurrency,
        "flavors.list": flavors,
        name: created,
    }
    print(f"flavors.list: {flavors}")
    print(f"{name}: {created}")
    emit(result)


if __name__ == "__main__":
    main()

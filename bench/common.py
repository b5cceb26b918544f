"""Shared pieces of the benchmarks: seeding a large pool in bulk SQL, timing, peak RSS, the JSON line."""

from __future__ import annotations

import json
import os
import resource
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import insert, text

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.fleet import Fleet
from bcfleet.store.models import Host, NodeResource

T0 = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def libpq_url(url: str) -> str:
    """A SQLAlchemy PostgreSQL URL as libpq (and psycopg) takes it."""
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


@contextmanager
def scratch_pg(admin_url: str, prefix: str = "bcfleet_bench") -> Iterator[str]:
    """A new empty PostgreSQL database beside admin_url's for one benchmark, dropped afterwards.

    Yields its URL in admin_url's form. Nothing is written to admin_url's own database.
    """
    import psycopg  # only the PostgreSQL benchmarks need the driver

    name = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(libpq_url(admin_url), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(libpq_url(admin_url), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def seed_pool(
    fleet: Fleet,
    hosts: int,
    *,
    vcpu: int = 64,
    ratio: float = 2.0,
    memory_gib: int = 256,
    disk_gib: int = 2000,
    name: str = "bench",
) -> dict[str, Any]:
    """A vps-host pool offered to tenant 'bench' with `hosts` synced hosts, written in bulk."""
    api, op = fleet.api, LOCAL_OPERATOR
    api.tenants.create(op, "bench")
    pool = api.pools.create(
        op, tenant_id="root", name=name, kind="vps-host", overcommit={"vcpu": ratio}
    )
    api.pools.offer(op, tenant_id="root", pool=pool["id"], to="bench")
    api.flavors.create(
        op, tenant_id="root", pool_id=pool["id"], name="b1.small", vcpu=2, memory_gib=4, disk_gib=40
    )
    now = fleet.now()
    host_rows, resource_rows = [], []
    for i in range(hosts):
        node_id = fleet.new_id("node")
        host_rows.append(
            {
                "id": node_id,
                "name": f"{name}-{i:05d}",
                "pool_id": pool["id"],
                "labels": {},
                "tenant_controlled": False,
                "state": "ready",
                "inventory": None,
                "inventory_reported_at": now,
                "inventory_generation": 1,
                "created_at": now,
                "managed": False,
            }
        )
        for res, amount, r in (
            ("vcpu", vcpu, ratio),
            ("memoryGiB", memory_gib, 1.0),
            ("diskGiB", disk_gib, 1.0),
        ):
            resource_rows.append(
                {
                    "node_id": node_id,
                    "resource": res,
                    "allocatable": amount,
                    "ratio": r,
                    "capacity": int(amount * r),
                    "allocated": 0,
                    "generation": 0,
                }
            )
    inventory = {
        "cpus": [
            {"id": c, "numaNode": c // (vcpu // 2), "isolated": False} for c in range(vcpu + 2)
        ],
        "numaNodes": [
            {"id": n, "memoryGiB": (memory_gib + 8) / 2, "hugepages": []} for n in range(2)
        ],
        "memoryGiB": memory_gib + 8,
        "diskGiB": disk_gib + 100,
        "gpus": [],
    }
    for row in host_rows:
        row["inventory"] = inventory
    with fleet.write() as session:
        session.execute(insert(Host), host_rows)
        session.execute(insert(NodeResource), resource_rows)
    return pool


def analyze(fleet: Fleet) -> None:
    """Statistics after the bulk load, as autovacuum soon would (the floor's seed does the same)."""
    if fleet.engine.dialect.name == "postgresql":
        with fleet.engine.connect() as connection:
            connection.execute(text("ANALYZE"))
            connection.commit()


def timed(call: Callable[[], Any], count: int) -> list[float]:
    """Wall-clock seconds of each of `count` calls."""
    samples = []
    for _ in range(count):
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return samples


def backend_cpu_s(url: str) -> float | None:
    """CPU seconds used so far by the client backends of url's PostgreSQL database (their
    /proc/<pid>/stat), this look-up's own excepted; None when the server is not on this machine."""
    import psycopg  # only the PostgreSQL benchmarks need the driver

    with psycopg.connect(libpq_url(url), autocommit=True) as connection:
        pids = [
            row[0]
            for row in connection.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = current_database() "
                "AND backend_type = 'client backend' AND pid <> pg_backend_pid()"
            )
        ]
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            return None
        total += int(fields[11]) + int(fields[12])  # utime, stime in clock ticks
    return total / os.sysconf("SC_CLK_TCK")


def timed_with_cpu(
    call: Callable[[], Any], count: int, pg_url: str | None = None
) -> tuple[list[float], dict[str, float]]:
    """timed(call, count), and the CPU each call took: this process's (all its threads, so
    SQLite's checkpoints too) and, for a PostgreSQL database on this machine, its backends'.

    CPU time is what a change to the code moves; wall time also moves with whatever else the
    machine runs, and on a shared machine the two can differ by a quarter from run to run.
    """
    backend = backend_cpu_s(pg_url) if pg_url else None
    process = time.process_time()
    samples = timed(call, count)
    cpu = {"clientCpuMs": round(1000 * (time.process_time() - process) / count, 3)}
    if pg_url and backend is not None:
        after = backend_cpu_s(pg_url)
        if after is not None:
            cpu["backendCpuMs"] = round(1000 * (after - backend) / count, 3)
    return samples, cpu


def summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
    return {
        "count": len(samples),
        "perSecond": round(len(samples) / sum(samples), 1),
        "p50Ms": round(statistics.median(ordered) * 1000, 2),
        "p99Ms": round(p99 * 1000, 2),
    }


def peak_rss_mb() -> float:
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def emit(result: dict[str, Any]) -> None:
    """The last line of every benchmark: one JSON document."""
    sys.stdout.write(json.dumps(result) + "\n")

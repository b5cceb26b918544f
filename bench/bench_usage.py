"""Benchmark of the vps.usage job on SQLite: one tick over a large fleet, and a day of catch-up.

    python bench/bench_usage.py [--instances 50000] [--reservations 10000]
                                [--catchup-instances 5000] [--catchup-hours 24]

Prints what it measures and, last, one JSON line:
{"tick_seconds": …, "catchup_seconds": …, "peak_rss_mb": …, …} (wall seconds; the CPU
seconds beside them tell a busy machine from a slow job).
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert  # noqa: E402

from bcfleet.clock import FakeClock  # noqa: E402
from bcfleet.domain.usage import WINDOW, window_start  # noqa: E402
from bcfleet.fleet import Fleet  # noqa: E402
from bcfleet.ids import IdFactory  # noqa: E402
from bcfleet.jobs.vps_usage import SETTLE, run_vps_usage  # noqa: E402
from bcfleet.settings import FleetSettings  # noqa: E402
from bcfleet.store.models import (  # noqa: E402
    Allocation,
    BillingMeter,
    Host,
    Instance,
    Pool,
    Reservation,
    Tenant,
)
from bcfleet.store.models.jobs import JobState  # noqa: E402

NOW = datetime(2026, 11, 30, 12, 0, 40, tzinfo=UTC)
TENANTS = 50
HOSTS = 1000
CHUNK = 5000


def open_fleet(path: Path) -> Fleet:
    url = f"sqlite:///{path}"
    return Fleet.open(
        url, clock=FakeClock(NOW), settings=FleetSettings(db_url=url), ids=IdFactory(seed=1)
    )


def _bulk(fleet: Fleet, model: Any, rows: list[dict[str, Any]]) -> None:
    for offset in range(0, len(rows), CHUNK):
        with fleet.write(bump_revision=False) as session:
            session.connection().execute(insert(model), rows[offset : offset + CHUNK])


def seed(fleet: Fleet, instances: int, reservations: int, since: datetime) -> None:
    """Tenants, one GPU pool, hosts, running instances (some GPU, some spare) and reservations."""
    now = fleet.now()
    tenants = [{"id": f"t{i:03d}", "name": f"t{i:03d}", "created_at": now} for i in range(TENANTS)]
    _bulk(fleet, Tenant, tenants)
    pool = {"id": "pool_bench", "name": "bench", "kind": "vps-host", "owner_tenant_id": "root"}
    _bulk(fleet, Pool, [{**pool, "gpu_model": "L40S", "created_at": now}])
    hosts = [
        {"id": f"node_{h:05d}", "name": f"h{h:05d}", "pool_id": "pool_bench", "created_at": now}
        for h in range(HOSTS)
    ]
    _bulk(fleet, Host, hosts)
    _bulk(fleet, Instance, [_instance(n, since) for n in range(instances)])
    _bulk(fleet, Allocation, [_allocation(n, since) for n in range(instances)])
    _bulk(fleet, Reservation, [_reservation(n, since) for n in range(reservations)])
    names = ["vps.vcpu.hours", "vps.memory.gib.hours", "credits", "gpu.l40s.hours"]
    _bulk(fleet, BillingMeter, [{"name": m, "created_at": now} for m in names])


def _start(n: int, since: datetime) -> datetime:
    return since + timedelta(seconds=n % 3600, microseconds=n * 7 % 1_000_000)


def _instance(n: int, since: datetime) -> dict[str, Any]:
    gpus = 1 if n % 10 == 0 else 0
    return {
        "id": f"ins_{n:08d}",
        "tenant_id": f"t{n % TENANTS:03d}",
        "pool_id": "pool_bench",
        "name": f"i{n}",
        "state": "running",
        "shape": {"vcpu": 2 + n % 4, "memoryGiB": 4 + n % 8, "diskGiB": 40, "gpus": gpus},
        "node_id": f"node_{n % HOSTS:05d}",
        "allocation_id": f"alloc_{n:08d}",
        "purpose": "spare" if n % 25 == 0 else "tenant",
        "created_at": _start(n, since),
        "updated_at": _start(n, since),
    }


def _allocation(n: int, since: datetime) -> dict[str, Any]:
    return {
        "id": f"alloc_{n:08d}",
        "node_id": f"node_{n % HOSTS:05d}",
        "consumer_kind": "instance",
        "consumer_id": f"ins_{n:08d}",
        "tenant_id": f"t{n % TENANTS:03d}",
        "pool_id": "pool_bench",
        "claims": {"vcpu": 2 + n % 4, "memoryGiB": 4 + n % 8, "diskGiB": 40},
        "starts_at": _start(n, since),
    }


def _reservation(n: int, since: datetime) -> dict[str, Any]:
    start = _start(n, since)
    return {
        "id": f"rsv_{n:08d}",
        "tenant_id": f"t{n % TENANTS:03d}",
        "pool_id": "pool_bench",
        "gpus": 1 + n % 4,
        "spot": n % 5 == 0,
        "state": "active",
        "requested_start": start,
        "duration_seconds": 86400,
        "starts_at": start,
        "ends_at": start + timedelta(days=1),
        "created_at": start,
        "updated_at": start,
        "activated_at": start,
    }


def set_watermark(fleet: Fleet, watermark: datetime) -> None:
    with fleet.write(bump_revision=False) as session:
        session.add(JobState(job="vps.usage", watermark=watermark))


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def measure(fleet: Fleet, label: str) -> tuple[float, float, dict[str, int]]:
    """Wall seconds, CPU seconds of this process (SQLite runs in it) and the job's counts."""
    began, began_cpu = time.perf_counter(), time.process_time()
    counts = run_vps_usage(fleet, fleet.now())
    seconds, cpu = time.perf_counter() - began, time.process_time() - began_cpu
    print(f"{label}: {seconds:.2f} s ({cpu:.2f} s CPU), {counts}", file=sys.stderr)
    return seconds, cpu, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=50_000)
    parser.add_argument("--reservations", type=int, default=10_000)
    parser.add_argument("--catchup-instances", type=int, default=5_000)
    parser.add_argument("--catchup-hours", type=int, default=24)
    args = parser.parse_args()
    last_closed = window_start(NOW - SETTLE) - WINDOW
    with tempfile.TemporaryDirectory() as tmp:
        fleet = open_fleet(Path(tmp) / "tick.db")
        seed(fleet, args.instances, args.reservations, NOW - timedelta(hours=2))
        set_watermark(fleet, last_closed)
        tick_seconds, tick_cpu, _ = measure(
            fleet, f"tick, {args.instances} instances + {args.reservations} reservations"
        )
        fleet.close()
        fleet = open_fleet(Path(tmp) / "catchup.db")
        seed(fleet, args.catchup_instances, 0, NOW - timedelta(hours=args.catchup_hours + 1))
        set_watermark(fleet, last_closed - timedelta(hours=args.catchup_hours) + WINDOW)
        catchup_seconds, catchup_cpu, _ = measure(
            fleet, f"catch-up, {args.catchup_hours} h of {args.catchup_instances} instances"
        )
        fleet.close()
    result = {
        "tick_seconds": round(tick_seconds, 3),
        "catchup_seconds": round(catchup_seconds, 3),
        "tick_cpu_seconds": round(tick_cpu, 3),
        "catchup_cpu_seconds": round(catchup_cpu, 3),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    print(json.dumps(result))


if __name__ == "__main__":
    main()

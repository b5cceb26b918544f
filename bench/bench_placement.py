"""Placement throughput: placements/s, p50/p99 and peak RSS at 1,000 and 5,000 hosts, SQLite and PostgreSQL.

Hosts have 64 vCPU (ratio 2), 256 GiB and 2 TB; the flavor is 2 vCPU / 4 GiB / 40 GiB (issue 4's
setup). `--processes 4` also runs four processes placing at once (PostgreSQL) and then checks
the invariants. Each figure is printed beside the floor's (bench/floor_placement.py: the raw
transaction on the same pool, run in the same process run) and its share of the floor, so a
noisy machine cannot fake progress. Prints a JSON line last.

    python bench/bench_placement.py [--hosts 1000 5000] [--placements 500] [--pg URL] [--processes 4]
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import create_engine, text  # noqa: E402

from bcfleet.api.auth import LOCAL_OPERATOR  # noqa: E402
from bcfleet.clock import FakeClock  # noqa: E402
from bcfleet.fleet import Fleet  # noqa: E402
from bcfleet.settings import FleetSettings  # noqa: E402
from bench.common import T0, emit, peak_rss_mb, seed_pool, summary, timed  # noqa: E402
from bench.floor_placement import floor_pg, floor_pg_processes, floor_sqlite  # noqa: E402


def fresh_pg(admin_url: str) -> str:
    name = f"bcfleet_bench_{uuid.uuid4().hex[:8]}"
    engine = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with engine.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    return admin_url.rsplit("/", 1)[0] + f"/{name}"


def analyze(fleet: Fleet) -> None:
    """Statistics after the bulk load, as autovacuum soon would (the floor's seed does the same)."""
    if fleet.engine.dialect.name == "postgresql":
        with fleet.engine.connect() as connection:
            connection.execute(text("ANALYZE"))
            connection.commit()


def beside_floor(result: dict[str, Any], floor: dict[str, Any]) -> dict[str, Any]:
    """The figure with the floor's and bcfleet's share of it (placements/s over the floor's)."""
    result["floor"] = {k: floor[k] for k in ("perSecond", "p50Ms", "p99Ms")}
    result["shareOfFloorPct"] = round(100 * result["perSecond"] / floor["perSecond"], 1)
    return result


def run_one(url: str, hosts: int, placements: int) -> dict[str, Any]:
    fleet = Fleet.open(url, clock=FakeClock(T0), settings=FleetSettings(db_url=url))
    pool = seed_pool(fleet, hosts)
    analyze(fleet)

    def place() -> None:
        made = fleet.api.instances.create(
            LOCAL_OPERATOR, tenant_id="bench", pool_id=pool["id"], flavor="b1.small"
        )
        assert made["state"] == "running"

    timed(place, 20)  # warm caches
    result = summary(timed(place, placements))
    fleet.close()
    return result


def _worker(url: str, pool_id: str, count: int, out: Any) -> None:
    fleet = Fleet.open(url, clock=FakeClock(T0), settings=FleetSettings(db_url=url))

    def place() -> None:
        fleet.api.instances.create(
            LOCAL_OPERATOR, tenant_id="bench", pool_id=pool_id, flavor="b1.small"
        )

    out.put(timed(place, count))


def run_processes(url: str, hosts: int, placements: int, processes: int) -> dict[str, Any]:
    fleet = Fleet.open(url, clock=FakeClock(T0), settings=FleetSettings(db_url=url))
    pool = seed_pool(fleet, hosts)
    analyze(fleet)
    queue: Any = multiprocessing.Queue()
    workers = [
        multiprocessing.Process(target=_worker, args=(url, pool["id"], placements, queue))
        for _ in range(processes)
    ]
    start = time.perf_counter()
    for worker in workers:
        worker.start()
    samples: list[float] = []
    for _ in workers:
        samples.extend(queue.get())
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - start
    invariants = fleet.api.doctor.check(LOCAL_OPERATOR, invariants=True)["invariants"]
    fleet.close()
    result = summary(samples)
    result["perSecond"] = round(len(samples) / elapsed, 1)
    result["invariantsOk"] = invariants["ok"]
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--placements", type=int, default=500)
    parser.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument("--processes", type=int, default=4)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for hosts in args.hosts:
        with tempfile.TemporaryDirectory() as tmp:
            results[f"sqlite_{hosts}"] = beside_floor(
                run_one(f"sqlite:///{tmp}/bench.db", hosts, args.placements),
                floor_sqlite(hosts, args.placements),
            )
        if not args.no_pg:
            results[f"postgres_{hosts}"] = beside_floor(
                run_one(fresh_pg(args.pg), hosts, args.placements),
                floor_pg(args.pg, hosts, args.placements),
            )
    if not args.no_pg and args.processes > 1:
        hosts, each = max(args.hosts), args.placements // args.processes
        results[f"postgres_{hosts}_{args.processes}proc"] = beside_floor(
            run_processes(fresh_pg(args.pg), hosts, each, args.processes),
            floor_pg_processes(args.pg, hosts, each, args.processes),
        )
    results["peakRssMb"] = peak_rss_mb()
    emit(results)


if __name__ == "__main__":
    main()

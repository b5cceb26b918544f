"""Placement throughput: placements/s, p50/p99 and peak RSS at 1,000 and 5,000 hosts, SQLite and PostgreSQL.

Hosts have 64 vCPU (ratio 2), 256 GiB and 2 TB; the flavor is 2 vCPU / 4 GiB / 40 GiB (issue 4's
setup). `--processes 4` also runs four processes placing at once (PostgreSQL), for one tenant and for
four tenants, and then checks the invariants; each run of the four is paired with one process
placing as many in the same harness just before it, and `scaleOverOneProcess` is the median
ratio of the pairs (`--pairs`, default 3). Each figure is printed beside the floor's (bench/floor_placement.py: the raw
transaction on the same pool, run in the same process run) and its share of the floor, so a
noisy machine cannot fake progress. One process's figures also give the CPU a placement took
(`clientCpuMs`: the placing process, all its threads; `backendCpuMs`: its PostgreSQL backends,
from /proc, when the server runs on this machine) and `cpuShareOfFloorPct`, the floor's CPU
over bcfleet's: on a shared machine wall time moves with the neighbours, CPU time much less.
Prints a JSON line last.

    python bench/bench_placement.py [--hosts 1000 5000] [--placements 500] [--pg URL] [--processes 4]
        [--no-pg] [--inline-checkpoints] [--pairs 3]
"""

from __future__ import annotations

import argparse
import multiprocessing
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import create_engine, text  # noqa: E402

from bcfleet.api.auth import LOCAL_OPERATOR  # noqa: E402
from bcfleet.clock import FakeClock  # noqa: E402
from bcfleet.fleet import Fleet  # noqa: E402
from bcfleet.settings import FleetSettings  # noqa: E402
from bcfleet.store import wal_checkpoints  # noqa: E402
from bcfleet.store.engine import is_sqlite  # noqa: E402
from bench.common import (  # noqa: E402
    T0,
    analyze,
    emit,
    peak_rss_mb,
    scratch_pg,
    seed_pool,
    summary,
    timed,
    timed_with_cpu,
)
from bench.floor_placement import floor_pg, floor_pg_processes, floor_sqlite  # noqa: E402

CPU_KEYS = ("clientCpuMs", "backendCpuMs")


def beside_floor(result: dict[str, Any], floor: dict[str, Any]) -> dict[str, Any]:
    """The figure with the floor's and bcfleet's share of it: placements/s over the floor's and,
    where both were measured, the floor's CPU a placement (process and backend) over bcfleet's."""
    result["floor"] = {
        k: floor[k] for k in ("perSecond", "p50Ms", "p99Ms", *CPU_KEYS) if k in floor
    }
    result["shareOfFloorPct"] = round(100 * result["perSecond"] / floor["perSecond"], 1)
    if all((k in result) == (k in floor) for k in CPU_KEYS) and "clientCpuMs" in result:
        ours = sum(result.get(k, 0.0) for k in CPU_KEYS)
        theirs = sum(floor.get(k, 0.0) for k in CPU_KEYS)
        result["cpuShareOfFloorPct"] = round(100 * theirs / ours, 1) if ours else None
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
    samples, cpu = timed_with_cpu(place, placements, None if is_sqlite(fleet.engine) else url)
    fleet.close()
    return {**summary(samples), **cpu}


WARM_UP = 20  # placements each process makes before the clock starts, as run_one does
WAIT_S = 900  # a process that died is reported instead of waited for forever


def _worker(url: str, pool_id: str, tenant_id: str, count: int, ready: Any, out: Any) -> None:
    fleet = Fleet.open(url, clock=FakeClock(T0), settings=FleetSettings(db_url=url))

    def place() -> None:
        fleet.api.instances.create(
            LOCAL_OPERATOR, tenant_id=tenant_id, pool_id=pool_id, flavor="b1.small"
        )

    timed(place, WARM_UP)
    ready.wait(WAIT_S)  # all processes open and warm: the clock starts
    out.put(timed(place, count))


def run_processes(
    url: str, hosts: int, placements: int, processes: int, *, tenants: int = 1, pairs: int = 3
) -> dict[str, Any]:
    """`processes` processes placing at once, for one tenant or spread over `tenants` tenants.

    Each of `pairs` rounds runs one process placing as many as all of them together, then the
    `processes` at once, in the same harness (forked, opened and warmed up before the clock
    starts) on the same pool; `scaleOverOneProcess` is the median of the rounds' ratios, so the
    two figures of a ratio are taken minutes, not a whole benchmark, apart.
    """
    fleet = Fleet.open(url, clock=FakeClock(T0), settings=FleetSettings(db_url=url))
    pool = seed_pool(fleet, hosts)
    names = ["bench"] + [f"bench{i}" for i in range(1, tenants)]
    for name in names[1:]:
        fleet.api.tenants.create(LOCAL_OPERATOR, name)
        fleet.api.pools.offer(LOCAL_OPERATOR, tenant_id="root", pool=pool["id"], to=name)
    analyze(fleet)
    samples: list[float] = []
    rates: list[float] = []
    ratios: list[float] = []
    waits: Counter[str] = Counter()
    for _ in range(pairs):
        alone, alone_seconds = _place_at_once(url, pool["id"], names[:1], 1, placements * processes)
        together, seconds = _place_at_once(url, pool["id"], names, processes, placements, waits)
        samples.extend(together)
        rates.append(len(together) / seconds)
        ratios.append(rates[-1] / (len(alone) / alone_seconds))
    invariants = fleet.api.doctor.check(LOCAL_OPERATOR, invariants=True)["invariants"]
    fleet.close()
    result: dict[str, Any] = dict(summary(samples))
    result["perSecond"] = round(statistics.median(rates), 1)
    result["scaleOverOneProcess"] = round(statistics.median(ratios), 2)
    result["scalePerPair"] = [round(r, 2) for r in ratios]
    result["invariantsOk"] = invariants["ok"]
    result["activeSamples"] = sum(waits.values())
    total = result["activeSamples"] or 1
    result["activeSamplesPct"] = {k: round(100 * n / total, 1) for k, n in waits.most_common(6)}
    return result


def _place_at_once(
    url: str,
    pool_id: str,
    names: list[str],
    processes: int,
    placements: int,
    waits: Counter[str] | None = None,
) -> tuple[list[float], float]:
    """Each process's placements' seconds, and the seconds from all being ready to the last done."""
    queue: Any = multiprocessing.Queue()
    ready: Any = multiprocessing.Barrier(processes + 1)
    workers = [
        multiprocessing.Process(
            target=_worker,
            args=(url, pool_id, names[i % len(names)], placements, ready, queue),
        )
        for i in range(processes)
    ]
    for worker in workers:
        worker.start()
    ready.wait(WAIT_S)  # BrokenBarrierError when a process died before it
    done = threading.Event()
    sampler = threading.Thread(
        target=_sample_waits, args=(url, done, Counter() if waits is None else waits)
    )
    sampler.start()
    start = time.perf_counter()
    samples: list[float] = []
    try:
        for _ in workers:
            samples.extend(queue.get(timeout=WAIT_S))
        elapsed = time.perf_counter() - start
        for worker in workers:
            worker.join()
    finally:
        done.set()
        sampler.join()
    return samples, elapsed


_ACTIVE = text(
    "SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') || CASE WHEN wait_event_type = "
    "'Lock' THEN ' ' || left(query, 48) ELSE '' END FROM pg_stat_activity "
    "WHERE datname = current_database() AND state = 'active' AND pid <> pg_backend_pid()"
)


# Seconds between two looks at pg_stat_activity. A look costs its backend about 0.7 ms of CPU and
# the sampler about 0.3 ms: every 5 ms, that took 16 % of a core from the placements being
# measured, on both sides of a pair. Every 50 ms takes under 2 %, and a run of four processes
# still gives some 350 samples.
SAMPLE_EVERY_S = 0.05


def _sample_waits(url: str, done: threading.Event, waits: Counter[str]) -> None:
    """What the placing backends are doing, sampled every SAMPLE_EVERY_S (lock waits show as Lock:…)."""
    engine = create_engine(url)
    with engine.connect() as connection:
        while not done.wait(SAMPLE_EVERY_S):
            waits.update(str(row[0]) for row in connection.execute(_ACTIVE))
            connection.rollback()
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--placements", type=int, default=500)
    parser.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument(
        "--pairs",
        type=int,
        default=3,
        help="rounds of one process, then --processes at once, for scaleOverOneProcess",
    )
    parser.add_argument(
        "--inline-checkpoints",
        action="store_true",
        help="SQLite: no checkpoint thread, SQLite's own rule (the log checkpointed inside the "
        "commit that takes it past 1,000 pages), to compare with store/wal_checkpoints.py",
    )
    args = parser.parse_args()
    if args.inline_checkpoints:
        wal_checkpoints.EVERY_COMMITS = 2**62
        wal_checkpoints.BACKSTOP_PAGES = 1_000
    results: dict[str, Any] = {}
    for hosts in args.hosts:
        with tempfile.TemporaryDirectory() as tmp:
            results[f"sqlite_{hosts}"] = beside_floor(
                run_one(f"sqlite:///{tmp}/bench.db", hosts, args.placements),
                floor_sqlite(hosts, args.placements),
            )
        if not args.no_pg:
            with scratch_pg(args.pg) as url:
                placed = run_one(url, hosts, args.placements)
            results[f"postgres_{hosts}"] = beside_floor(
                placed, floor_pg(args.pg, hosts, args.placements)
            )
    if not args.no_pg and args.processes > 1:
        hosts, each = max(args.hosts), args.placements // args.processes
        floor = floor_pg_processes(args.pg, hosts, each, args.processes)
        for tenants in (1, args.processes):
            name = f"postgres_{hosts}_{args.processes}proc_{tenants}tenant"
            with scratch_pg(args.pg) as url:
                placed = run_processes(
                    url, hosts, each, args.processes, tenants=tenants, pairs=args.pairs
                )
            results[name] = beside_floor(placed, floor)
    results["peakRssMb"] = peak_rss_mb()
    emit(results)


if __name__ == "__main__":
    main()

"""Placement throughput: placements/s, p50/p99 and peak RSS at 1,000 and 5,000 hosts, SQLite and PostgreSQL.

Hosts have 64 vCPU (ratio 2), 256 GiB and 2 TB; the flavor is 2 vCPU / 4 GiB / 40 GiB (issue 4's
setup). `--processes 4` also runs four processes placing at once (PostgreSQL), for one tenant and for
four tenants, and then checks the invariants; each run of the four is paired with one process
placing as many in the same harness just before it, and `scaleOverOneProcess` is the median
ratio of the pairs (`--pairs`, default 3). Those processes are spawned, fresh interpreters as
separate replicas are (`--start-method fork` forks them from this process instead:
bench/processes.py). The floor's four processes are measured the same way, and its
`scaleOverOneProcess` printed beside bcfleet's. Each figure is printed beside the floor's (bench/floor_placement.py: the raw
transaction on the same pool, run in the same process run) and its share of the floor, so a
noisy machine cannot fake progress. One process's figures also give the CPU a placement took
(`clientCpuMs`: the placing process, all its threads; `backendCpuMs`: its PostgreSQL backends,
from /proc, when the server runs on this machine) and `cpuShareOfFloorPct`, the floor's CPU
over bcfleet's: on a shared machine wall time moves with the neighbours, CPU time much less.
Prints a JSON line last.

    python bench/bench_placement.py [--hosts 1000 5000] [--placements 500] [--pg URL] [--processes 4]
        [--no-pg] [--inline-checkpoints] [--pairs 3] [--start-method spawn|fork]
        [--commit-delay US [--commit-siblings N]] [--batch 100 [--batches 30]]

`--batch N` measures placement in batches instead: creates of N instances each (count) at the
largest --hosts, on SQLite beside the floor placing the same N rows in one transaction a batch
(instancesPerSecond, batch p50/p99, shareOfFloorPct), and on PostgreSQL (no floor) unless --no-pg.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
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
from bench.floor_placement import (  # noqa: E402
    batch_summary,
    floor_pg,
    floor_pg_processes,
    floor_sqlite,
    floor_sqlite_batches,
)
from bench.processes import (  # noqa: E402
    START_METHODS,
    WARM_UP,
    at_once,
    pairs_count,
    run_worker,
    scale_pairs,
)

CPU_KEYS = ("clientCpuMs", "backendCpuMs")


def beside_floor(result: dict[str, Any], floor: dict[str, Any]) -> dict[str, Any]:
    """The figure with the floor's and bcfleet's share of it: placements/s over the floor's and,
    where both were measured, the floor's CPU a placement (process and backend) over bcfleet's."""
    result["floor"] = {
        k: floor[k]
        for k in ("perSecond", "p50Ms", "p99Ms", *CPU_KEYS, "scaleOverOneProcess", "scalePerPair")
        if k in floor
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

    timed(place, WARM_UP)  # warm caches
    samples, cpu = timed_with_cpu(place, placements, None if is_sqlite(fleet.engine) else url)
    fleet.close()
    return {**summary(samples), **cpu}


def run_batches(url: str, hosts: int, batch: int, batches: int) -> dict[str, Any]:
    """`batches` creates of `batch` instances each (instances.create_batch), one transaction each."""
    fleet = Fleet.open(url, clock=FakeClock(T0), settings=FleetSettings(db_url=url))
    pool = seed_pool(fleet, hosts)
    analyze(fleet)

    def place() -> None:
        made = fleet.api.instances.create_batch(
            LOCAL_OPERATOR, tenant_id="bench", pool_id=pool["id"], flavor="b1.small", count=batch
        )
        assert made["placed"] == batch, made["reason"]

    timed(place, 2)  # warm caches
    samples, cpu = timed_with_cpu(place, batches, None if is_sqlite(fleet.engine) else url)
    fleet.close()
    return {**batch_summary(samples, batch), **cpu}


def beside_floor_batches(result: dict[str, Any], floor: dict[str, Any]) -> dict[str, Any]:
    """A batch figure with the floor's inserting the same rows, and its share of the floor."""
    result["floor"] = {
        k: floor[k] for k in ("instancesPerSecond", "p50Ms", "p99Ms", *CPU_KEYS) if k in floor
    }
    result["shareOfFloorPct"] = round(
        100 * result["instancesPerSecond"] / floor["instancesPerSecond"], 1
    )
    return result


def _worker(url: str, pool_id: str, tenant_id: str, count: int, ready: Any, out: Any) -> None:
    fleet = Fleet.open(url, clock=FakeClock(T0), settings=FleetSettings(db_url=url))

    def place() -> None:
        fleet.api.instances.create(
            LOCAL_OPERATOR, tenant_id=tenant_id, pool_id=pool_id, flavor="b1.small"
        )

    run_worker(place, count, ready, out)


def run_processes(
    url: str,
    hosts: int,
    placements: int,
    processes: int,
    *,
    tenants: int = 1,
    pairs: int = 3,
    start_method: str = "spawn",
) -> dict[str, Any]:
    """`processes` processes placing at once, for one tenant or spread over `tenants` tenants,
    each round paired with one process placing as many on the same pool (bench/processes.py)."""
    fleet = Fleet.open(url, clock=FakeClock(T0), settings=FleetSettings(db_url=url))
    pool = seed_pool(fleet, hosts)
    names = ["bench"] + [f"bench{i}" for i in range(1, tenants)]
    for name in names[1:]:
        fleet.api.tenants.create(LOCAL_OPERATOR, name)
        fleet.api.pools.offer(LOCAL_OPERATOR, tenant_id="root", pool=pool["id"], to=name)
    analyze(fleet)
    waits: Counter[str] = Counter()

    def sample(done: threading.Event) -> None:
        _sample_waits(url, done, waits)

    each = [(url, pool["id"], names[i % len(names)], placements) for i in range(processes)]
    result = scale_pairs(
        lambda: at_once(
            start_method, _worker, [(url, pool["id"], names[0], placements * processes)], sample
        ),
        lambda: at_once(start_method, _worker, each, sample),
        pairs,
    )
    invariants = fleet.api.doctor.check(LOCAL_OPERATOR, invariants=True)["invariants"]
    fleet.close()
    result["startMethod"] = start_method
    result["invariantsOk"] = invariants["ok"]
    result["activeSamples"] = sum(waits.values())
    total = result["activeSamples"] or 1
    result["activeSamplesPct"] = {k: round(100 * n / total, 1) for k, n in waits.most_common(6)}
    return result


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
        type=pairs_count,
        default=3,
        help="rounds of one process, then --processes at once, for scaleOverOneProcess",
    )
    parser.add_argument(
        "--start-method",
        choices=START_METHODS,
        default="spawn",
        help="how the processes placing at once (and their one-process pairs) are started: spawn, "
        "a fresh interpreter each, as separate replicas; fork, from this process, sharing the "
        "modules it has imported",
    )
    parser.add_argument(
        "--batch",
        type=int,
        help="instead of single placements: creates of this many instances each (count), at "
        "the largest --hosts on SQLite, beside the floor placing the same rows in one "
        "transaction a batch",
    )
    parser.add_argument("--batches", type=int, default=30, help="with --batch: how many batches")
    parser.add_argument(
        "--inline-checkpoints",
        action="store_true",
        help="SQLite: no checkpoint thread, SQLite's own rule (the log checkpointed inside the "
        "commit that takes it past 1,000 pages), to compare with store/wal_checkpoints.py",
    )
    parser.add_argument(
        "--commit-delay",
        type=int,
        default=0,
        help="PostgreSQL: commit_delay (microseconds) for every session of the run, bcfleet's and "
        "the floor's, with commit_siblings --commit-siblings (set by the client: needs a "
        "superuser or SET granted on both; docs/speed.md says how an operator sets them)",
    )
    parser.add_argument("--commit-siblings", type=int, default=1)
    args = parser.parse_args()
    if args.commit_delay:  # libpq sends it with every connection, the spawned processes' too
        os.environ["PGOPTIONS"] = (
            f"{os.environ.get('PGOPTIONS', '')} -c commit_delay={args.commit_delay} "
            f"-c commit_siblings={args.commit_siblings}"
        ).strip()
    if args.inline_checkpoints:
        wal_checkpoints.EVERY_COMMITS = 2**62
        wal_checkpoints.BACKSTOP_PAGES = 1_000
    results: dict[str, Any] = {}
    if args.batch:
        hosts = max(args.hosts)
        with tempfile.TemporaryDirectory() as tmp:
            results[f"sqlite_{hosts}_batch{args.batch}"] = beside_floor_batches(
                run_batches(f"sqlite:///{tmp}/bench.db", hosts, args.batch, args.batches),
                floor_sqlite_batches(hosts, args.batch, args.batches),
            )
        if not args.no_pg:
            with scratch_pg(args.pg) as url:
                results[f"postgres_{hosts}_batch{args.batch}"] = run_batches(
                    url, hosts, args.batch, args.batches
                )
        results["peakRssMb"] = peak_rss_mb()
        emit(results)
        return
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
        floor = floor_pg_processes(
            args.pg, hosts, each, args.processes, pairs=args.pairs, start_method=args.start_method
        )
        for tenants in (1, args.processes):
            name = f"postgres_{hosts}_{args.processes}proc_{tenants}tenant"
            with scratch_pg(args.pg) as url:
                placed = run_processes(
                    url,
                    hosts,
                    each,
                    args.processes,
                    tenants=tenants,
                    pairs=args.pairs,
                    start_method=args.start_method,
                )
            results[name] = beside_floor(placed, floor)
    if args.commit_delay:
        results["commitDelayUs"] = args.commit_delay
        results["commitSiblings"] = args.commit_siblings
    results["peakRssMb"] = peak_rss_mb()
    emit(results)


if __name__ == "__main__":
    main()

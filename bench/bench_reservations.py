"""Benchmark of reservation admission through the API on SQLite: 5,000 nodes × 8 GPUs, 20,000 live spot reservations.

Run from the repository root: `python bench/bench_reservations.py [--nodes N] [--runs R]`.
Two fresh SQLite databases are seeded straight in SQL (bench/seed_reservations.py):
a full pool where every GPU is held by live spot work, and a roomy one where one
node in 25 is empty. Cases, each a whole API call (authorize, one transaction,
commit), timed over --runs calls:

- preempting: reservations.create of a regular 4-GPU request in the full pool;
  every call preempts other spot reservations (it must: nothing is free);
- fits: the same request in the roomy pool, placed without preempting;
- preview: capacity.preview of the preempting request (a read);
- rebuild: building the pool's snapshot from SQL from scratch, what every
  admission would pay without the per-process snapshot (gpu_cache.py, kept in the fleet's placement context).

The first admission of a process builds the snapshot (reported as coldFirstCallMs);
later ones refresh only the nodes whose bookings changed. The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bcfleet.api.auth import LOCAL_OPERATOR  # noqa: E402
from bcfleet.clock import FakeClock  # noqa: E402
from bcfleet.fleet import Fleet  # noqa: E402
from bcfleet.placement.gpu_cache import pool_snapshot  # noqa: E402
from bcfleet.settings import FleetSettings  # noqa: E402
from bench.seed_reservations import seed  # noqa: E402

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def timed(call: Callable[[], object], runs: int) -> dict[str, float]:
    """Wall-clock p50/p99 over `runs` calls, and the CPU-time p50 (steadier on a busy machine)."""
    wall, cpu = [], []
    for _ in range(runs):
        began, began_cpu = time.perf_counter(), time.process_time()
        call()
        wall.append((time.perf_counter() - began) * 1000)
        cpu.append((time.process_time() - began_cpu) * 1000)
    cuts = statistics.quantiles(wall, n=100, method="inclusive")
    return {"p50_ms": round(cuts[49], 3), "p99_ms": round(cuts[98], 3),
            "cpu_p50_ms": round(statistics.median(cpu), 3), "runs": runs}  # fmt: skip


def open_seeded(folder: Path, name: str, nodes: int, empty_every: int) -> tuple[Fleet, str, int]:
    url = f"sqlite:///{folder / name}"
    fleet = Fleet.open(url, clock=FakeClock(NOW), settings=FleetSettings(db_url=url))
    made = seed(fleet, nodes=nodes, empty_every=empty_every)
    return fleet, str(made["pool"]["id"]), int(made["reservations"])


def admit(fleet: Fleet, pool_id: str, expect_preempting: bool) -> Callable[[], object]:
    def call() -> object:
        made = fleet.api.reservations.create(
            LOCAL_OPERATOR, tenant_id="acme", pool_id=pool_id, gpus=4, duration="12h"
        )
        preempting = (
            made["during"] is not None and made["during"]["start"] != made["requestedStart"]
        )
        if made["state"] != "placed" or preempting != expect_preempting:
            raise SystemExit(f"unexpected admission: {made['state']} {made['during']}")
        return made

    return call


def rebuild(fleet: Fleet, pool_id: str) -> Callable[[], object]:
    def call() -> object:
        with fleet.read() as session:
            return pool_snapshot(session, fleet.placement, pool_id, fleet.now(), rebuild=True)

    return call


def preempted_count(fleet: Fleet) -> int:
    found = fleet.api.events.list(LOCAL_OPERATOR, types=["reservation.preempting"], limit=1000)
    return len(found["items"])


def run(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    full, full_pool, spot = open_seeded(folder, "full.db", args.nodes, 0)
    roomy, roomy_pool, _ = open_seeded(folder, "roomy.db", args.nodes, 25)
    began = time.perf_counter()
    admit(full, full_pool, True)()
    cold = (time.perf_counter() - began) * 1000
    admit(roomy, roomy_pool, False)()
    results = {
        "preempting": timed(admit(full, full_pool, True), args.runs),
        "fits": timed(admit(roomy, roomy_pool, False), min(args.runs, 2 * args.nodes // 25 - 1)),
        "preview": timed(
            lambda: full.api.capacity.preview(
                LOCAL_OPERATOR, tenant_id="acme", pool_id=full_pool, gpus=4, duration="12h"
            ),
            args.runs,
        ),  # fmt: skip
        "rebuild": timed(rebuild(full, full_pool), max(args.runs // 20, 3)),
    }
    summary = {"nodes": args.nodes, "gpus": args.nodes * 8, "spotReservations": spot,
               "preemptingEvents": preempted_count(full), "coldFirstCallMs": round(cold, 1),
               **results}  # fmt: skip
    full.close()
    roomy.close()
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        summary = run(args, Path(folder))
    for name in ("preempting", "fits", "preview", "rebuild"):
        numbers = summary[name]
        print(f"{name:11s} p50 {numbers['p50_ms']:8.3f} ms   p99 {numbers['p99_ms']:8.3f} ms   "
              f"cpu p50 {numbers['cpu_p50_ms']:8.3f} ms")  # fmt: skip
    summary["peakRssMiB"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

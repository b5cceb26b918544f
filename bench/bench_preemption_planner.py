"""Benchmark of the pure GPU and preemption planners on a 5,000 × 8-GPU pool full of spot work.

Run from the repository root: `python bench/bench_preemption_planner.py [--nodes N] [--runs R]`.
The pool's every atom is held by one of 20,000 live spot reservations (four per
node, 1 to 4 GPUs each, active now, ending within a day), so a regular request
must preempt. Cases, each timed over --runs calls on one prebuilt snapshot:

- preempting: plan_placement (fails, explains why) then plan_preemption, the
  planner work of an admission that preempts;
- fits: plan_placement on the same pool with 1 node in 50 left empty;
- preview: capacity.preview of the preempting request;
- gang2: a regular 2 × 4 GPU gang, plan_placement then plan_preemption;
- later: plan_placement of the request starting in 6 hours, when bookings only
  partly overlap the window and each node's bookings are walked.
- snapshot: building the GpuSnapshot of the whole pool from its 40,000 bookings;
- refresh: GpuSnapshot.with_bookings reloading the one node a write touched.
The last line is one JSON document.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bcfleet.domain.gpu_plan import (  # noqa: E402
    AtomBooking,
    GpuNode,
    GpuRequest,
    GpuSnapshot,
    plan_placement,
)
from bcfleet.domain.preemption import plan_preemption, preview  # noqa: E402

NOW = datetime(2026, 9, 21, 10, 0, tzinfo=UTC)
NOTICE = timedelta(minutes=2)
SIZES = ((2, 2, 2, 2), (4, 2, 1, 1), (1, 1, 2, 4), (2, 1, 4, 1))


def build(nodes: int, empty_every: int, seed: int = 7) -> tuple[list[GpuNode], list[AtomBooking]]:
    """Nodes of 8 GPUs, each filled by four spot reservations unless it is an empty one."""
    rng = random.Random(seed)
    node_list: list[GpuNode] = []
    bookings: list[AtomBooking] = []
    for n in range(nodes):
        atoms = tuple(f"gpu_{n:05d}_{i}" for i in range(8))
        node_list.append(GpuNode(f"node_{n:05d}", f"host-{n:05d}", atoms))
        if empty_every and n % empty_every == 0:
            continue
        taken = 0
        for r, size in enumerate(SIZES[n % len(SIZES)]):
            start = NOW - timedelta(minutes=rng.randint(1, 600))
            end = NOW + timedelta(minutes=rng.randint(60, 1440))
            holder = f"rsv_spot_{n:05d}_{r}"
            for atom in atoms[taken : taken + size]:
                bookings.append(AtomBooking(atom, holder, start, end, spot=True, state="active"))
            taken += size
    return node_list, bookings


def timed(call: Callable[[], object], runs: int) -> dict[str, float]:
    """Wall-clock p50/p99 over `runs` calls, and the CPU-time p50 (steadier on a busy machine)."""
    wall, cpu = [], []
    for _ in range(runs):
        began, began_cpu = time.perf_counter(), time.process_time()
        call()
        wall.append((time.perf_counter() - began) * 1000)
        cpu.append((time.process_time() - began_cpu) * 1000)
    cuts = statistics.quantiles(wall, n=100, method="inclusive")
    return {
        "p50_ms": round(cuts[49], 3),
        "p99_ms": round(cuts[98], 3),
        "cpu_p50_ms": round(statistics.median(cpu), 3),
        "runs": runs,
    }


def admission(snapshot: GpuSnapshot, request: GpuRequest) -> object:
    placed = plan_placement(snapshot, request, free_spot=False, limit=64)
    if placed.fits:
        return placed
    plan = plan_preemption(snapshot, request, NOW, NOTICE, 64)
    if plan is None or not plan.victims:
        raise SystemExit("the benchmark pool should force a preemption")
    return plan


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()

    nodes, bookings = build(args.nodes, empty_every=0)
    reservations = len({booking.holder_id for booking in bookings})
    full = GpuSnapshot(nodes, bookings)
    roomy = GpuSnapshot(*build(args.nodes, empty_every=50))

    single = GpuRequest(4, NOW, NOW + timedelta(hours=12))
    gang = GpuRequest(4, NOW, NOW + timedelta(hours=12), nodes=2)
    later = GpuRequest(4, NOW + timedelta(hours=6), NOW + timedelta(hours=18))
    touched = nodes[0].id
    fresh = [booking for booking in bookings if booking.atom_id in nodes[0].atoms]
    if not plan_placement(roomy, single).fits:
        raise SystemExit("the roomy pool should fit without preemption")
    results = {
        "preempting": timed(lambda: admission(full, single), args.runs),
        "fits": timed(lambda: plan_placement(roomy, single, limit=64), args.runs),
        "preview": timed(lambda: preview(full, single, NOW, NOTICE), args.runs),
        "gang2": timed(lambda: admission(full, gang), args.runs),
        "later": timed(lambda: plan_placement(full, later, limit=64), args.runs),
        "snapshot": timed(lambda: GpuSnapshot(nodes, bookings), max(args.runs // 10, 5)),
        "refresh": timed(lambda: full.with_bookings([touched], fresh), args.runs),
    }
    for name, numbers in results.items():
        print(f"{name:11s} p50 {numbers['p50_ms']:8.3f} ms   p99 {numbers['p99_ms']:8.3f} ms")
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    summary = {
        "nodes": args.nodes,
        "gpus": args.nodes * 8,
        "spotReservations": reservations,
        "bookings": len(bookings),
        **results,
        "peakRssMiB": round(peak_mib, 1),
    }
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

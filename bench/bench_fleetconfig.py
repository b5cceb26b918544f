"""FleetConfig at scale: validate + plan, apply and the no-change plan of a 10,000-object document.

The document has 100 pools × 100 flavors, 50 tenants (each pool offered to one) and a quota
per pool. Each stage runs in a fresh process, as the CLI would, so its peak RSS is its own:

- plan-empty: validate + plan against an empty database;
- apply-empty: validate + plan + apply (`fleet apply -f --yes`) on the empty database;
- plan-matching: validate + plan against the database the apply left: no changes.

Seconds are wall clock and CPU of the stage after imports; targets on SQLite: plan < 1 s,
apply < 10 s. Prints a JSON line last.

    python bench/bench_fleetconfig.py [--pools 100] [--flavors 100] [--pg URL]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import emit, peak_rss_mb, scratch_pg  # noqa: E402

TARGETS = {"plan-empty": 1.0, "plan-matching": 1.0, "apply-empty": 10.0}


def document(pools: int, flavors: int, tenants: int = 50) -> str:
    """A valid FleetConfig of pools × flavors flavors, with tenants, offers and quotas."""
    lines = ["apiVersion: bcfleet.dev/v1", "kind: FleetConfig", "tenants:", "  - { id: root }"]
    lines += [f"  - {{ id: t{t:03d}, name: Tenant {t} }}" for t in range(tenants)]
    lines.append("pools:")
    for p in range(pools):
        lines.append(
            f"  - {{ name: pool-{p:03d}, kind: vps-host, offeredTo: [t{p % tenants:03d}], "
            "policy: { overcommit: { vcpu: 2, memoryGiB: 1.5 }, hostReserve: { vcpu: 2 } } }"
        )
    lines.append("flavors:")
    for p in range(pools):
        for f in range(flavors):
            lines.append(
                f"  - {{ pool: pool-{p:03d}, name: f{f:03d}.x{f % 7}, vcpu: {1 + f % 8}, "
                f"memoryGiB: {2 + f % 16}, diskGiB: {10 + f} }}"
            )
    lines.append("quotas:")
    for p in range(pools):
        lines.append(
            f"  - {{ tenant: t{p % tenants:03d}, pool: pool-{p:03d}, vcpu: 64, memoryGiB: 256 }}"
        )
    return "\n".join(lines) + "\n"


def stage(name: str, url: str, path: str) -> dict[str, Any]:
    """One stage in this process; returns its numbers."""
    from bcfleet.api.auth import LOCAL_OPERATOR
    from bcfleet.fleet import Fleet
    from bcfleet.reconcile.apply import Approved, apply, make_plan, plan_json
    from bcfleet.reconcile.load import load_fleetconfig

    fleet = Fleet.open(url)
    wall, cpu = time.perf_counter(), time.process_time()
    desired = load_fleetconfig(path, host_reserve=fleet.settings.host_reserve)
    loaded = time.perf_counter() - wall
    result = make_plan(fleet, LOCAL_OPERATOR, desired)
    numbers: dict[str, Any] = {"objects": desired.object_count, "loadSeconds": round(loaded, 3)}
    numbers["changes"] = len(result.changes)
    if name == "apply-empty":
        applying = time.perf_counter()
        approved = Approved(desired, plan_json(result), auto_approve=True)
        done = apply(fleet, LOCAL_OPERATOR, approved)
        numbers["applySeconds"] = round(time.perf_counter() - applying, 3)
        numbers["message"] = done.message
    numbers["seconds"] = round(time.perf_counter() - wall, 3)
    numbers["cpuSeconds"] = round(time.process_time() - cpu, 3)
    numbers["peakRssMb"] = peak_rss_mb()
    fleet.close()
    return numbers


def run_stage(name: str, url: str, path: str) -> dict[str, Any]:
    command = [sys.executable, __file__, "--stage", name, "--db", url, "--file", path]
    finished = subprocess.run(command, capture_output=True, text=True, check=True)
    numbers: dict[str, Any] = json.loads(finished.stdout.strip().splitlines()[-1])
    target = TARGETS[name]
    numbers["target"] = target
    numbers["met"] = numbers["seconds"] < target
    print(f"{name:14} {numbers['seconds']:7.3f} s  (cpu {numbers['cpuSeconds']:.3f} s, "
          f"target < {target:g} s)  peak RSS {numbers['peakRssMb']} MB  "
          f"changes {numbers['changes']}")  # fmt: skip
    return numbers


def run_engine(url: str, path: str) -> dict[str, Any]:
    return {
        name: run_stage(name, url, path) for name in ("plan-empty", "apply-empty", "plan-matching")
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pools", type=int, default=100)
    parser.add_argument("--flavors", type=int, default=100)
    parser.add_argument("--pg", help="also run on PostgreSQL (an admin URL to create a database)")
    parser.add_argument("--stage", choices=sorted(TARGETS), help=argparse.SUPPRESS)
    parser.add_argument("--db", help=argparse.SUPPRESS)
    parser.add_argument("--file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.stage:
        emit(stage(args.stage, args.db, args.file))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "fleet.yaml")
        Path(path).write_text(document(args.pools, args.flavors))
        results: dict[str, Any] = {"pools": args.pools, "flavorsPerPool": args.flavors}
        print("SQLite")
        results["sqlite"] = run_engine(f"sqlite:///{tmp}/fleet.db", path)
        if args.pg:
            print("PostgreSQL")
            with scratch_pg(args.pg) as url:
                results["postgres"] = run_engine(url, path)
    emit(results)


if __name__ == "__main__":
    main()

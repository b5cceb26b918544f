"""Instructions a placement takes, counted by callgrind: a figure a noisy machine cannot move.

On a shared machine a placement's wall and CPU time move by a quarter from one run to the next,
so a change of a few per cent cannot be seen in them. valgrind's callgrind counts the
instructions a process runs instead. With the ids seeded, no WAL checkpoint thread and a fixed
hash seed, the count repeats to well under 0.1 %. Each side runs twice under callgrind, once
with --before placements and once with --before + --placements. The difference over
--placements is the count a placement, with the set-up and the warm-up taken out. That side is
bcfleet's `instances.create`, and beside it the raw floor's placement (bench/floor_placement.py)
on the same pool. The count is the placing process's, SQLite included. With --pg, each count
is on a fresh PostgreSQL database beside the one given, and is the client's alone (Python,
psycopg and libpq; neither the server's work nor the kernel's socket writes are counted). It
repeats about as closely: under valgrind the client is slow enough that the server has
answered by the time it looks, so it polls alike from run to run.
Instructions are not seconds: a change that adds cache misses can cost time the count does
not show. Use it beside bench_placement.py, not instead of it. Needs valgrind. Prints a JSON
line last.

With --batch N it counts placement in batches instead: bcfleet's instances.create_batch of N
instances against the floor's place_many(N) (the same N rows in one transaction), --before and
--placements then counting batches (defaults 1 and 4), and the figures are per instance.

    python bench/count_placement.py [--hosts 1000] [--before 50] [--placements 200] [--pg URL]
    python bench/count_placement.py --batch 100 [--before 1] [--placements 4]
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import emit  # noqa: E402

SIDES = ("bcfleet", "floor")
_COLLECTED = re.compile(r"Collected : (\d+)")


def place(side: str, hosts: int, count: int, pg: str | None = None, batch: int = 0) -> int:
    """In the counted child: a fresh pool of `hosts` (SQLite, or a scratch database beside the
    PostgreSQL URL `pg`), then `count` placements (with `batch`: `count` batches of `batch`);
    how many placed."""
    from bcfleet.store import wal_checkpoints

    kept = wal_checkpoints.EVERY_COMMITS, wal_checkpoints.BACKSTOP_PAGES
    wal_checkpoints.EVERY_COMMITS = 2**62  # no thread: when it wakes is not repeatable
    wal_checkpoints.BACKSTOP_PAGES = 10**9
    try:
        if pg is None:
            with tempfile.TemporaryDirectory() as tmp:
                return _place(side, hosts, count, f"sqlite:///{tmp}/count.db", batch)
        from bench.common import scratch_pg

        with scratch_pg(pg, "bcfleet_count") as url:
            return _place(side, hosts, count, url, batch)
    finally:
        wal_checkpoints.EVERY_COMMITS, wal_checkpoints.BACKSTOP_PAGES = kept


def _place(side: str, hosts: int, count: int, url: str, batch: int = 0) -> int:
    sqlite = url.startswith("sqlite")
    if side == "floor":
        from bench.floor_placement import Floor, pg_connection, seed, sqlite_connection

        connection: Any = (
            sqlite_connection(url.removeprefix("sqlite:///")) if sqlite else pg_connection(url)
        )
        seed(connection, sqlite, hosts)
        floor = Floor(connection, sqlite)
        if batch:
            for _ in range(count):
                floor.place_many(batch)  # all of them, or it raises
            connection.close()
            return count * batch
        placed = sum(1 for _ in range(count) if floor.place())  # the host, or it raises
        connection.close()
        return placed
    from bcfleet.api.auth import LOCAL_OPERATOR
    from bcfleet.clock import FakeClock
    from bcfleet.fleet import Fleet
    from bcfleet.ids import IdFactory
    from bcfleet.settings import FleetSettings
    from bench.common import T0, analyze, seed_pool

    fleet = Fleet.open(
        url, clock=FakeClock(T0), settings=FleetSettings(db_url=url), ids=IdFactory(seed=7)
    )
    pool = seed_pool(fleet, hosts)
    analyze(fleet)  # PostgreSQL: as bench_placement.py does, and as the floor's seed does
    if batch:
        batches = [
            fleet.api.instances.create_batch(
                LOCAL_OPERATOR,
                tenant_id="bench",
                pool_id=pool["id"],
                flavor="b1.small",
                count=batch,
            )
            for _ in range(count)
        ]
        fleet.close()
        return sum(made["placed"] for made in batches)
    made = [
        fleet.api.instances.create(
            LOCAL_OPERATOR, tenant_id="bench", pool_id=pool["id"], flavor="b1.small"
        )
        for _ in range(count)
    ]
    fleet.close()
    return sum(1 for instance in made if instance["state"] == "running")


def counted(side: str, hosts: int, count: int, pg: str | None = None, batch: int = 0) -> int:
    """Instructions of a child process making `count` placements (with `batch`: `count` batches
    of `batch`), as callgrind counted them."""
    args = [__file__, "--child", side, "--hosts", str(hosts), "--placements", str(count)]
    args += ["--batch", str(batch)] if batch else []
    return instructions([*args, *(["--pg", pg] if pg else [])], f"the counted {side} child")


def instructions(args: list[str], what: str) -> int:
    """Instructions of `python ARGS` run to its end under callgrind, with a fixed hash seed."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={tmp}/callgrind.out",
            sys.executable,
            *args,
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    found = _COLLECTED.findall(done.stderr)
    if done.returncode != 0 or not found:
        raise SystemExit(f"{what} failed ({done.returncode}): {done.stderr[-500:]}")
    return int(found[-1])


def per_placement(
    side: str, hosts: int, before: int, placements: int, pg: str | None = None, batch: int = 0
) -> int:
    """Instructions a placement: the count with before + placements less the count with before,
    over placements (the two children run at once). With `batch`, before and placements count
    batches, and the figure is per instance."""
    with ThreadPoolExecutor(max_workers=2) as pool:  # each count is a process of its own
        warm, total = pool.map(
            lambda count: counted(side, hosts, count, pg, batch), (before, before + placements)
        )
    return round((total - warm) / (placements * (batch or 1)))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument(
        "--before", type=int, help="placements (batches) taken out as warm-up: 50 (1)"
    )
    parser.add_argument("--placements", type=int, help="placements (batches) counted: 200 (4)")
    parser.add_argument(
        "--batch", type=int, default=0, help="count creates of BATCH instances (create_batch)"
    )
    parser.add_argument("--pg", help="a PostgreSQL admin URL: count on scratch databases beside it")
    parser.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # counted: --placements is the child's whole count, the warm-up's may be 0
        place(args.child, args.hosts, args.placements, args.pg, args.batch)
        return
    if args.before is None:
        args.before = 1 if args.batch else 50
    if args.placements is None:
        args.placements = 4 if args.batch else 200
    if args.hosts < 1 or args.placements < 1 or args.before < 0 or args.batch < 0:
        parser.error("--hosts and --placements must be at least 1, --before and --batch at least 0")
    if shutil.which("valgrind") is None:
        sys.exit("count_placement.py needs valgrind (callgrind counts the instructions)")
    ours, floor = (
        per_placement(side, args.hosts, args.before, args.placements, args.pg, args.batch)
        for side in SIDES
    )
    unit = "Instance" if args.batch else "Placement"
    emit(
        {
            "engine": "postgresql" if args.pg else "sqlite",
            "hosts": args.hosts,
            **({"batch": args.batch, "batches": args.placements} if args.batch else {}),
            **({} if args.batch else {"placements": args.placements}),
            f"bcfleetInstructionsPer{unit}": ours,
            f"floorInstructionsPer{unit}": floor,
            "floorShareOfInstructionsPct": round(100 * floor / ours, 2),
        }
    )


if __name__ == "__main__":
    main()

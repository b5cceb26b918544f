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

    python bench/count_placement.py [--hosts 1000] [--before 50] [--placements 200] [--pg URL]
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


def place(side: str, hosts: int, count: int, pg: str | None = None) -> int:
    """In the counted child: a fresh pool of `hosts` (SQLite, or a scratch database beside the
    PostgreSQL URL `pg`), then `count` placements; how many placed."""
    from bcfleet.store import wal_checkpoints

    kept = wal_checkpoints.EVERY_COMMITS, wal_checkpoints.BACKSTOP_PAGES
    wal_checkpoints.EVERY_COMMITS = 2**62  # no thread: when it wakes is not repeatable
    wal_checkpoints.BACKSTOP_PAGES = 10**9
    try:
        if pg is None:
            with tempfile.TemporaryDirectory() as tmp:
                return _place(side, hosts, count, f"sqlite:///{tmp}/count.db")
        from bench.common import scratch_pg

        with scratch_pg(pg, "bcfleet_count") as url:
            return _place(side, hosts, count, url)
    finally:
        wal_checkpoints.EVERY_COMMITS, wal_checkpoints.BACKSTOP_PAGES = kept


def _place(side: str, hosts: int, count: int, url: str) -> int:
    sqlite = url.startswith("sqlite")
    if side == "floor":
        from bench.floor_placement import Floor, pg_connection, seed, sqlite_connection

        connection: Any = (
            sqlite_connection(url.removeprefix("sqlite:///")) if sqlite else pg_connection(url)
        )
        seed(connection, sqlite, hosts)
        floor = Floor(connection, sqlite)
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
    made = [
        fleet.api.instances.create(
            LOCAL_OPERATOR, tenant_id="bench", pool_id=pool["id"], flavor="b1.small"
        )
        for _ in range(count)
    ]
    fleet.close()
    return sum(1 for instance in made if instance["state"] == "running")


def counted(side: str, hosts: int, count: int, pg: str | None = None) -> int:
    """Instructions of a child process making `count` placements, as callgrind counted them."""
    args = [__file__, "--child", side, "--hosts", str(hosts), "--placements", str(count)]
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
    side: str, hosts: int, before: int, placements: int, pg: str | None = None
) -> int:
    """Instructions a placement: the count with before + placements less the count with before,
    over placements (the two children run at once)."""
    with ThreadPoolExecutor(max_workers=2) as pool:  # each count is a process of its own
        warm, total = pool.map(
            lambda count: counted(side, hosts, count, pg), (before, before + placements)
        )
    return round((total - warm) / placements)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--before", type=int, default=50, help="placements taken out as warm-up")
    parser.add_argument("--placements", type=int, default=200, help="placements counted")
    parser.add_argument("--pg", help="a PostgreSQL admin URL: count on scratch databases beside it")
    parser.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:  # counted: --placements is the child's whole count, the warm-up's may be 0
        place(args.child, args.hosts, args.placements, args.pg)
        return
    if args.hosts < 1 or args.placements < 1 or args.before < 0:
        parser.error("--hosts and --placements must be at least 1, --before at least 0")
    if shutil.which("valgrind") is None:
        sys.exit("count_placement.py needs valgrind (callgrind counts the instructions)")
    ours, floor = (
        per_placement(side, args.hosts, args.before, args.placements, args.pg) for side in SIDES
    )
    emit(
        {
            "engine": "postgresql" if args.pg else "sqlite",
            "hosts": args.hosts,
            "placements": args.placements,
            "bcfleetInstructionsPerPlacement": ours,
            "floorInstructionsPerPlacement": floor,
            "floorShareOfInstructionsPct": round(100 * floor / ours, 2),
        }
    )


if __name__ == "__main__":
    main()

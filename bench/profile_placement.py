"""Where the time of one placement goes: statements per placement, time in the driver, the Python around it.

The pool and flavor of bench_placement.py; after a warm-up, --placements placements run under
cProfile while every statement is counted and timed at the cursor (and as many before, without
the profiler, for the plain figures). Prints the heaviest
functions (cumulative), the statements by kind, and a JSON line last. On PostgreSQL the
statement log is a listener on the engine, so the statements go through psycopg's cursors
instead of straight to libpq (store/driver_sql._by_libpq): its figures are that path's, several
times slower than bench_placement.py's; profile the libpq path without the log (cProfile or
py-spy around instances.create).

    python bench/profile_placement.py [--hosts 5000] [--placements 300] [--db URL] [--sort tottime]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import tempfile
import time
from collections import Counter
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import event  # noqa: E402

from bcfleet.api.auth import LOCAL_OPERATOR  # noqa: E402
from bcfleet.clock import FakeClock  # noqa: E402
from bcfleet.fleet import Fleet  # noqa: E402
from bcfleet.settings import FleetSettings  # noqa: E402
from bench.common import T0, analyze, emit, scratch_pg, seed_pool  # noqa: E402


class StatementLog:
    """Counts and times every statement the fleet's engine sends to the driver."""

    def __init__(self) -> None:
        self.kinds: Counter[str] = Counter()
        self.kind_seconds: Counter[str] = Counter()
        self.seconds = 0.0
        self._started: list[float] = []

    def attach(self, engine: Any) -> None:
        event.listen(engine, "before_cursor_execute", self._before)
        event.listen(engine, "after_cursor_execute", self._after)

    def _before(self, *_args: Any) -> None:
        self._started.append(time.perf_counter())

    def _after(self, _conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        took = time.perf_counter() - self._started.pop()
        self.seconds += took
        words = statement.split()
        kind = words[0].upper() if words else "?"
        if kind in ("INSERT", "UPDATE", "DELETE") and len(words) > 2:
            table = words[2] if kind != "UPDATE" else words[1]
            kind = f"{kind} {table.strip(chr(34))}"
        elif kind == "SELECT" and "FROM" in statement:
            kind = "SELECT " + statement.split("FROM", 1)[1].split()[0].strip(chr(34))
        self.kinds[kind] += 1
        self.kind_seconds[kind] += took


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=5000)
    parser.add_argument("--placements", type=int, default=300)
    parser.add_argument("--db", help="a PostgreSQL admin URL (default: a fresh SQLite file)")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="cumulative", help="pstats order: cumulative, tottime")
    args = parser.parse_args()
    with ExitStack() as scratch:
        tmp = scratch.enter_context(tempfile.TemporaryDirectory())
        url = (
            scratch.enter_context(scratch_pg(args.db)) if args.db else f"sqlite:///{tmp}/profile.db"
        )
        fleet = Fleet.open(url, clock=FakeClock(T0), settings=FleetSettings(db_url=url))
        pool = seed_pool(fleet, args.hosts)
        analyze(fleet)

        def place() -> None:
            fleet.api.instances.create(
                LOCAL_OPERATOR, tenant_id="bench", pool_id=pool["id"], flavor="b1.small"
            )

        for _ in range(20):
            place()
        log = StatementLog()
        log.attach(fleet.engine)
        start = time.perf_counter()
        for _ in range(args.placements):
            place()
        plain = time.perf_counter() - start
        plain_driver, log.seconds = log.seconds, 0.0
        plain_kinds = dict(log.kind_seconds)
        log.kinds.clear()
        profile = cProfile.Profile()
        start = time.perf_counter()
        profile.enable()
        for _ in range(args.placements):
            place()
        profile.disable()
        elapsed = time.perf_counter() - start
        fleet.close()
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats(args.sort).print_stats(args.top)
    sys.stdout.write(out.getvalue())
    n = args.placements
    for kind, count in log.kinds.most_common():
        ms = 1000 * plain_kinds.get(kind, 0.0) / n
        sys.stdout.write(f"{count / n:6.2f} per placement {ms:7.3f} ms  {kind}\n")
    emit(
        {
            "placements": n,
            "statementsPerPlacement": round(sum(log.kinds.values()) / n, 2),
            "msPerPlacement": round(1000 * plain / n, 3),
            "driverMsPerPlacement": round(1000 * plain_driver / n, 3),
            "profiledMsPerPlacement": round(1000 * elapsed / n, 3),
            "profiledDriverMsPerPlacement": round(1000 * log.seconds / n, 3),
        }
    )


if __name__ == "__main__":
    main()

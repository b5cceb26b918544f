"""The floor: the cheapest correct placement transaction this machine runs, raw drivers and no ORM.

The same pool as bench_placement.py (hosts of 64 vCPU at ratio 2, 256 GiB and 2 TB; a 2/4/40
flavor) in three bare tables, on sqlite3 (WAL, synchronous=NORMAL, BEGIN IMMEDIATE, as bcfleet's
engine) and on psycopg. One placement is one transaction: the candidate query (first feasible
host after a rotating cursor), the guarded claim UPDATE (`allocated + claim <= capacity` in the
WHERE; all three rows or the host is skipped) and the allocation INSERT. No quota, no events, no
revision: what bcfleet does beyond this is what its share of the floor measures. On PostgreSQL
its joins are nested loops only (NESTED_LOOPS_ONLY), so its speed does not depend on where in the
pool its cursor is. `--processes 4` runs four processes at once, paired with one process, as
bench_placement.py runs bcfleet's (bench/processes.py).

    python bench/floor_placement.py [--hosts 5000] [--placements 500] [--pg URL] [--processes 4]
        [--pairs 3] [--start-method spawn|fork]
"""

from __future__ import annotations

import argparse
import sqlite3
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

import psycopg

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import (  # noqa: E402
    emit,
    libpq_url,
    scratch_pg,
    summary,
    timed,
    timed_with_cpu,
)
from bench.processes import (  # noqa: E402
    START_METHODS,
    at_once,
    pairs_count,
    run_worker,
    scale_pairs,
)

FLAVOR = {"vcpu": 2, "memoryGiB": 4, "diskGiB": 40}
HOST = (("vcpu", 64, 2.0), ("memoryGiB", 256, 1.0), ("diskGiB", 2000, 1.0))
POOL = "pool-floor"
TABLES = (
    "CREATE TABLE hosts (id VARCHAR PRIMARY KEY, pool_id VARCHAR NOT NULL, "
    "state VARCHAR NOT NULL, inventory_generation INTEGER NOT NULL)",
    "CREATE TABLE node_resources (node_id VARCHAR NOT NULL REFERENCES hosts(id), "
    "resource VARCHAR NOT NULL, allocatable INTEGER NOT NULL, ratio FLOAT NOT NULL, "
    "capacity INTEGER NOT NULL, allocated INTEGER NOT NULL, PRIMARY KEY (node_id, resource))",
    "CREATE TABLE allocations (id VARCHAR PRIMARY KEY, node_id VARCHAR NOT NULL "
    "REFERENCES hosts(id), tenant_id VARCHAR NOT NULL, vcpu INTEGER NOT NULL, "
    "memory_gib INTEGER NOT NULL, disk_gib INTEGER NOT NULL)",
    "CREATE INDEX ix_hosts_pool ON hosts (pool_id, id)",
)
CANDIDATE = (
    "SELECT h.id FROM hosts h "
    "JOIN node_resources v ON v.node_id = h.id AND v.resource = 'vcpu' "
    "JOIN node_resources m ON m.node_id = h.id AND m.resource = 'memoryGiB' "
    "JOIN node_resources d ON d.node_id = h.id AND d.resource = 'diskGiB' "
    "WHERE h.pool_id = %(pool)s AND h.state = 'ready' AND h.id > %(after)s "
    "AND v.allocated + %(vcpu)s <= v.capacity AND m.allocated + %(mem)s <= m.capacity "
    "AND d.allocated + %(disk)s <= d.capacity ORDER BY h.id LIMIT 1"
)
_CLAIM = "CASE resource WHEN 'vcpu' THEN %(vcpu)s WHEN 'memoryGiB' THEN %(mem)s ELSE %(disk)s END"
CLAIM = (
    f"UPDATE node_resources SET allocated = allocated + {_CLAIM} "
    f"WHERE node_id = %(node)s AND allocated + {_CLAIM} <= capacity"
)
ALLOCATE = (
    "INSERT INTO allocations (id, node_id, tenant_id, vcpu, memory_gib, disk_gib) "
    "VALUES (%(id)s, %(node)s, 'bench', %(vcpu)s, %(mem)s, %(disk)s)"
)


# The plan a hand-written placement would pin: from the cursor along the pool's hosts, each host's
# three rows by primary key. Left to choose, PostgreSQL merge-joins the candidate query for LIMIT 1,
# reading node_resources from the pool's first host up to the cursor. The floor then slowed as its
# cursor went round the pool: 1,242 placements/s over its first 500 hosts, 551/s over hosts
# 4,500-5,000, and back to 1,253/s after it wrapped; with nested loops only it held 1,400-1,540/s
# all the way round. (bcfleet's prepared candidate query, whose LIMIT is a parameter, is planned
# with nested loops by PostgreSQL itself: docs/speed-history.md.)
NESTED_LOOPS_ONLY = ("SET enable_mergejoin = off", "SET enable_hashjoin = off")


def _qmark(sql: str) -> str:
    """The psycopg statement in sqlite3's named style."""
    for name in ("pool", "after", "vcpu", "mem", "disk", "node", "id"):
        sql = sql.replace(f"%({name})s", f":{name}")
    return sql


class Floor:
    """A connection to a floor database and the placement transaction on it."""

    def __init__(self, connection: Any, sqlite: bool, start: str = "") -> None:
        self.connection = connection
        self.sqlite = sqlite
        self.cursor_at = start
        statements = (CANDIDATE, CLAIM, ALLOCATE)
        self.candidate, self.claim, self.allocate = (
            tuple(_qmark(s) for s in statements) if sqlite else statements
        )

    def place(self) -> str:
        """One placement in one transaction; the host it went to."""
        params: dict[str, Any] = {
            "pool": POOL,
            "vcpu": FLAVOR["vcpu"],
            "mem": FLAVOR["memoryGiB"],
            "disk": FLAVOR["diskGiB"],
        }
        cur = self.connection.cursor()
        cur.execute("BEGIN IMMEDIATE" if self.sqlite else "BEGIN")
        try:
            for after in (self.cursor_at, ""):
                params["after"] = after
                while True:
                    row = cur.execute(self.candidate, params).fetchone()
                    if row is None:
                        break
                    params["node"] = params["after"] = row[0]
                    if cur.execute(self.claim, params).rowcount == len(HOST):
                        params["id"] = uuid.uuid4().hex
                        cur.execute(self.allocate, params)
                        cur.execute("COMMIT")
                        self.cursor_at = row[0]
                        return str(row[0])
                    # Lost the host to another writer: undo any partial claim, try the next.
                    cur.execute("ROLLBACK")
                    cur.execute("BEGIN IMMEDIATE" if self.sqlite else "BEGIN")
            raise RuntimeError("the floor's pool is full")
        except BaseException:
            cur.execute("ROLLBACK")
            raise

    def place_many(self, count: int) -> None:
        """`count` placements in ONE transaction, each as place() makes it (the candidate query,
        the guarded claim, the allocation INSERT): the floor of a batch of `count` rows."""
        params: dict[str, Any] = {
            "pool": POOL,
            "vcpu": FLAVOR["vcpu"],
            "mem": FLAVOR["memoryGiB"],
            "disk": FLAVOR["diskGiB"],
        }
        cur = self.connection.cursor()
        cur.execute("BEGIN IMMEDIATE" if self.sqlite else "BEGIN")
        try:
            for _ in range(count):
                params["after"] = self.cursor_at
                row = cur.execute(self.candidate, params).fetchone()
                if row is None:
                    params["after"] = ""
                    row = cur.execute(self.candidate, params).fetchone()
                if row is None:
                    raise RuntimeError("the floor's pool is full")
                params["node"] = row[0]
                if cur.execute(self.claim, params).rowcount != len(HOST):
                    raise RuntimeError("a floor batch has no concurrent writer to lose a host to")
                params["id"] = uuid.uuid4().hex
                cur.execute(self.allocate, params)
                self.cursor_at = row[0]
            cur.execute("COMMIT")
        except BaseException:
            cur.execute("ROLLBACK")
            raise


def floor_sqlite_batches(hosts: int, batch: int, batches: int) -> dict[str, Any]:
    """Batches of `batch` placements, one transaction each (Floor.place_many), on a fresh SQLite
    file: batches/s, their p50 and p99, and instancesPerSecond."""
    with tempfile.TemporaryDirectory() as tmp:
        connection = sqlite_connection(f"{tmp}/floor.db")
        seed(connection, True, hosts)
        floor = Floor(connection, True)
        timed(lambda: floor.place_many(batch), 2)
        samples, cpu = timed_with_cpu(lambda: floor.place_many(batch), batches)
        connection.close()
    return {**batch_summary(samples, batch), **cpu}


def batch_summary(samples: list[float], batch: int) -> dict[str, Any]:
    """summary() of batch timings, with the instances a second they add up to."""
    result: dict[str, Any] = dict(summary(samples))
    result["instancesPerSecond"] = round(batch * len(samples) / sum(samples), 1)
    return result


def seed(connection: Any, sqlite: bool, hosts: int) -> None:
    """The three tables and `hosts` ready hosts, in one transaction."""
    cur = connection.cursor()
    cur.execute("BEGIN")
    for statement in TABLES:
        cur.execute(statement)
    host_rows = [(f"node-{i:05d}", POOL, "ready", 1) for i in range(hosts)]
    resource_rows = [
        (node, name, amount, ratio, int(amount * ratio), 0)
        for node, *_ in host_rows
        for name, amount, ratio in HOST
    ]
    mark = "?" if sqlite else "%s"
    cur.executemany(f"INSERT INTO hosts VALUES ({', '.join([mark] * 4)})", host_rows)
    cur.executemany(f"INSERT INTO node_resources VALUES ({', '.join([mark] * 6)})", resource_rows)
    cur.execute("COMMIT")
    if not sqlite:
        cur.execute("ANALYZE")  # as autovacuum soon would: unanalyzed, PostgreSQL scans the pool


def sqlite_connection(path: str) -> sqlite3.Connection:
    """sqlite3 as bcfleet's engine sets it up: our BEGIN, WAL, foreign keys, synchronous=NORMAL."""
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    for pragma in (
        "journal_mode=WAL",
        "foreign_keys=ON",
        "busy_timeout=30000",
        "synchronous=NORMAL",
    ):
        connection.execute(f"PRAGMA {pragma}")
    return connection


def pg_connection(url: str) -> psycopg.Connection[Any]:
    """A psycopg connection in autocommit mode, so BEGIN/COMMIT are the floor's own, that plans
    joins as nested loops only (NESTED_LOOPS_ONLY)."""
    connection = psycopg.connect(libpq_url(url), autocommit=True)
    for setting in NESTED_LOOPS_ONLY:
        connection.execute(setting)
    return connection


def floor_sqlite(hosts: int, placements: int) -> dict[str, Any]:
    """placements/s, p50, p99 and CPU per placement of the floor on a fresh SQLite file, one process."""
    with tempfile.TemporaryDirectory() as tmp:
        connection = sqlite_connection(f"{tmp}/floor.db")
        seed(connection, True, hosts)
        floor = Floor(connection, True)
        timed(floor.place, 20)
        samples, cpu = timed_with_cpu(floor.place, placements)
        connection.close()
    return {**summary(samples), **cpu}


def floor_pg(admin_url: str, hosts: int, placements: int) -> dict[str, Any]:
    """The same on a fresh PostgreSQL database, one process."""
    with scratch_pg(admin_url, "bcfleet_floor") as url, pg_connection(url) as connection:
        seed(connection, False, hosts)
        floor = Floor(connection, False)
        timed(floor.place, 20)
        samples, cpu = timed_with_cpu(floor.place, placements, url)
        return {**summary(samples), **cpu}


def _worker(url: str, start: str, count: int, ready: Any, out: Any) -> None:
    with pg_connection(url) as connection:
        run_worker(Floor(connection, False, start).place, count, ready, out)


def floor_pg_processes(
    admin_url: str,
    hosts: int,
    placements: int,
    processes: int,
    *,
    pairs: int = 3,
    start_method: str = "spawn",
) -> dict[str, Any]:
    """`processes` processes placing at once on one PostgreSQL database, each round paired with
    one process placing as many, as bench_placement.py measures bcfleet; no host overbooked."""
    with scratch_pg(admin_url, "bcfleet_floor") as url:
        with pg_connection(url) as connection:
            seed(connection, False, hosts)
        starts = [f"node-{i * hosts // processes:05d}" for i in range(processes)]
        result = scale_pairs(
            lambda: at_once(start_method, _worker, [(url, starts[0], placements * processes)]),
            lambda: at_once(start_method, _worker, [(url, s, placements) for s in starts]),
            pairs,
        )
        with pg_connection(url) as connection:
            over = connection.execute(
                "SELECT count(*) FROM node_resources WHERE allocated > capacity"
            ).fetchone()
    result["invariantsOk"] = over is not None and over[0] == 0
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hosts", type=int, default=5000)
    parser.add_argument("--placements", type=int, default=500)
    parser.add_argument("--pg", default="postgresql+psycopg://postgres@127.0.0.1:5432/test")
    parser.add_argument("--no-pg", action="store_true")
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--pairs", type=pairs_count, default=3)
    parser.add_argument("--start-method", choices=START_METHODS, default="spawn")
    args = parser.parse_args()
    results: dict[str, Any] = {f"sqlite_{args.hosts}": floor_sqlite(args.hosts, args.placements)}
    if not args.no_pg:
        results[f"postgres_{args.hosts}"] = floor_pg(args.pg, args.hosts, args.placements)
        if args.processes > 1:
            results[f"postgres_{args.hosts}_{args.processes}proc"] = floor_pg_processes(
                args.pg,
                args.hosts,
                args.placements // args.processes,
                args.processes,
                pairs=args.pairs,
                start_method=args.start_method,
            )
    emit(results)


if __name__ == "__main__":
    main()

"""Scale-out soak on PostgreSQL: 3 `fleet serve` replicas and 2 `fleet jobs run` daemons on one database.

A bounded load (a few client threads, one request at a time each) spreads placements,
reservations (with idempotency keys, retried after a lost connection) and deploys over the
replicas while one replica is killed with SIGKILL every --kill-every seconds and started
again. Afterwards the database is checked against what the clients were told
(bench/scaleout_checks.py). Prints throughput, error counts and the checks' problems as a
final JSON line; exits 1 when a check found a problem.

With --reference the same load first runs against one replica, no daemon and no kill
(in a database of its own), and the soak's throughput is also given as a ratio to it.

    python bench/bench_scaleout.py [--seconds 60] [--kill-every 10] [--reference] [--pg URL]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import create_engine, text  # noqa: E402

from bcfleet.store.engine import make_engine  # noqa: E402
from bcfleet.store.schema import create_fresh  # noqa: E402
from bench.common import emit  # noqa: E402
from bench.scaleout_checks import verify  # noqa: E402
from bench.scaleout_fleet import Cluster, describe, seed  # noqa: E402
from bench.scaleout_load import run_load  # noqa: E402

PG_ADMIN = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


@dataclass(frozen=True)
class SoakPlan:
    """How long, how hard and how often to kill; the test runs a short one."""

    seconds: float = 60.0
    kill_every: float = 10.0
    replicas: int = 3
    daemons: int = 2
    workers: int = 4
    hosts: int = 4
    job_interval: float = 2.0
    vcpu_limit: int = 48
    gpu_limit: int = 10


def soak(url: str, plan: SoakPlan, log_dir: Path) -> dict[str, Any]:
    """Seed the fleet at url, run the cluster and the load, stop everything, check."""
    phases: dict[str, float] = {}
    mark = time.perf_counter()
    world = seed(url, hosts=plan.hosts, vcpu_limit=plan.vcpu_limit, gpu_limit=plan.gpu_limit)
    phases["seed"], mark = time.perf_counter() - mark, time.perf_counter()
    with (log_dir / "soak.log").open("wb") as log:
        cluster = Cluster(url, plan.replicas, plan.daemons, plan.job_interval, log)
        try:
            cluster.start()
            phases["start"], mark = time.perf_counter() - mark, time.perf_counter()
            if plan.kill_every > 0:
                cluster.start_killing(plan.kill_every)
            ledger = run_load(world, cluster.base_urls, workers=plan.workers, seconds=plan.seconds)
            elapsed = time.perf_counter() - mark
            cluster.stop_killing()
            cluster.wait_all_ready()
            phases["load"], mark = time.perf_counter() - mark, time.perf_counter()
        finally:
            cluster.stop()
    phases["stop"], mark = time.perf_counter() - mark, time.perf_counter()
    checks = verify(url, ledger, job_interval=plan.job_interval)
    counts = dict(sorted(ledger.counts.items()))
    requests = sum(v for k, v in counts.items() if k.startswith("http"))
    return {
        "seconds": round(elapsed, 1),
        **describe(cluster),
        "restartError": cluster.restart_error,
        "daemonExitCodes": cluster.daemon_exit_codes(),
        "requests": requests,
        "requestsPerSecond": round(requests / elapsed, 1),
        "acknowledgedWrites": counts.get("writes", 0),
        "writesPerSecond": round(counts.get("writes", 0) / elapsed, 1),
        "counts": counts,
        "jobRuns": checks["jobRuns"],
        "phaseSeconds": {k: round(v, 1) for k, v in phases.items()},
        "problems": checks["problems"],
        "ok": not any(checks["problems"].values()) and cluster.restart_error is None,
    }


def scratch_database(admin_url: str) -> tuple[str, str]:
    """A fresh database with bcfleet's schema: (its URL, its name)."""
    name = f"bcfleet_soak_{uuid.uuid4().hex[:8]}"
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    url = admin_url.rsplit("/", 1)[0] + f"/{name}"
    engine = make_engine(url)
    create_fresh(engine)
    engine.dispose()
    return url, name


def drop_database(admin_url: str, name: str) -> None:
    admin = create_engine(admin_url, isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def run_in_scratch(admin_url: str, plan: SoakPlan) -> dict[str, Any]:
    url, name = scratch_database(admin_url)
    try:
        with tempfile.TemporaryDirectory() as logs:
            return soak(url, plan, Path(logs))
    finally:
        drop_database(admin_url, name)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--kill-every", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--reference", action="store_true", help="Also run one replica, no kills.")
    parser.add_argument(
        "--pg", default=PG_ADMIN, help="An existing database to create a scratch one from."
    )
    args = parser.parse_args()
    plan = SoakPlan(seconds=args.seconds, kill_every=args.kill_every, workers=args.workers)
    reference = None
    if args.reference:
        quiet = replace(plan, replicas=1, daemons=0, kill_every=0)
        reference = run_in_scratch(args.pg, quiet)
    result = run_in_scratch(args.pg, plan)
    problems = result.pop("problems")
    result["problemCounts"] = {name: len(found) for name, found in problems.items()}
    result["problems"] = {name: found[:5] for name, found in problems.items() if found}
    if reference is not None:
        result["reference"] = {k: reference[k] for k in ("replicas", "daemons", "kills",
                               "requestsPerSecond", "writesPerSecond", "ok")}  # fmt: skip
        if reference["writesPerSecond"]:
            result["writesPerSecondRatio"] = round(
                result["writesPerSecond"] / reference["writesPerSecond"], 3
            )
    emit({"bench": "scaleout", **result})
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

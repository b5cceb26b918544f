"""Three `fleet serve` replicas and two job daemons on one PostgreSQL database, a replica killed every few seconds.

A short run of bench/bench_scaleout.py's soak: what the clients were told stays true,
the invariants hold, each job runs once per due time, and an idempotency key retried
after a lost connection never makes a second reservation.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.bench_scaleout import SoakPlan, soak

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def test_replicas_killed_with_sigkill_lose_no_acknowledged_write_and_double_nothing(
    pg_url: str, tmp_path: Path
) -> None:
    plan = SoakPlan(seconds=20, kill_every=5, workers=4)
    result = soak(pg_url, plan, tmp_path)
    assert result["restartError"] is None  # every killed replica came back
    assert result["kills"] >= 2, result
    assert result["daemonExitCodes"] == [0, 0]  # stopped with SIGTERM, each exits cleanly
    assert result["acknowledgedWrites"] > 0, result["counts"]
    assert result["counts"].get("lostConnections", 0) > 0, "no kill ever cut a client off"
    problems = result["problems"]
    for check in ("acknowledged", "duplicates", "idempotency", "invariants", "jobs"):
        assert problems[check] == [], f"{check}: {problems[check][:5]}"
    assert max(result["jobRuns"].values()) >= 2  # the daemons ran jobs, more than once

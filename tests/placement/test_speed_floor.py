"""The placement floor the benchmarks compare against is itself correct (it fills hosts to capacity,
never past), its PostgreSQL plan does not depend on where its cursor is, and the processes placing
at once are measured alike for the floor and for bcfleet."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from bench.bench_placement import run_processes
from bench.common import scratch_pg
from bench.floor_placement import (
    CANDIDATE,
    Floor,
    floor_pg_processes,
    pg_connection,
    seed,
    sqlite_connection,
)
from bench.processes import pairs_count
from tests.support.fleet import PG_ADMIN_URL


def test_floor_fills_a_small_pool_exactly_to_capacity(tmp_path: Path) -> None:
    connection = sqlite_connection(str(tmp_path / "floor.db"))
    seed(connection, True, 3)
    floor = Floor(connection, True)
    hosts = [floor.place() for _ in range(150)]  # 2 TB / 40 GiB: 50 on each of 3 hosts
    assert sorted(set(hosts)) == ["node-00000", "node-00001", "node-00002"]
    with pytest.raises(RuntimeError, match="full"):
        floor.place()
    over = connection.execute(
        "SELECT count(*) FROM node_resources WHERE allocated > capacity"
    ).fetchone()
    disk = connection.execute(
        "SELECT sum(allocated) FROM node_resources WHERE resource = 'diskGiB'"
    ).fetchone()
    allocations = connection.execute("SELECT count(*) FROM allocations").fetchone()
    connection.close()
    assert over == (0,)
    assert disk == (150 * 40,)
    assert allocations == (150,)


@pytest.mark.postgres
def test_the_floor_reads_each_candidate_host_by_key_wherever_its_cursor_is() -> None:
    with scratch_pg(PG_ADMIN_URL, "bcfleet_floor") as url, pg_connection(url) as connection:
        seed(connection, False, 200)
        params = {"pool": "pool-floor", "after": "node-00150", "vcpu": 2, "mem": 4, "disk": 40}
        plan = "\n".join(row[0] for row in connection.execute("EXPLAIN " + CANDIDATE, params))
    assert "Nested Loop" in plan
    assert "Merge Join" not in plan and "Hash Join" not in plan


@pytest.mark.postgres
def test_the_floor_and_bcfleet_place_in_spawned_processes_paired_with_one() -> None:
    floor = floor_pg_processes(PG_ADMIN_URL, 8, 3, 2, pairs=1)
    assert floor["count"] == 6  # the two processes' placements, timed; the one process's are not
    assert floor["invariantsOk"] is True
    assert len(floor["scalePerPair"]) == 1 and floor["scaleOverOneProcess"] > 0
    with scratch_pg(PG_ADMIN_URL) as url:
        placed = run_processes(url, 8, 3, 2, tenants=2, pairs=1)
    assert placed["count"] == 6
    assert placed["invariantsOk"] is True
    assert placed["startMethod"] == "spawn"
    assert len(placed["scalePerPair"]) == 1 and placed["scaleOverOneProcess"] > 0


@pytest.mark.parametrize("text", ["0", "-1", "nan", "1e23", "", "2.5"])
def test_pairs_must_be_a_whole_number_of_rounds(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="at least 1"):
        pairs_count(text)
    assert pairs_count("3") == 3

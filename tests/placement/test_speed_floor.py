"""The placement floor the benchmarks compare against is itself correct: it fills hosts to capacity, never past."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.floor_placement import Floor, seed, sqlite_connection


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

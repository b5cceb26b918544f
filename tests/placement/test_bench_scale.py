"""bench/bench_scale.py builds a consistent fleet in bulk, declares it in a FleetConfig that plans
no change on it, and runs end to end at a tiny size with a figure for every cost."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy import select

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.reconcile.apply import make_plan
from bcfleet.reconcile.load import load_fleetconfig_text
from bcfleet.store.tables import INSTANCES, NODE_RESOURCES, QUOTAS
from bench.bench_scale import FIGURES, MEMORY, build, fleetconfig, open_fleet

ROOT = Path(__file__).resolve().parents[2]


def test_the_built_fleet_holds_its_instances_and_keeps_the_invariants(tmp_path: Path) -> None:
    built = build(tmp_path / "scale.db", hosts=4, per_host=3)
    assert built["instances"] == 12
    fleet = open_fleet(tmp_path / "scale.db")
    try:
        with fleet.read_core() as connection:
            running = connection.execute(
                select(INSTANCES.c.node_id).where(INSTANCES.c.state == "running")
            ).all()
            allocated = {
                (resource, amount)
                for resource, amount in connection.execute(
                    select(NODE_RESOURCES.c.resource, NODE_RESOURCES.c.allocated)
                )
            }
            used = dict(connection.execute(select(QUOTAS.c.resource, QUOTAS.c.used)).all())
        assert len(running) == 12 and len({node for (node,) in running}) == 4
        # three instances of 2 vCPU, 4 GiB, 40 GiB on every host; twelve in the tenant's quota
        assert allocated == {("vcpu", 6), ("memoryGiB", 12), ("diskGiB", 120)}
        assert used == {"vcpu": 24, "memoryGiB": 48, "diskGiB": 480}
        report = fleet.api.doctor.check(LOCAL_OPERATOR, invariants=True)["invariants"]
        assert report["ok"], report
    finally:
        fleet.close()


def test_the_fleetconfig_declares_the_built_fleet_so_that_it_plans_no_change(
    tmp_path: Path,
) -> None:
    build(tmp_path / "scale.db", hosts=4, per_host=1)
    fleet = open_fleet(tmp_path / "scale.db")
    try:
        desired = load_fleetconfig_text(fleetconfig(4), host_reserve=fleet.settings.host_reserve)
        assert sorted(h.name for h in desired.hosts) == [f"bench-{i:05d}" for i in range(4)]
        plan = make_plan(fleet, LOCAL_OPERATOR, desired)
        assert not plan.errors and not plan.changes  # the fleet it declares, as applied
    finally:
        fleet.close()


@pytest.mark.slow
def test_the_bench_runs_at_a_tiny_size_and_prints_every_figure() -> None:
    command = [sys.executable, str(ROOT / "bench" / "bench_scale.py"), "--sizes", "20", "40"]
    done = subprocess.run(
        [*command, "--placements", "5", "--no-plot", "--quiet"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["sizes"] == [20, 40]
    for size in result["results"]:
        figures = size["figures"]
        assert all(figures[key] is not None for key in FIGURES if key != "placementInstructions")
        assert set(size["peakRssMb"]) == set(MEMORY)
        assert size["usage"]["instances"] == size["build"]["instances"]
        assert size["usage"]["written"] == 2 * size["usage"]["instances"]  # vCPU and memory
        assert size["hostsJob"]["hosts"] == size["hosts"]
    assert set(result["ratioLargestOverSmallest"]) == set(FIGURES)

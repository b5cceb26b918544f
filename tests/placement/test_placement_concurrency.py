"""Several writers placing, resizing and deleting at once never overbook, on SQLite and PostgreSQL."""

from __future__ import annotations

import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from bcfleet.errors import FleetError
from bcfleet.fleet import Fleet
from tests.support.builders import OP, flavor
from tests.support.capacity import create, invariants_ok, pool_with_hosts, rows


def test_concurrent_placements_fill_but_never_overbook(any_fleet: Fleet) -> None:
    pool = pool_with_hosts(any_fleet, hosts=2, cpus=10, gpus=2)  # 8 vCPU each
    flavor(any_fleet, pool["id"], "c2", vcpu=2, memory_gib=1, disk_gib=1)
    flavor(any_fleet, pool["id"], "gpu", vcpu=1, memory_gib=1, disk_gib=1, gpus=1)

    def place(i: int) -> str:
        return str(create(any_fleet, pool, "gpu" if i % 3 == 0 else "c2")["state"])

    with ThreadPoolExecutor(max_workers=6) as executor:
        states = list(executor.map(place, range(30)))
    running = states.count("running")
    assert 0 < running <= 16 and states.count("pending") == 30 - running
    for name in ("h1", "h2"):
        vcpu = rows(any_fleet, name)["vcpu"]
        assert vcpu["allocated"] <= vcpu["capacity"]
    invariants_ok(any_fleet)


def test_mixed_create_resize_delete_keeps_every_invariant(any_fleet: Fleet) -> None:
    pool = pool_with_hosts(any_fleet, hosts=2, cpus=10, gpus=1)
    flavor(any_fleet, pool["id"], "s", vcpu=1, memory_gib=2, disk_gib=10)
    flavor(any_fleet, pool["id"], "m", vcpu=3, memory_gib=4, disk_gib=20)
    flavor(any_fleet, pool["id"], "g", vcpu=1, memory_gib=2, disk_gib=10, gpus=1)

    def worker(seed: int) -> int:
        rng = random.Random(seed)
        mine: list[str] = []
        done = 0
        for _ in range(12):
            try:
                action = rng.choice(["create", "create", "resize", "delete"])
                if action == "create" or not mine:
                    made = create(any_fleet, pool, rng.choice(["s", "m", "g"]))
                    if made["state"] == "running":
                        mine.append(made["id"])
                elif action == "resize":
                    target = mine[rng.randrange(len(mine))]
                    any_fleet.api.instances.stop(OP, target)
                    any_fleet.api.instances.resize(OP, target, flavor=rng.choice(["s", "m"]))
                    any_fleet.api.instances.start(OP, target)
                else:
                    any_fleet.api.instances.delete(OP, mine.pop(rng.randrange(len(mine))))
                done += 1
            except FleetError:
                pass  # refusals (capacity, unsupported gpu resize) are fine; corruption is not
        return done

    with ThreadPoolExecutor(max_workers=4) as executor:
        assert sum(executor.map(worker, range(4))) > 0
    invariants_ok(any_fleet)


@pytest.mark.slow
def test_several_processes_placing_at_once(db_url: str, tmp_path: Path) -> None:
    """Four OS processes through the CLI against one database: no overbooking."""
    from bcfleet.clock import FakeClock
    from tests.support.fleet import T0, open_fleet

    fleet = open_fleet(db_url, FakeClock(T0))
    pool = pool_with_hosts(fleet, hosts=2, cpus=10)
    flavor(fleet, pool["id"], "c2", vcpu=2, memory_gib=1, disk_gib=1)
    script = (
        "import sys; from bcfleet.fleet import Fleet; from bcfleet.api.auth import LOCAL_OPERATOR as op\n"
        "f = Fleet.open(sys.argv[1])\n"
        "for _ in range(6): f.api.instances.create(op, tenant_id='acme', pool_id=sys.argv[2], flavor='c2')\n"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script, db_url, pool["id"]], cwd=Path(__file__).parents[2]
        )
        for _ in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    running = [i for i in fleet.api.instances.list(OP)["items"] if i["state"] == "running"]
    assert len(running) == 8  # 2 hosts × 8 vCPU / 2
    invariants_ok(fleet)
    fleet.close()

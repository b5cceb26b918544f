"""A floating guest's CPU set never holds a CPU a pinned guest owns, and grows back when it leaves.

Host fra-01 has 16 CPUs (0–1 reserved for the host). A floating guest is placed, then a pinned
one on the same host: the floating guest's spec (what its agent pulls) loses the pinned CPUs;
deleting the pinned guest gives them back. The rule itself (domain/floating.py) has its table.
"""

from __future__ import annotations

from typing import Any

import pytest

from bcfleet.domain.floating import floating_cpus, refloat_host
from bcfleet.domain.numa import HostPlacement
from bcfleet.domain.shapes import Inventory
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from tests.support.builders import OP, flavor, host, hosted_pool, inventory
from tests.support.capacity import PLACEMENT
from tests.support.fleet import run_cli


def spec_cpus(fleet: Fleet, instance_id: str) -> list[int]:
    shown = run_cli("instances", "spec", instance_id, "--json", db=fleet.settings.db_url)
    assert shown.exit_code == 0, shown.stderr
    body = shown.json()
    assert isinstance(body, dict)
    return list(body["placement"]["cpuset"])


def floating_then_pinned(fleet: Fleet) -> tuple[dict[str, Any], dict[str, Any]]:
    pool = hosted_pool(fleet)
    host(fleet, pool["id"], "fra-01", inventory(cpus=16), labels=PLACEMENT)
    run_vps_hosts(fleet, fleet.now())
    flavor(fleet, pool["id"], name="floating", vcpu=2, memory_gib=4)
    flavor(fleet, pool["id"], name="pinned", vcpu=4, memory_gib=4, placement={"pinned": True})
    made = [
        fleet.api.instances.create(OP, tenant_id="acme", pool_id=pool["id"], flavor=f, name=f)
        for f in ("floating", "pinned")
    ]
    assert [m["state"] for m in made] == ["running", "running"]
    return made[0], fleet.api.instances.show(OP, made[1]["id"])


def test_a_pinned_guest_takes_its_cpus_out_of_the_floating_set(any_fleet: Fleet) -> None:
    floating, pinned = floating_then_pinned(any_fleet)
    owned = set(pinned["hostPlacement"]["cpus"])
    assert len(owned) == 4
    cpus = spec_cpus(any_fleet, floating["id"])
    assert owned.isdisjoint(cpus)
    assert sorted(cpus) == sorted(set(range(2, 16)) - owned)


def test_deleting_the_pinned_guest_gives_its_cpus_back(any_fleet: Fleet) -> None:
    floating, pinned = floating_then_pinned(any_fleet)
    any_fleet.api.instances.delete(OP, pinned["id"])
    assert spec_cpus(any_fleet, floating["id"]) == list(range(2, 16))


def test_resizing_the_pinned_guest_moves_the_floating_set_with_it(any_fleet: Fleet) -> None:
    floating, pinned = floating_then_pinned(any_fleet)
    pool_id = pinned["poolId"]
    flavor(
        any_fleet, pool_id, name="pinned-small", vcpu=2, memory_gib=4, placement={"pinned": True}
    )
    any_fleet.api.instances.stop(OP, pinned["id"])
    any_fleet.api.instances.resize(OP, pinned["id"], flavor="pinned-small")
    owned = set(any_fleet.api.instances.show(OP, pinned["id"])["hostPlacement"]["cpus"])
    assert len(owned) == 2
    assert spec_cpus(any_fleet, floating["id"]) == sorted(set(range(2, 16)) - owned)


def test_doctor_is_ok_after_both_placements(any_fleet: Fleet) -> None:
    floating_then_pinned(any_fleet)
    shown = run_cli("doctor", "--invariants", "--json", db=any_fleet.settings.db_url)
    body = shown.json()
    assert isinstance(body, dict)
    assert body["invariants"]["ok"], body["invariants"]


# ----- the rule --------------------------------------------------------------------------------

TWO_NODES = Inventory.from_json(inventory(cpus=8, numa_nodes=2))


@pytest.mark.parametrize(
    ("reserved", "pinned", "node", "expected"),
    [
        pytest.param((0, 1), (), None, (2, 3, 4, 5, 6, 7), id="all-but-the-reserve"),
        pytest.param((0, 1), (4, 5), None, (2, 3, 6, 7), id="pinned-cpus-left-out"),
        pytest.param((0, 1), (4,), 1, (5, 6, 7), id="one-numa-node"),
        pytest.param((0, 1), (2, 3), 0, (), id="node-all-taken"),
    ],
)
def test_floating_cpus(
    reserved: tuple[int, ...], pinned: tuple[int, ...], node: int | None, expected: tuple[int, ...]
) -> None:
    assert floating_cpus(TWO_NODES.cpus, reserved, pinned, node) == expected


def test_refloat_host_changes_only_floating_guests_whose_set_moves() -> None:
    guests = {
        "pinned": HostPlacement(cpus=(4, 5), cpuset=(4, 5)),
        "stale": HostPlacement(cpus=None, cpuset=(2, 3, 4, 5, 6, 7)),
        "right": HostPlacement(cpus=None, cpuset=(2, 3, 6, 7)),
        "node1": HostPlacement(cpus=None, cpuset=(4, 5, 6, 7), mems=(1,)),
    }
    changed = refloat_host(TWO_NODES, {0, 1}, guests)
    assert {k: v.cpuset for k, v in changed.items()} == {"stale": (2, 3, 6, 7), "node1": (6, 7)}

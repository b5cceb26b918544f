"""Invariants that check the physical world: one CPU pinned by one live guest, huge pages within a NUMA node.

Two pinned guests with 1 GiB huge pages are placed the normal way (the fleet is then clean);
then a violation is written straight into an instance's host placement and `fleet doctor
--invariants --json` must report it, and exit 1.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import text

from bcfleet.domain.numa import HostPlacement
from bcfleet.domain.physical import Guest, double_pinned_cpus, overbooked_hugepages
from bcfleet.domain.shapes import Inventory
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from tests.support.builders import OP, flavor, host, hosted_pool, inventory
from tests.support.capacity import PLACEMENT
from tests.support.fleet import run_cli

GIB_PAGE = 1073741824


def two_pinned_guests(fleet: Fleet) -> list[dict[str, Any]]:
    """Host fra-01: 16 CPUs on 2 NUMA nodes, 8 × 1 GiB pages per node; two pinned 4 GiB guests."""
    pool = hosted_pool(fleet)
    host(fleet, pool["id"], "fra-01", inventory(cpus=16, numa_nodes=2, hugepages_1g=8),
         labels=PLACEMENT)  # fmt: skip
    run_vps_hosts(fleet, fleet.now())
    flavor(fleet, pool["id"], name="pinned", vcpu=2, memory_gib=4,
           placement={"pinned": True, "numaAffine": True, "hugepageSizeBytes": GIB_PAGE})  # fmt: skip
    made = []
    for name in ("a", "b"):
        made.append(
            fleet.api.instances.create(
                OP, tenant_id="acme", pool_id=pool["id"], flavor="pinned", name=name
            )
        )
    assert all(m["state"] != "pending" for m in made)
    return [fleet.api.instances.show(OP, m["id"]) for m in made]


def doctor(fleet: Fleet) -> tuple[int, dict[str, Any]]:
    shown = run_cli("doctor", "--invariants", "--json", db=fleet.settings.db_url)
    body = shown.json()
    assert isinstance(body, dict), shown.stderr
    return shown.exit_code, body["invariants"]


def set_placement(fleet: Fleet, instance_id: str, placement: dict[str, Any]) -> None:
    with fleet.engine.begin() as connection:
        connection.execute(
            text("UPDATE instances SET host_placement = :p WHERE id = :i"),
            {"p": json.dumps(placement), "i": instance_id},
        )


def test_a_clean_fleet_reports_ok(any_fleet: Fleet) -> None:
    two_pinned_guests(any_fleet)
    code, checked = doctor(any_fleet)
    assert code == 0 and checked["ok"]
    assert checked["problems"]["doublePinnedCpus"] == []
    assert checked["problems"]["hugepagesOverTotal"] == []


def test_doctor_finds_a_cpu_pinned_by_two_live_guests(any_fleet: Fleet) -> None:
    first, second = two_pinned_guests(any_fleet)
    cpus = first["hostPlacement"]["cpus"]
    assert set(cpus).isdisjoint(second["hostPlacement"]["cpus"])
    set_placement(any_fleet, second["id"], {**second["hostPlacement"], "cpus": [cpus[0], 15]})
    code, checked = doctor(any_fleet)
    assert code == 1 and not checked["ok"]
    (problem,) = checked["problems"]["doublePinnedCpus"]
    assert f"CPU {cpus[0]} pinned by" in problem
    assert first["id"] in problem and second["id"] in problem


def test_a_deleted_guest_pins_nothing(any_fleet: Fleet) -> None:
    first, second = two_pinned_guests(any_fleet)
    stale = {**second["hostPlacement"], "cpus": first["hostPlacement"]["cpus"]}
    any_fleet.api.instances.delete(OP, second["id"])
    set_placement(any_fleet, second["id"], stale)
    code, checked = doctor(any_fleet)
    assert code == 0 and checked["problems"]["doublePinnedCpus"] == []


def test_doctor_finds_huge_pages_booked_beyond_a_numa_nodes_total(any_fleet: Fleet) -> None:
    first, second = two_pinned_guests(any_fleet)
    booked = {k: int(v) for k, v in first["hostPlacement"]["hugepagesByNode"].items()}
    [(numa, pages)] = booked.items()
    assert pages == 4
    # the second guest now claims 5 pages on the same node: 4 + 5 > 8
    set_placement(any_fleet, second["id"],
                  {**second["hostPlacement"], "hugepagesByNode": {numa: 5}})  # fmt: skip
    code, checked = doctor(any_fleet)
    assert code == 1 and not checked["ok"]
    problems = checked["problems"]["hugepagesOverTotal"]
    assert problems == [f"node {first['nodeId']}: NUMA node {numa}: 9 1GiB huge pages booked of 8"]


# ----- the pure deciders ----------------------------------------------------------------------


def _guest(gid: str, node: str = "n1", cpus: tuple[int, ...] | None = None,
           pages: dict[int, int] | None = None) -> Guest:  # fmt: skip
    return Guest(
        gid,
        node,
        HostPlacement(
            cpus=cpus,
            cpuset=cpus or (),
            hugepage_size_bytes=GIB_PAGE if pages else None,
            hugepages_by_node=pages or {},
        ),
    )


@pytest.mark.parametrize(
    ("guests", "expected"),
    [
        pytest.param([_guest("a", cpus=(1, 2)), _guest("b", cpus=(3, 4))], [], id="disjoint"),
        pytest.param(
            [_guest("a", cpus=(1, 2)), _guest("b", cpus=(2, 3))],
            ["node n1: CPU 2 pinned by a and b"],
            id="one-shared-cpu",
        ),  # fmt: skip
        pytest.param(
            [_guest("a", cpus=(1,)), _guest("b", node="n2", cpus=(1,))],
            [],
            id="same-cpu-on-two-hosts",
        ),  # fmt: skip
        pytest.param([_guest("a", cpus=(1,)), _guest("b")], [], id="floating-pins-nothing"),
    ],
)
def test_double_pinned_cpus(guests: list[Guest], expected: list[str]) -> None:
    assert double_pinned_cpus(guests) == expected


def test_overbooked_hugepages_counts_nodes_and_sizes_apart() -> None:
    inv = Inventory.from_json(inventory(cpus=8, numa_nodes=2, hugepages_1g=4))
    guests = [_guest("a", pages={0: 3}), _guest("b", pages={0: 1, 1: 4}), _guest("c", pages={1: 1})]
    assert overbooked_hugepages(guests, {"n1": inv}) == [
        "node n1: NUMA node 1: 5 1GiB huge pages booked of 4"
    ]
    assert overbooked_hugepages([_guest("a", pages={7: 1})], {"n1": inv}) == [
        "node n1: NUMA node 7: 1 1GiB huge pages booked of 0"
    ]
    assert overbooked_hugepages(guests, {}) == []  # unknown inventory: nothing to compare

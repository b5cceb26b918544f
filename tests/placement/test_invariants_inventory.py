"""Invariants against the host's latest inventory: doctor names what guests hold that the host lacks.

Each case places guests the normal way on fra-01 (16 CPUs, 0–1 reserved for the host, 64 GiB,
two GPUs), then the host's agent reports a smaller inventory (or a guest's placement is
written wrong), vps.hosts runs as it would, and `fleet doctor --invariants --json` must name
the problem and exit 1. Before, doctor said ok in each of these cases.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import text

from bcfleet.domain.host_reserve import HostReserve
from bcfleet.domain.physical import Held, inventory_shortfall
from bcfleet.domain.shapes import Inventory
from bcfleet.fleet import Fleet
from bcfleet.jobs.vps_hosts import run_vps_hosts
from tests.support.builders import OP, flavor, host, hosted_pool, inventory
from tests.support.capacity import PLACEMENT
from tests.support.fleet import run_cli

GPU = "0000:17:00.0"


def fra01(fleet: Fleet) -> dict[str, Any]:
    pool = hosted_pool(fleet)
    host(fleet, pool["id"], "fra-01", inventory(cpus=16, gpus=2), labels=PLACEMENT)
    run_vps_hosts(fleet, fleet.now())
    flavor(fleet, pool["id"], name="pinned", vcpu=2, memory_gib=4, placement={"pinned": True})
    flavor(fleet, pool["id"], name="floating", vcpu=2, memory_gib=4)
    flavor(fleet, pool["id"], name="big", vcpu=1, memory_gib=5)
    flavor(fleet, pool["id"], name="gpu", vcpu=2, memory_gib=4, gpus=1)
    return pool


def create(fleet: Fleet, pool: dict[str, Any], flavor_name: str, name: str) -> dict[str, Any]:
    made = fleet.api.instances.create(
        OP, tenant_id="acme", pool_id=pool["id"], flavor=flavor_name, name=name
    )
    assert made["state"] == "running"
    return fleet.api.instances.show(OP, made["id"])


def report(fleet: Fleet, inv: dict[str, Any]) -> None:
    fleet.api.hosts.report(OP, host="fra-01", inventory=inv)
    run_vps_hosts(fleet, fleet.now())


def set_placement(fleet: Fleet, instance_id: str, placement: dict[str, Any]) -> None:
    with fleet.engine.begin() as connection:
        connection.execute(
            text("UPDATE instances SET host_placement = :p WHERE id = :i"),
            {"p": json.dumps(placement), "i": instance_id},
        )


def doctor(fleet: Fleet) -> tuple[int, dict[str, Any]]:
    shown = run_cli("doctor", "--invariants", "--json", db=fleet.settings.db_url)
    body = shown.json()
    assert isinstance(body, dict), shown.stderr
    return shown.exit_code, body["invariants"]


def four_cpus(fleet: Fleet) -> None:
    pool = fra01(fleet)
    create(fleet, pool, "pinned", "a")
    second = create(fleet, pool, "pinned", "b")
    assert second["hostPlacement"]["cpus"] == [4, 5]
    report(fleet, inventory(cpus=4, gpus=2))


def no_gpus(fleet: Fleet) -> None:
    pool = fra01(fleet)
    create(fleet, pool, "gpu", "g")
    report(fleet, inventory(cpus=16, gpus=0))


def gpu_moved(fleet: Fleet) -> None:
    pool = fra01(fleet)
    create(fleet, pool, "gpu", "g")
    moved = inventory(cpus=16, gpus=2)
    moved["gpus"][0]["pciAddress"] = "0000:99:00.0"
    report(fleet, moved)


def eight_gib(fleet: Fleet) -> None:
    pool = fra01(fleet)
    create(fleet, pool, "big", "m")
    report(fleet, inventory(cpus=16, gpus=2, memory_gib=8))


def pinned_to(cpu: int) -> Callable[[Fleet], None]:
    def case(fleet: Fleet) -> None:
        pinned = create(fleet, fra01(fleet), "pinned", "a")
        set_placement(
            fleet, pinned["id"], {**pinned["hostPlacement"], "cpus": [cpu, 3], "cpuset": [cpu, 3]}
        )

    return case


def floating_overlaps(fleet: Fleet) -> None:
    pool = fra01(fleet)
    floating = create(fleet, pool, "floating", "f")
    create(fleet, pool, "pinned", "p")
    set_placement(fleet, floating["id"], {**floating["hostPlacement"], "cpuset": [2, 3, 4]})


@pytest.mark.parametrize(
    ("make", "check", "words"),
    [
        pytest.param(
            four_cpus, "inventoryShortfall", "pinned CPUs 4,5 not in the inventory",
            id="the agent reports 4 CPUs while a guest is pinned to CPUs 4-5",
        ),
        pytest.param(
            four_cpus, "pinnedOutsideGuestCpus", "CPUs 4,5, which the host's latest inventory (4",
            id="the agent reports 4 CPUs: the guest is pinned outside it",
        ),
        pytest.param(
            no_gpus, "inventoryShortfall", f"GPUs {GPU} held but not in the inventory",
            id="it reports 0 GPUs while a GPU guest runs",
        ),
        pytest.param(
            gpu_moved, "inventoryShortfall", f"GPUs {GPU} held but not in the inventory",
            id="a GPU moves to another PCI address",
        ),
        pytest.param(
            eight_gib, "inventoryShortfall", "memoryGiB 5 held, the inventory offers 0",
            id="it reports 8 GiB of memory while guests hold 5 GiB",
        ),
        pytest.param(
            pinned_to(0), "pinnedOutsideGuestCpus", "pinned to CPUs 0, reserved for the host",
            id="a guest is pinned to reserved CPU 0",
        ),
        pytest.param(
            pinned_to(99), "pinnedOutsideGuestCpus", "CPUs 99, which the host's latest inventory",
            id="a guest is pinned to CPU 99",
        ),
        pytest.param(
            floating_overlaps, "floatingOnPinnedCpus", "may run on CPUs 2,3, pinned by",
            id="a floating CPU set overlaps a pinned guest's CPUs",
        ),
    ],
)  # fmt: skip
def test_doctor_names_what_the_host_lacks(
    any_fleet: Fleet, make: Callable[[Fleet], None], check: str, words: str
) -> None:
    make(any_fleet)
    code, checked = doctor(any_fleet)
    assert code == 1 and not checked["ok"]
    assert any(words in problem for problem in checked["problems"][check]), checked["problems"]


def test_a_host_that_still_has_everything_is_ok(any_fleet: Fleet) -> None:
    pool = fra01(any_fleet)
    for name, kind in (("a", "pinned"), ("f", "floating"), ("g", "gpu"), ("m", "big")):
        create(any_fleet, pool, kind, name)
    report(any_fleet, inventory(cpus=16, gpus=2))
    code, checked = doctor(any_fleet)
    assert code == 0 and checked["ok"], checked["problems"]


def test_a_moved_gpu_keeps_its_guest_on_the_old_address(any_fleet: Fleet) -> None:
    """The booking is not silently carried to the device now at the new address."""
    gpu_moved(any_fleet)
    [guest] = any_fleet.api.instances.list(OP, tenant_id="acme")["items"]
    spec = any_fleet.api.instances.spec(OP, guest["id"])
    assert isinstance(spec, dict)
    assert spec["gpus"][0]["pciAddress"] == GPU


# ----- the pure decider ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("held", "expected"),
    [
        pytest.param(Held({"vcpu": 14}, {"vcpu": 1.0}), [], id="all-held-fits"),
        pytest.param(
            Held({"vcpu": 15}, {"vcpu": 1.0}), ["vcpu 15 held, the inventory offers 14"],
            id="more-vcpu-held-than-offered",
        ),
        pytest.param(Held({"vcpu": 20}, {"vcpu": 2.0}), [], id="ratio-counts"),
        pytest.param(
            Held({}, {}, pinned=frozenset({15, 16})), ["pinned CPUs 16 not in the inventory"],
            id="pinned-cpu-gone",
        ),
        pytest.param(
            Held({}, {}, gpus=frozenset({"0000:17:00.0", "0000:20:00.0"})),
            ["GPUs 0000:20:00.0 held but not in the inventory"],
            id="gpu-gone",
        ),
    ],
)  # fmt: skip
def test_inventory_shortfall(held: Held, expected: list[str]) -> None:
    inv = Inventory.from_json(inventory(cpus=16, gpus=1))
    assert inventory_shortfall(inv, HostReserve(), held) == expected


def test_the_host_names_what_it_lacks_and_keeps_the_booking(any_fleet: Fleet) -> None:
    no_gpus(any_fleet)
    db = any_fleet.settings.db_url
    shown = run_cli("hosts", "show", "--host", "fra-01", "--json", db=db).json()
    assert isinstance(shown, dict)
    assert shown["gpus"] == {"total": 0, "used": 1}  # was {total 0, used 0}
    assert shown["status"] == "ready, inventory shortfall"
    [condition] = shown["conditions"]
    assert condition["type"] == "InventoryShortfall"
    assert f"GPUs {GPU} held but not in the inventory" in condition["message"]
    listed = run_cli("hosts", "list", db=db)
    assert "ready, inventory shortfall" in listed.stdout
    text = run_cli("hosts", "show", "--host", "fra-01", db=db).stdout
    assert (
        f"condition: InventoryShortfall: the latest inventory lacks what guests hold: GPUs {GPU}"
        in text
    )

    report(any_fleet, inventory(cpus=16, gpus=2))  # the GPU is back
    shown = any_fleet.api.hosts.show(OP, host="fra-01")
    assert (shown["status"], shown["conditions"], shown["gpus"]) == (
        "ready",
        [],
        {"total": 2, "used": 1},
    )

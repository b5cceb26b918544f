"""Flavors in profiles (validated, never read by placement) and the host's InstanceSpec through the CLI."""

from __future__ import annotations

from typing import Any
from xml.etree import ElementTree

import pytest

from bcfleet.domain.flavor_rules import validate_profile_flavors
from bcfleet.fleet import Fleet
from tests.support.builders import OP, flavor
from tests.support.capacity import create, pool_with_hosts


@pytest.mark.parametrize(
    ("flavors", "problems"),
    [
        pytest.param(
            {"g1.small": {"vcpu": 2, "memoryGiB": 4, "diskGiB": 40}}, set(), id="valid-profile"
        ),
        pytest.param(
            {"g1.small": {"vcpu": 0, "memoryGiB": 4, "diskGiB": 40}},
            {"flavors.g1.small.vcpu"},
            id="zero-vcpu",
        ),
        pytest.param(
            {"Bad Name": {"vcpu": 1, "memoryGiB": 1, "diskGiB": 1}},
            {"flavors.Bad Name"},
            id="bad-name",
        ),
        pytest.param(
            {"x": {"vcpu": 1, "memoryGiB": 1, "diskGiB": 1, "cpu": 2}},
            {"flavors.x.cpu"},
            id="unknown-field",
        ),
        pytest.param(
            {"x": {"vcpu": 1, "memoryGiB": 1.5, "diskGiB": 1}},
            {"flavors.x.memoryGiB"},
            id="non-integer-memory",
        ),
        pytest.param(
            {
                "x": {
                    "vcpu": 1,
                    "memoryGiB": 1,
                    "diskGiB": 1,
                    "placement": {"hugepageSizeBytes": 3000},
                }
            },
            {"flavors.x.placement.hugepageSizeBytes"},
            id="bad-hugepage-size",
        ),
        pytest.param(["not", "a", "map"], {"flavors"}, id="not-a-map"),
    ],
)
def test_profile_flavors_are_validated(flavors: Any, problems: set[str]) -> None:
    assert set(validate_profile_flavors(flavors)) == problems


def test_instance_spec_renders_libvirt_domain_xml(fleet: Fleet, cli: Any) -> None:
    del cli
    pool = pool_with_hosts(fleet, gpus=2, overcommit={"memoryGiB": 1.5})
    flavor(
        fleet,
        pool["id"],
        "gpu1",
        vcpu=4,
        memory_gib=8,
        disk_gib=40,
        gpus=1,
        placement={"numaAffine": True, "pinned": True},
    )
    flavor(fleet, pool["id"], "plain", vcpu=2, memory_gib=4, disk_gib=40)
    pinned = create(fleet, pool, "gpu1")
    plain = create(fleet, pool, "plain")
    domain = ElementTree.fromstring(
        str(fleet.api.instances.spec(OP, pinned["id"], format="libvirt"))
    )
    pins = domain.findall("./cputune/vcpupin")
    assert len(pins) == 4 and domain.find("./numatune/memory") is not None
    assert domain.find("./devices/hostdev") is not None
    assert domain.find("./devices/memballoon").get("model") == "none"  # GPU guests get no balloon
    floating = ElementTree.fromstring(
        str(fleet.api.instances.spec(OP, plain["id"], format="libvirt"))
    )
    assert floating.find("./cputune/vcpupin") is None
    assert (
        floating.find("./devices/memballoon").get("model") == "virtio"
    )  # memory overcommit 1.5 > 1


def test_cli_instances_spec_and_degraded_condition(fleet: Fleet, sqlite_url: str) -> None:
    from tests.support.fleet import run_cli

    pool = pool_with_hosts(fleet, numa_nodes=0)  # no NUMA topology known
    flavor(
        fleet, pool["id"], "pin", vcpu=2, memory_gib=4, disk_gib=10, placement={"numaAffine": True}
    )
    made = create(fleet, pool, "pin")
    degraded = [c for c in made["conditions"] if c["type"] == "PlacementDegraded"]
    assert degraded and degraded[0]["reason"] == "NoNumaTopology"
    assert made["state"] == "running", "a degraded guest still runs, floating"
    result = run_cli("instances", "spec", made["id"], "--format", "libvirt", db=sqlite_url)
    assert result.exit_code == 0 and result.stdout.startswith("<domain")

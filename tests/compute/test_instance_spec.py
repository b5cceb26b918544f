"""The InstanceSpec a host agent receives and the libvirt domain XML rendered from it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bcfleet.domain.instance_spec import (
    format_cpuset,
    instance_spec,
    parse_cpuset,
    render_libvirt_domain,
)
from bcfleet.domain.numa import HostPlacement, choose_host_placement
from bcfleet.domain.shapes import Inventory, PlacementPolicy, Shape

GIB_PAGE = 1 << 30

PINNED_HUGE_GPU = HostPlacement(
    cpus=(6, 7, 2, 3),
    cpuset=(2, 3, 6, 7),
    mems=(0,),
    hugepage_size_bytes=GIB_PAGE,
    hugepages_by_node={0: 8},
)
FLOATING_BALLOON = HostPlacement(cpus=None, cpuset=(2, 3, 4, 5, 8), balloon=True)
FLOATING_ON_NODE = HostPlacement(cpus=None, cpuset=(8, 9, 10), mems=(1,), memory_by_node={1: 4})


def spec(
    placement: HostPlacement,
    shape: Shape | None = None,
    gpus: tuple[str, ...] = (),
) -> dict[str, Any]:
    return instance_spec(
        instance_id="ins_01jz",
        name="web-1",
        state="running",
        shape=shape or Shape(vcpu=4, memory_gib=8, disk_gib=40),
        placement=placement,
        gpu_pci_addresses=gpus,
    )


def domain(placement: HostPlacement, **kwargs: Any) -> ET.Element:
    return ET.fromstring(render_libvirt_domain(spec(placement, **kwargs)))


def test_spec_document() -> None:
    doc = spec(PINNED_HUGE_GPU, Shape(4, 8, 40, gpus=1), gpus=("0000:17:00.0",))
    assert doc == {
        "id": "ins_01jz",
        "name": "web-1",
        "state": "running",
        "shape": {"vcpu": 4, "memoryGiB": 8, "diskGiB": 40, "gpus": 1},
        "placement": {
            "cpus": [6, 7, 2, 3],
            "cpuset": [2, 3, 6, 7],
            "mems": [0],
            "hugepageSizeBytes": GIB_PAGE,
        },
        "balloon": {"enabled": False, "floorPercent": 50},
        "gpus": [{"pciAddress": "0000:17:00.0"}],
    }


def test_spec_of_a_floating_guest() -> None:
    doc = spec(FLOATING_BALLOON)
    assert doc["placement"] == {
        "cpus": None,
        "cpuset": [2, 3, 4, 5, 8],
        "mems": None,
        "hugepageSizeBytes": None,
    }
    assert doc["balloon"] == {"enabled": True, "floorPercent": 50}
    assert doc["gpus"] == []


def _attrs(root: ET.Element, path: str) -> list[dict[str, str]]:
    return [dict(e.attrib) for e in root.findall(path)]


@pytest.mark.parametrize(
    ("placement", "path", "expected"),
    [
        pytest.param(
            PINNED_HUGE_GPU,
            "cputune/vcpupin",
            [
                {"vcpu": "0", "cpuset": "6"},
                {"vcpu": "1", "cpuset": "7"},
                {"vcpu": "2", "cpuset": "2"},
                {"vcpu": "3", "cpuset": "3"},
            ],
            id="pinned-vcpu-i-on-cpus-i",
        ),
        pytest.param(
            PINNED_HUGE_GPU,
            "vcpu",
            [{"placement": "static", "cpuset": "2-3,6-7"}],
            id="pinned-vcpu-cpuset",
        ),
        pytest.param(FLOATING_BALLOON, "cputune", [], id="floating-has-no-cputune"),
        pytest.param(
            FLOATING_BALLOON,
            "vcpu",
            [{"placement": "static", "cpuset": "2-5,8"}],
            id="floating-cpuset-keeps-off-reserved-cpus",
        ),
        pytest.param(
            PINNED_HUGE_GPU,
            "numatune/memory",
            [{"mode": "strict", "nodeset": "0"}],
            id="numatune-strict-on-mems",
        ),
        pytest.param(
            FLOATING_ON_NODE,
            "numatune/memory",
            [{"mode": "strict", "nodeset": "1"}],
            id="affine-floating-guest-bound-to-its-node",
        ),
        pytest.param(FLOATING_BALLOON, "numatune", [], id="no-mems-no-numatune"),
        pytest.param(
            PINNED_HUGE_GPU,
            "memoryBacking/hugepages/page",
            [{"size": "1048576", "unit": "KiB", "nodeset": "0"}],
            id="hugepages-page-size-in-kib",
        ),
        pytest.param(
            PINNED_HUGE_GPU,
            "cpu/numa/cell",
            [{"id": "0", "cpus": "0-3", "memory": "8388608", "unit": "KiB"}],
            id="hugepages-guest-cell-for-page-nodeset",
        ),
        pytest.param(FLOATING_BALLOON, "memoryBacking", [], id="no-hugepages-no-memory-backing"),
        pytest.param(
            FLOATING_BALLOON, "devices/memballoon", [{"model": "virtio"}], id="balloon-virtio"
        ),
        pytest.param(
            PINNED_HUGE_GPU, "devices/memballoon", [{"model": "none"}], id="no-balloon-model-none"
        ),
    ],
)
def test_libvirt_domain(
    placement: HostPlacement, path: str, expected: list[dict[str, str]]
) -> None:
    assert _attrs(domain(placement), path) == expected


def test_libvirt_domain_basics() -> None:
    root = domain(FLOATING_BALLOON)
    assert root.tag == "domain"
    assert root.get("type") == "kvm"
    assert root.findtext("name") == "ins_01jz"
    assert root.findtext("title") == "web-1"
    assert root.findtext("vcpu") == "4"
    assert root.findtext("memory") == str(8 * 1024 * 1024)
    assert root.find("memory").get("unit") == "KiB"  # type: ignore[union-attr]
    assert _attrs(root, "devices/disk/source") == [{"pool": "bcfleet", "volume": "ins_01jz.qcow2"}]
    assert root.find("devices/memballoon/stats") is not None


def test_gpus_are_vfio_hostdevs() -> None:
    root = domain(PINNED_HUGE_GPU, gpus=("0000:17:00.0", "0000:CA:1f.7"))
    hostdevs = root.findall("devices/hostdev")
    assert [h.attrib for h in hostdevs] == [
        {"mode": "subsystem", "type": "pci", "managed": "yes"}
    ] * 2
    assert _attrs(root, "devices/hostdev/source/address") == [
        {"domain": "0x0000", "bus": "0x17", "slot": "0x00", "function": "0x0"},
        {"domain": "0x0000", "bus": "0xca", "slot": "0x1f", "function": "0x7"},
    ]


def test_bad_pci_address() -> None:
    with pytest.raises(ValueError, match="PCI address"):
        render_libvirt_domain(spec(PINNED_HUGE_GPU, gpus=("17:00.0",)))


def test_rendering_is_deterministic() -> None:
    doc = spec(PINNED_HUGE_GPU)
    assert render_libvirt_domain(doc) == render_libvirt_domain(doc)
    assert render_libvirt_domain(doc).endswith("</domain>\n")


def test_from_inventory_to_domain() -> None:
    inv = Inventory.from_json(
        {
            "cpus": [{"id": i, "numaNode": i // 8, "isolated": i in (6, 7)} for i in range(16)],
            "numaNodes": [
                {
                    "id": 0,
                    "memoryGiB": 64,
                    "hugepages": [{"sizeBytes": GIB_PAGE, "total": 32, "free": 32}],
                },
                {"id": 1, "memoryGiB": 64, "hugepages": []},
            ],
            "memoryGiB": 128,
            "diskGiB": 2000,
            "gpus": [{"model": "L40S", "pciAddress": "0000:17:00.0", "numaNode": 0}],
        }
    )
    shape = Shape(vcpu=4, memory_gib=8, disk_gib=200, gpus=1)
    policy = PlacementPolicy(numa_affine=True, pinned=True, hugepage_size_bytes=GIB_PAGE)
    placement = choose_host_placement(inv, shape, policy, gpus=inv.gpus, memory_ratio=1.5)
    doc = spec(placement, shape, gpus=tuple(g.pci_address for g in inv.gpus))
    root = ET.fromstring(render_libvirt_domain(doc))
    assert [p.get("cpuset") for p in root.findall("cputune/vcpupin")] == ["6", "7", "2", "3"]
    assert _attrs(root, "numatune/memory") == [{"mode": "strict", "nodeset": "0"}]
    assert _attrs(root, "devices/memballoon") == [{"model": "none"}]
    assert len(root.findall("devices/hostdev")) == 1


@pytest.mark.parametrize(
    ("ids", "text"),
    [
        pytest.param((0, 1, 2, 5, 7, 8), "0-2,5,7-8", id="runs-and-singles"),
        pytest.param((3,), "3", id="single"),
        pytest.param((), "", id="empty"),
        pytest.param((9, 8, 8, 1), "1,8-9", id="unordered-with-duplicates"),
    ],
)
def test_format_cpuset(ids: tuple[int, ...], text: str) -> None:
    assert format_cpuset(ids) == text


@given(st.sets(st.integers(0, 255)))
def test_cpuset_round_trip(ids: set[int]) -> None:
    assert parse_cpuset(format_cpuset(ids)) == tuple(sorted(ids))

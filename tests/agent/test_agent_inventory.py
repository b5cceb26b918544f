"""Host inventory: reading sysfs and procfs, validating reports, and simulated hosts."""

from __future__ import annotations

import copy
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bcfleet import __version__
from bcfleet.agent.inventory import gpu_model, parse_cpulist, read_inventory
from bcfleet.domain.inventory import json_path, semantic_problems
from bcfleet.domain.simulated_inventory import (
    SHAPES,
    gpu_numa_unknown_host,
    no_numa_host,
    simulated_fleet,
    simulated_inventory,
    two_socket_host,
)
from bcfleet.errors import InvalidInputError, NotFoundError, UnsupportedError
from bcfleet.schemas import load_schema, schema_names
from bcfleet.schemas.inventory import inventory_problems, validate_inventory

SCHEMA = load_schema("inventory")
GIB_KIB = 1024**2
L40S, H100 = ("0x10de", "0x26b9"), ("0x10de", "0x2330")


class FakeHost:
    """A sysfs and procfs tree under tmp_path, written a file at a time."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.write("proc/sys/kernel/hostname", "fake-01")

    def write(self, relative: str, text: str) -> FakeHost:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text + "\n")
        return self

    def cpus(self, online: str | None, isolated: str | None = "") -> FakeHost:
        if online is not None:
            self.write("sys/devices/system/cpu/online", online)
        if isolated is not None:
            self.write("sys/devices/system/cpu/isolated", isolated)
        return self

    def cpu_dir(self, cpu: int, online: str | None = None) -> FakeHost:
        directory = self.root / f"sys/devices/system/cpu/cpu{cpu}"
        directory.mkdir(parents=True, exist_ok=True)
        if online is not None:
            self.write(f"sys/devices/system/cpu/cpu{cpu}/online", online)
        return self

    def memory(self, kib: int) -> FakeHost:
        return self.write("proc/meminfo", f"MemTotal:       {kib} kB\nMemFree:        1024 kB")

    def node(
        self, node: int, cpulist: str, kib: int, pages: dict[int, tuple[int, int]]
    ) -> FakeHost:
        base = f"sys/devices/system/node/node{node}"
        self.write(f"{base}/cpulist", cpulist)
        self.write(
            f"{base}/meminfo", f"Node {node} MemTotal:       {kib} kB\nNode {node} MemFree: 1 kB"
        )
        for size_kib, (total, free) in pages.items():
            self.write(f"{base}/hugepages/hugepages-{size_kib}kB/nr_hugepages", str(total))
            self.write(f"{base}/hugepages/hugepages-{size_kib}kB/free_hugepages", str(free))
        return self

    def disk(
        self, name: str, sectors: int, removable: str = "0", hidden: str | None = None
    ) -> FakeHost:
        self.write(f"sys/block/{name}/size", str(sectors))
        self.write(f"sys/block/{name}/removable", removable)
        if hidden is not None:
            self.write(f"sys/block/{name}/hidden", hidden)
        return self

    def pci(
        self, address: str, pci_class: str, ids: tuple[str, str], numa_node: str | None
    ) -> FakeHost:
        base = f"sys/bus/pci/devices/{address}"
        self.write(f"{base}/class", pci_class)
        self.write(f"{base}/vendor", ids[0])
        self.write(f"{base}/device", ids[1])
        if numa_node is not None:
            self.write(f"{base}/numa_node", numa_node)
        return self


def cpu(ident: int, node: int | None, isolated: bool = False) -> dict[str, Any]:
    return {"id": ident, "numaNode": node, "isolated": isolated}


def gpu(model: str, address: str, node: int | None) -> dict[str, Any]:
    return {"model": model, "pciAddress": address, "numaNode": node}


@pytest.fixture
def host(tmp_path: Path) -> FakeHost:
    return FakeHost(tmp_path)


def two_numa_machine(host: FakeHost) -> FakeHost:
    (
        host.cpus("0-7", isolated="2-3,6-7")
        .memory(16 * GIB_KIB)
        .node(0, "0-3", 8 * GIB_KIB, {2048: (512, 500), 1048576: (4, 4)})
        .node(1, "4-7", 8 * GIB_KIB, {1048576: (2, 1), 2048: (0, 0)})
        .disk("nvme0n1", 2 * 1024**3 // 512 * 1000)
        .disk("sda", 1024**3 // 512 * 500)
        .disk("nvme0c0n1", 1024**3 // 512 * 999, hidden="1")
        .disk("sr0", 2097151, removable="1")
        .disk("loop0", 4096)
        .disk("zram0", 8192)
        .disk("dm-0", 1024**3 // 512 * 100)
        .disk("md127", 1024**3 // 512 * 100)
        .pci("0000:17:00.0", "0x030200", L40S, "0")
        .pci("0000:98:00.0", "0x030200", H100, "1")
        .pci("0000:ca:00.0", "0x030000", ("0x10de", "0x2684"), "1")
        .pci("0000:03:00.0", "0x030000", ("0x1a03", "0x2000"), "0")
        .pci("0000:31:00.0", "0x020000", ("0x15b3", "0x101d"), "0")
    )
    return host


ISOLATED_2_3_ON_NODE_0 = [cpu(0, 0), cpu(1, 0), cpu(2, 0, True), cpu(3, 0, True)]
ISOLATED_6_7_ON_NODE_1 = [cpu(4, 1), cpu(5, 1), cpu(6, 1, True), cpu(7, 1, True)]


def test_two_numa_nodes_with_isolated_cpus_huge_pages_disks_and_gpus(host: FakeHost) -> None:
    inventory = read_inventory(two_numa_machine(host).root)

    assert inventory == {
        "cpus": [*ISOLATED_2_3_ON_NODE_0, *ISOLATED_6_7_ON_NODE_1],
        "numaNodes": [
            {
                "id": 0,
                "memoryGiB": 8.0,
                "hugepages": [
                    {"sizeBytes": 2097152, "total": 512, "free": 500},
                    {"sizeBytes": 1073741824, "total": 4, "free": 4},
                ],
            },
            {
                "id": 1,
                "memoryGiB": 8.0,
                "hugepages": [
                    {"sizeBytes": 2097152, "total": 0, "free": 0},
                    {"sizeBytes": 1073741824, "total": 2, "free": 1},
                ],
            },
        ],
        "memoryGiB": 16.0,
        "diskGiB": 2500.0,
        "gpus": [
            gpu("L40S", "0000:17:00.0", 0),
            gpu("H100", "0000:98:00.0", 1),
            gpu("10de:2684", "0000:ca:00.0", 1),
        ],
        "agent": {"version": __version__, "hostname": "fake-01"},
    }
    validate_inventory(inventory, SCHEMA)


def test_host_without_numa_topology_reads_cpu_dirs_and_reports_unknown_nodes(
    host: FakeHost,
) -> None:
    host.cpus(None, isolated=None).memory(4 * GIB_KIB + 512).disk("vda", 1024**3 // 512 * 40)
    host.cpu_dir(0).cpu_dir(1, online="1").cpu_dir(2, online="0").cpu_dir(3, online="1")
    host.pci("0000:00:02.0", "0x030000", ("0x1234", "0x1111"), None)
    host.pci("0000:00:05.0", "0x030200", L40S, "-1")

    inventory = read_inventory(host.root)

    assert inventory["cpus"] == [cpu(0, None), cpu(1, None), cpu(3, None)]
    assert inventory["numaNodes"] == []
    assert inventory["memoryGiB"] == 4.0
    assert inventory["diskGiB"] == 40.0
    assert inventory["gpus"] == [gpu("L40S", "0000:00:05.0", None)]
    validate_inventory(inventory, SCHEMA)


def test_gpus_whose_node_is_unknown_or_unlisted_report_null(host: FakeHost) -> None:
    host.cpus("0-3").memory(8 * GIB_KIB)
    host.node(0, "0-1", 4 * GIB_KIB, {}).node(1, "2-3", 4 * GIB_KIB, {})
    host.pci("0000:17:00.0", "0x030200", L40S, "-1")
    host.pci("0000:31:00.0", "0x030200", L40S, None)
    host.pci("0000:4b:00.0", "0x030200", L40S, "5")
    host.pci("0000:98:00.0", "0x030200", L40S, "1")

    inventory = read_inventory(host.root)

    assert [g["numaNode"] for g in inventory["gpus"]] == [None, None, None, 1]
    assert all(node["hugepages"] == [] for node in inventory["numaNodes"])
    assert inventory["diskGiB"] == 0.0
    validate_inventory(inventory, SCHEMA)


def test_cpu_missing_from_every_node_list_has_unknown_node(host: FakeHost) -> None:
    host.cpus("0-2").memory(GIB_KIB).node(0, "0-1", GIB_KIB, {})

    assert [c["numaNode"] for c in read_inventory(host.root)["cpus"]] == [0, 0, None]


def test_hostname_falls_back_to_this_process(host: FakeHost) -> None:
    (host.root / "proc/sys/kernel/hostname").unlink()
    host.cpus("0").memory(GIB_KIB)

    assert read_inventory(host.root)["agent"]["hostname"]


@pytest.mark.parametrize(
    ("build", "missing"),
    [
        pytest.param(lambda h: h.cpus("0-1"), "/proc/meminfo", id="no-meminfo"),
        pytest.param(lambda h: h.memory(GIB_KIB), "/sys/devices/system/cpu", id="no-cpus"),
    ],
)
def test_a_tree_that_is_not_linux_is_unsupported(host: FakeHost, build: Any, missing: str) -> None:
    build(host)

    with pytest.raises(UnsupportedError) as caught:
        read_inventory(host.root)
    assert caught.value.details["path"] == missing


@pytest.mark.parametrize(
    ("text", "cpus"),
    [
        pytest.param("", [], id="empty"),
        pytest.param("\n", [], id="newline-only"),
        pytest.param("5", [5], id="single"),
        pytest.param("2-5,8", [2, 3, 4, 5, 8], id="range-and-single"),
        pytest.param("0-1,0-3", [0, 1, 2, 3], id="overlap"),
        pytest.param("10-11,0", [0, 10, 11], id="unordered"),
    ],
)
def test_cpulist_syntax(text: str, cpus: list[int]) -> None:
    assert parse_cpulist(text) == cpus


@pytest.mark.parametrize("text", ["3-1", "a", "1-"])
def test_malformed_cpulist_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_cpulist(text)


@given(st.sets(st.integers(min_value=0, max_value=4096)))
def test_cpulist_written_as_ranges_reads_back(cpus: set[int]) -> None:
    ordered, parts = sorted(cpus), []
    start = 0
    for index in range(1, len(ordered) + 1):
        if index == len(ordered) or ordered[index] != ordered[index - 1] + 1:
            first, last = ordered[start], ordered[index - 1]
            parts.append(str(first) if first == last else f"{first}-{last}")
            start = index

    assert parse_cpulist(",".join(parts)) == ordered


@pytest.mark.parametrize(
    ("vendor", "device", "model"),
    [
        pytest.param(0x10DE, 0x26B9, "L40S", id="l40s"),
        pytest.param(0x10DE, 0x2330, "H100", id="h100-sxm"),
        pytest.param(0x10DE, 0x20B5, "A100", id="a100-pcie-80g"),
        pytest.param(0x10DE, 0x2684, "10de:2684", id="unknown-nvidia"),
        pytest.param(0x1002, 0x740F, "1002:740f", id="other-vendor"),
    ],
)
def test_gpu_models(vendor: int, device: int, model: str) -> None:
    assert gpu_model(vendor, device) == model


# Validation


def valid_inventory() -> dict[str, Any]:
    return {
        "cpus": [cpu(0, 0), cpu(1, 0, isolated=True), cpu(2, 1), cpu(3, 1)],
        "numaNodes": [
            {
                "id": 0,
                "memoryGiB": 64,
                "hugepages": [{"sizeBytes": 1 << 30, "total": 8, "free": 8}],
            },
            {"id": 1, "memoryGiB": 64, "hugepages": []},
        ],
        "memoryGiB": 128,
        "diskGiB": 1000,
        "gpus": [gpu("L40S", "0000:17:00.0", 0), gpu("L40S", "0000:98:00.0", None)],
        "agent": {"version": "1", "hostname": "h"},
    }


def test_valid_inventory_has_no_problems() -> None:
    validate_inventory(valid_inventory(), SCHEMA)


DELETE = object()


def change_at(doc: dict[str, Any], path: str, value: Any) -> None:
    """Set, delete or append (at the next index) the value at a JSON path like ``$.cpus[1].id``."""
    parts: list[Any] = [
        int(index) if index else key for key, index in re.findall(r"\.(\w+)|\[(\d+)\]", path)
    ]
    target: Any = doc
    for part in parts[:-1]:
        target = target[part]
    last = parts[-1]
    if value is DELETE:
        del target[last]
    elif isinstance(last, int) and last == len(target):
        target.append(value)
    else:
        target[last] = value


def problem(ident: str, path: str, value: Any, words: str, at: str | None = None) -> Any:
    return pytest.param(path, value, words, at or path, id=ident)


NODE_1 = {"id": 1, "memoryGiB": 1, "hugepages": []}
PAGE_1G = {"sizeBytes": 1 << 30, "total": 0, "free": 0}


@pytest.mark.parametrize(
    ("path", "value", "words", "at"),
    [
        problem("missing-field", "$.diskGiB", DELETE, "'diskGiB' is a required", at="$"),
        problem("unknown-field", "$.extra", 1, "'extra' was unexpected", at="$"),
        problem("no-cpus", "$.cpus", [], "should be non-empty"),
        problem("isolated-not-bool", "$.cpus[1].isolated", "yes", "is not of type 'boolean'"),
        problem("negative-memory", "$.memoryGiB", -1, "less than the minimum of 0"),
        problem("tiny-page", "$.numaNodes[0].hugepages[0].sizeBytes", 512, "minimum of 4096"),
        problem("short-pci-address", "$.gpus[0].pciAddress", "17:00.0", "does not match"),
        problem("gpu-node-minus-one", "$.gpus[0].numaNode", -1, "less than the minimum of 0"),
        problem("duplicate-cpu", "$.cpus[2].id", 0, "duplicate CPU id 0 (also at $.cpus[0])"),
        problem(
            "duplicate-node",
            "$.numaNodes[2]",
            NODE_1,
            "duplicate NUMA node id 1",
            at="$.numaNodes[2].id",
        ),
        problem("cpu-unlisted-node", "$.cpus[3].numaNode", 7, "NUMA node 7, which is not listed"),
        problem("gpu-unlisted-node", "$.gpus[1].numaNode", 2, "NUMA node 2, which is not listed"),
        problem(
            "more-free-than-total",
            "$.numaNodes[0].hugepages[0].free",
            9,
            "9 free huge pages but only 8",
        ),
        problem(
            "page-size-twice",
            "$.numaNodes[0].hugepages[1]",
            PAGE_1G,
            "huge page size 1073741824 listed twice",
            at="$.numaNodes[0].hugepages[1].sizeBytes",
        ),
    ],
)
def test_each_problem_is_reported_at_its_json_path(
    path: str, value: Any, words: str, at: str
) -> None:
    doc = valid_inventory()
    change_at(doc, path, value)

    with pytest.raises(InvalidInputError) as caught:
        validate_inventory(doc, SCHEMA)

    error = caught.value
    assert error.code == "INVALID_INPUT"
    assert len(error.details["problems"]) == 1, error.details
    [found] = error.details["problems"]
    assert found["path"] == at
    assert words in found["message"]
    assert f"{at}: " in error.message


def test_every_problem_is_listed_at_once() -> None:
    doc = valid_inventory()
    doc["cpus"][2]["id"] = 0
    doc["gpus"][0]["model"] = ""
    doc["numaNodes"][0]["hugepages"][0]["free"] = 100
    doc.pop("memoryGiB")

    with pytest.raises(InvalidInputError) as caught:
        validate_inventory(doc, SCHEMA)

    paths = [p["path"] for p in caught.value.details["problems"]]
    assert sorted(paths) == sorted(
        ["$", "$.gpus[0].model", "$.cpus[2].id", "$.numaNodes[0].hugepages[0].free"]
    )
    assert caught.value.message.startswith("invalid inventory (4 problems): ")


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(None, id="null"),
        pytest.param([], id="list"),
        pytest.param({"cpus": "all"}, id="cpus-not-a-list"),
        pytest.param({"cpus": [1, None, {"id": "0"}]}, id="cpus-not-objects"),
    ],
)
def test_malformed_documents_are_problems_not_crashes(doc: Any) -> None:
    assert inventory_problems(doc, SCHEMA)
    with pytest.raises(InvalidInputError):
        validate_inventory(doc, SCHEMA)


def test_without_numa_nodes_node_numbers_are_not_checked() -> None:
    doc = valid_inventory()
    doc["numaNodes"] = []

    assert semantic_problems(doc) == []


def test_json_paths() -> None:
    assert json_path([]) == "$"
    assert json_path(["numaNodes", 0, "hugepages", 2, "free"]) == "$.numaNodes[0].hugepages[2].free"


def test_schemas_load_by_short_or_file_name() -> None:
    assert "inventory" in schema_names()
    assert load_schema("inventory.schema.json") == SCHEMA
    load_schema("inventory")["title"] = "changed"
    assert load_schema("inventory")["title"] == SCHEMA["title"]
    with pytest.raises(NotFoundError):
        load_schema("nope")


# Simulated hosts


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("seed", [0, 1, 2024])
def test_simulated_shapes_are_valid_and_deterministic(shape: str, seed: int) -> None:
    inventory = simulated_inventory(shape, seed)

    validate_inventory(inventory, SCHEMA)
    assert simulated_inventory(shape, seed) == inventory


def test_seeds_vary_what_varies_between_real_hosts() -> None:
    first, second = two_socket_host(1, gpus=8), two_socket_host(2, gpus=8)

    assert first["agent"]["hostname"] != second["agent"]["hostname"]
    assert first["memoryGiB"] != second["memoryGiB"]
    assert first["cpus"] == second["cpus"]


@pytest.mark.parametrize(("gpus", "per_node"), [(0, [0, 0]), (4, [2, 2]), (8, [4, 4]), (3, [2, 1])])
def test_two_socket_host_shape(gpus: int, per_node: list[int]) -> None:
    inventory = two_socket_host(7, gpus=gpus)

    assert len(inventory["cpus"]) == 64
    assert [n["id"] for n in inventory["numaNodes"]] == [0, 1]
    for node in (0, 1):
        on_node = [c for c in inventory["cpus"] if c["numaNode"] == node]
        assert len(on_node) == 32
        assert len([c for c in on_node if c["isolated"]]) == 2
        assert [g["numaNode"] for g in inventory["gpus"]].count(node) == per_node[node]
    for node in inventory["numaNodes"]:
        one_gib = [p for p in node["hugepages"] if p["sizeBytes"] == 1 << 30]
        assert one_gib == [{"sizeBytes": 1 << 30, "total": 64, "free": 64}]
        assert 125 < node["memoryGiB"] < 128
    assert 250 < inventory["memoryGiB"] < 256
    assert 1860 < inventory["diskGiB"] < 1865
    assert {g["model"] for g in inventory["gpus"]} <= {"L40S"}
    assert len({g["pciAddress"] for g in inventory["gpus"]}) == gpus


def test_no_numa_host_has_no_topology() -> None:
    inventory = no_numa_host(3, cpus=8, gpus=2)

    assert inventory["numaNodes"] == []
    assert {c["numaNode"] for c in inventory["cpus"]} == {None}
    assert [g["numaNode"] for g in inventory["gpus"]] == [None, None]
    validate_inventory(inventory, SCHEMA)


def test_gpu_numa_unknown_host_keeps_cpu_topology() -> None:
    inventory = gpu_numa_unknown_host(3)

    assert len(inventory["gpus"]) == 4
    assert {g["numaNode"] for g in inventory["gpus"]} == {None}
    assert {c["numaNode"] for c in inventory["cpus"]} == {0, 1}


def test_simulated_fleet_is_valid_with_distinct_names() -> None:
    fleet = simulated_fleet(25, seed=9)

    for inventory in fleet:
        validate_inventory(inventory, SCHEMA)
    assert len({i["agent"]["hostname"] for i in fleet}) == 25
    assert simulated_fleet(25, seed=9) == fleet


@pytest.mark.parametrize(
    "make",
    [
        pytest.param(lambda: two_socket_host(gpus=9), id="too-many-gpus"),
        pytest.param(lambda: no_numa_host(gpus=-1), id="negative-gpus"),
        pytest.param(lambda: no_numa_host(cpus=0), id="no-cpus"),
        pytest.param(lambda: simulated_inventory("mainframe"), id="unknown-shape"),
    ],
)
def test_impossible_simulated_hosts_are_invalid_input(make: Any) -> None:
    with pytest.raises(InvalidInputError):
        make()


def test_simulated_documents_are_independent_copies() -> None:
    inventory = two_socket_host(5, gpus=4)
    pristine = copy.deepcopy(inventory)
    inventory["gpus"][0]["numaNode"] = None

    assert two_socket_host(5, gpus=4) == pristine


# This machine


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads Linux sysfs and procfs")
def test_this_machine_inventory_is_valid_and_matches_the_kernel() -> None:
    inventory = read_inventory("/")

    validate_inventory(inventory, SCHEMA)
    online = parse_cpulist(Path("/sys/devices/system/cpu/online").read_text())
    assert [c["id"] for c in inventory["cpus"]] == online
    assert len(inventory["cpus"]) == os.cpu_count()
    meminfo = Path("/proc/meminfo").read_text()
    kib = int(
        next(line for line in meminfo.splitlines() if line.startswith("MemTotal:")).split()[1]
    )
    assert inventory["memoryGiB"] == pytest.approx(kib / GIB_KIB, abs=0.001)
    assert inventory["agent"]["version"] == __version__

"""The host memory readers (agent/host_memory.py) on fake procfs and sysfs trees: meminfo,
memory pressure and huge page pools, and what a missing or garbled file gives."""

from __future__ import annotations

from pathlib import Path

import pytest

from bcfleet.agent.host_memory import (
    read_host_memory,
    read_hugepage_pools,
    read_meminfo,
    read_memory_pressure,
)
from bcfleet.domain.balloon import HostMemory
from bcfleet.domain.shapes import HugepagePool
from bcfleet.errors import UnsupportedError

GIB = 1 << 30
MEMINFO = """MemTotal:       65536000 kB
MemFree:         1024000 kB
MemAvailable:    6553600 kB
Buffers:          102400 kB
HugePages_Total:       0
Hugepagesize:       2048 kB"""
PSI = """some avg10=12.50 avg60=3.10 avg300=0.80 total=123456
full avg10=4.00 avg60=1.00 avg300=0.20 total=45678"""


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")


def pages(root: Path, folder: str, size_kib: int, total: str, free: str) -> None:
    write(root, f"{folder}/hugepages-{size_kib}kB/nr_hugepages", total)
    write(root, f"{folder}/hugepages-{size_kib}kB/free_hugepages", free)


def node(number: int) -> str:
    return f"sys/devices/system/node/node{number}/hugepages"


def test_the_host_memory_of_meminfo_and_pressure(tmp_path: Path) -> None:
    write(tmp_path, "proc/meminfo", MEMINFO)
    write(tmp_path, "proc/pressure/memory", PSI)
    assert read_host_memory(tmp_path) == HostMemory(65536000 * 1024, 6553600 * 1024, 12.5)


def test_no_pressure_file_is_none_and_the_memory_still_reads(tmp_path: Path) -> None:
    write(tmp_path, "proc/meminfo", MEMINFO)
    assert read_memory_pressure(tmp_path) is None
    assert read_host_memory(tmp_path).pressure_some_avg10 is None


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        pytest.param(None, "cannot read it", id="no-meminfo"),
        pytest.param("MemTotal:  65536000 kB\nMemFree: 1 kB", "MemAvailable", id="old-kernel"),
        pytest.param("MemTotal: lots kB\nMemAvailable: 1 kB", "MemTotal", id="garbage-total"),
        pytest.param("MemTotal: 10 kB\nMemAvailable: -1 kB", "MemAvailable", id="negative"),
        pytest.param("MemTotal: 10 MB\nMemAvailable: 1 kB", "MemTotal", id="not-kb"),
        pytest.param("MemTotal: 0 kB\nMemAvailable: 0 kB", "MemTotal is 0", id="zero-total"),
        pytest.param("\x00\xff garbage", "MemTotal", id="binary"),
    ],
)
def test_a_meminfo_without_the_figures_is_unsupported(
    tmp_path: Path, text: str | None, missing: str
) -> None:
    if text is not None:
        write(tmp_path, "proc/meminfo", text)
    with pytest.raises(UnsupportedError, match=missing) as caught:
        read_meminfo(tmp_path)
    assert caught.value.details == {"path": "/proc/meminfo"}


@pytest.mark.parametrize(
    ("text", "avg10"),
    [
        pytest.param(PSI, 12.5, id="some-line"),
        pytest.param("some avg10=0.00 avg60=0.00 avg300=0.00 total=0", 0.0, id="calm"),
        pytest.param("full avg10=1.00 total=0\nsome avg10=100.00 total=9", 100.0, id="order"),
    ],
)
def test_the_memory_pressure_is_some_avg10(tmp_path: Path, text: str, avg10: float) -> None:
    write(tmp_path, "proc/pressure/memory", text)
    assert read_memory_pressure(tmp_path) == avg10


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("", id="empty"),
        pytest.param("full avg10=1.00 avg60=0 avg300=0 total=0", id="no-some-line"),
        pytest.param("some avg60=1.00 total=0", id="no-avg10"),
        pytest.param("some avg10=high total=0", id="not-a-number"),
        pytest.param("some avg10=nan total=0", id="nan"),
        pytest.param("some avg10=250.0 total=0", id="over-100"),
    ],
)
def test_a_garbled_pressure_file_is_unsupported(tmp_path: Path, text: str) -> None:
    write(tmp_path, "proc/pressure/memory", text)
    with pytest.raises(UnsupportedError, match="some avg10") as caught:
        read_memory_pressure(tmp_path)
    assert caught.value.details == {"path": "/proc/pressure/memory"}


def test_huge_page_pools_per_numa_node_and_size(tmp_path: Path) -> None:
    pages(tmp_path, node(0), 2048, "512", "100")
    pages(tmp_path, node(0), 1048576, "8", "2")
    pages(tmp_path, node(1), 1048576, "8", "8")
    (tmp_path / "sys/devices/system/node/node2").mkdir(parents=True)  # no hugetlb on node 2
    pages(tmp_path, "sys/kernel/mm/hugepages", 2048, "1024", "1024")  # not read: nodes exist
    assert read_hugepage_pools(tmp_path) == {
        0: (HugepagePool(2 << 20, 512, 100), HugepagePool(GIB, 8, 2)),
        1: (HugepagePool(GIB, 8, 8),),
        2: (),
    }


def test_a_host_without_numa_nodes_has_the_global_pool(tmp_path: Path) -> None:
    pages(tmp_path, "sys/kernel/mm/hugepages", 2048, "1024", "1000")
    (tmp_path / "sys/kernel/mm/hugepages/not-a-size").mkdir()
    assert read_hugepage_pools(tmp_path) == {None: (HugepagePool(2 << 20, 1024, 1000),)}


def test_a_host_without_huge_pages_has_no_pools(tmp_path: Path) -> None:
    assert read_hugepage_pools(tmp_path) == {None: ()}


@pytest.mark.parametrize(
    ("total", "free", "bad"),
    [
        pytest.param("8", "two", "free_hugepages", id="garbage-free"),
        pytest.param("-8", "2", "nr_hugepages", id="negative-total"),
        pytest.param("8", "", "free_hugepages", id="empty-free"),
        pytest.param("8", None, "free_hugepages", id="missing-free"),
    ],
)
def test_garbled_huge_page_counts_are_unsupported(
    tmp_path: Path, total: str, free: str | None, bad: str
) -> None:
    pages(tmp_path, node(0), 1048576, total, "0" if free is None else free)
    if free is None:
        (tmp_path / node(0) / "hugepages-1048576kB/free_hugepages").unlink()
    with pytest.raises(UnsupportedError, match=bad) as caught:
        read_hugepage_pools(tmp_path)
    assert caught.value.details == {"path": f"/{node(0)}/hugepages-1048576kB/{bad}"}

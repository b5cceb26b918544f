"""A Linux host's inventory from sysfs and procfs; `fleet agent inventory` and `run` call it.

Everything is read below an injectable root (default ``/``), so tests point it
at a fake tree. What each field comes from:

- ``cpus``: ``/sys/devices/system/cpu/online`` (else the ``cpuN`` directories
  whose ``online`` is not 0); each CPU's node from ``node/nodeN/cpulist``, null
  when no node lists it; ``isolated`` from ``cpu/isolated``.
- ``numaNodes``: one per ``/sys/devices/system/node/nodeN``, with ``MemTotal``
  of ``nodeN/meminfo`` and every huge page size the kernel offers there
  (``hugepages-<size>kB/nr_hugepages`` and ``free_hugepages``), sizes with no
  pages included; empty when the node directory is absent.
- ``memoryGiB``: ``MemTotal`` of ``/proc/meminfo``.
- ``diskGiB``: the sum of the whole disks in ``/sys/block`` (``size`` counts
  512-byte sectors). Left out: removable and hidden devices (NVMe multipath
  paths), empty ones, and virtual or stacked devices (loop, ram, zram, dm-,
  md, nbd, zd, drbd), which are not disks or would count a disk twice.
- ``gpus``: PCI functions of class 0x0300xx (VGA) or 0x0302xx (3D controller),
  except the console adapters of BMCs and hypervisors (ASPEED, Matrox, QEMU,
  Cirrus, QXL, VMware, Hyper-V); the model from a small table of NVIDIA data
  centre GPUs, else ``vendor:device`` as lspci -n prints it; the node from
  ``numa_node`` when it names a listed node, else null.

GiB figures are rounded to 3 decimals (1 MiB).
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from bcfleet import __version__
from bcfleet.errors import UnsupportedError

GIB = 1024**3
SECTOR_BYTES = 512

NOT_WHOLE_DISKS = ("loop", "ram", "zram", "dm-", "md", "nbd", "zd", "drbd")
GPU_CLASSES = frozenset({0x0300, 0x0302})
CONSOLE_VENDORS = frozenset({0x1A03, 0x102B, 0x1234, 0x1013, 0x1B36, 0x15AD, 0x1414})
NVIDIA = 0x10DE
GPU_MODELS: dict[tuple[int, int], str] = {
    (NVIDIA, 0x1DB1): "V100",
    (NVIDIA, 0x1DB4): "V100",
    (NVIDIA, 0x1DB5): "V100",
    (NVIDIA, 0x1DB6): "V100",
    (NVIDIA, 0x1EB8): "T4",
    (NVIDIA, 0x20B0): "A100",
    (NVIDIA, 0x20B1): "A100",
    (NVIDIA, 0x20B2): "A100",
    (NVIDIA, 0x20B5): "A100",
    (NVIDIA, 0x20F1): "A100",
    (NVIDIA, 0x20B7): "A30",
    (NVIDIA, 0x2236): "A10",
    (NVIDIA, 0x2237): "A10G",
    (NVIDIA, 0x2330): "H100",
    (NVIDIA, 0x2331): "H100",
    (NVIDIA, 0x2335): "H200",
    (NVIDIA, 0x26B5): "L40",
    (NVIDIA, 0x26B9): "L40S",
    (NVIDIA, 0x27B8): "L4",
}

_CPU_DIR = "sys/devices/system/cpu"
NODE_DIR = "sys/devices/system/node"
_NUMBERED = re.compile(r"^(cpu|node)(\d+)$")
HUGEPAGE_DIR = re.compile(r"^hugepages-(\d+)kB$")
_MEMTOTAL = re.compile(r"MemTotal:\s+(\d+)\s*kB")


def parse_cpulist(text: str) -> list[int]:
    """The CPUs of a kernel cpulist such as ``0-3,8,10-11``, sorted; empty text is no CPUs."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        if not part:
            continue
        first, dash, last = part.partition("-")
        start = int(first)
        end = int(last) if dash else start
        if end < start:
            raise ValueError(f"bad cpulist range {part!r}")
        cpus.update(range(start, end + 1))
    return sorted(cpus)


def read_text_file(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def numbered(directory: Path, prefix: str) -> list[int]:
    """The N of every ``<prefix>N`` entry in ``directory``, sorted; empty when it is absent."""
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    found = (_NUMBERED.match(name) for name in names)
    return sorted(int(m.group(2)) for m in found if m and m.group(1) == prefix)


def _gib(amount_bytes: int) -> float:
    return round(amount_bytes / GIB, 3)


def _memtotal_kib(text: str | None) -> int | None:
    match = _MEMTOTAL.search(text or "")
    return int(match.group(1)) if match else None


def online_cpus(root: Path) -> list[int]:
    """The online CPUs: ``cpu/online``, else the ``cpuN`` directories not marked offline."""
    listed = read_text_file(root / _CPU_DIR / "online")
    if listed:
        return parse_cpulist(listed)
    return [
        n
        for n in numbered(root / _CPU_DIR, "cpu")
        if read_text_file(root / _CPU_DIR / f"cpu{n}" / "online") != "0"
    ]


def cpu_nodes(root: Path, node_ids: Iterable[int]) -> dict[int, int]:
    """CPU id → NUMA node, from each node's cpulist."""
    owner: dict[int, int] = {}
    for node in node_ids:
        for cpu in parse_cpulist(read_text_file(root / NODE_DIR / f"node{node}" / "cpulist") or ""):
            owner.setdefault(cpu, node)
    return owner


def read_cpus(root: Path, node_ids: list[int]) -> list[dict[str, Any]]:
    """The ``cpus`` entries: every online CPU with its node (or null) and whether it is isolated."""
    isolated = set(parse_cpulist(read_text_file(root / _CPU_DIR / "isolated") or ""))
    owner = cpu_nodes(root, node_ids)
    return [
        {"id": cpu, "numaNode": owner.get(cpu), "isolated": cpu in isolated}
        for cpu in online_cpus(root)
    ]


def read_hugepages(node_dir: Path) -> list[dict[str, int]]:
    """One entry per huge page size of a node, smallest first."""
    sizes: list[tuple[int, str]] = []
    try:
        names = os.listdir(node_dir / "hugepages")
    except OSError:
        return []
    for name in names:
        match = HUGEPAGE_DIR.match(name)
        if match:
            sizes.append((int(match.group(1)) * 1024, name))
    entries = []
    for size_bytes, name in sorted(sizes):
        size_dir = node_dir / "hugepages" / name
        total = int(read_text_file(size_dir / "nr_hugepages") or 0)
        free = int(read_text_file(size_dir / "free_hugepages") or 0)
        entries.append({"sizeBytes": size_bytes, "total": total, "free": free})
    return entries


def read_numa_nodes(root: Path, node_ids: list[int]) -> list[dict[str, Any]]:
    """The ``numaNodes`` entries: memory and huge pages of every node."""
    nodes = []
    for node in node_ids:
        node_dir = root / NODE_DIR / f"node{node}"
        kib = _memtotal_kib(read_text_file(node_dir / "meminfo")) or 0
        nodes.append(
            {"id": node, "memoryGiB": _gib(kib * 1024), "hugepages": read_hugepages(node_dir)}
        )
    return nodes


def read_memory_gib(root: Path) -> float:
    """``MemTotal`` of ``/proc/meminfo`` in GiB."""
    kib = _memtotal_kib(read_text_file(root / "proc" / "meminfo"))
    if kib is None:
        raise UnsupportedError(
            "no MemTotal in /proc/meminfo: the agent reads a Linux host's procfs",
            {"path": "/proc/meminfo"},
        )
    return _gib(kib * 1024)


def is_whole_disk(block_dir: Path) -> bool:
    """Whether a ``/sys/block`` entry is a real, fixed disk (see the module docstring)."""
    if block_dir.name.startswith(NOT_WHOLE_DISKS):
        return False
    return (
        read_text_file(block_dir / "removable") != "1"
        and read_text_file(block_dir / "hidden") != "1"
    )


def read_disk_gib(root: Path) -> float:
    """The summed size of the whole disks in ``/sys/block``, in GiB."""
    block = root / "sys" / "block"
    try:
        names = sorted(os.listdir(block))
    except OSError:
        return 0.0
    sectors = 0
    for name in names:
        if is_whole_disk(block / name):
            sectors += int(read_text_file(block / name / "size") or 0)
    return _gib(sectors * SECTOR_BYTES)


def _hex(path: Path) -> int | None:
    text = read_text_file(path)
    try:
        return int(text, 16) if text else None
    except ValueError:
        return None


def gpu_model(vendor: int, device: int) -> str:
    """The model name of a GPU: ``L40S`` for 10de:26b9, else ``vendor:device`` in hex."""
    return GPU_MODELS.get((vendor, device), f"{vendor:04x}:{device:04x}")


def read_gpu(device_dir: Path, node_ids: set[int]) -> dict[str, Any] | None:
    """The ``gpus`` entry of one PCI function, or None when it is not a GPU."""
    pci_class, vendor = _hex(device_dir / "class"), _hex(device_dir / "vendor")
    device = _hex(device_dir / "device")
    if pci_class is None or vendor is None or device is None:
        return None
    if pci_class >> 8 not in GPU_CLASSES or vendor in CONSOLE_VENDORS:
        return None
    try:
        node: int | None = int(read_text_file(device_dir / "numa_node") or "-1")
    except ValueError:
        node = None
    return {
        "model": gpu_model(vendor, device),
        "pciAddress": device_dir.name,
        "numaNode": node if node in node_ids else None,
    }


def read_gpus(root: Path, node_ids: list[int]) -> list[dict[str, Any]]:
    """The ``gpus`` entries, by PCI address."""
    devices = root / "sys" / "bus" / "pci" / "devices"
    try:
        names = sorted(os.listdir(devices))
    except OSError:
        return []
    known = set(node_ids)
    found = (read_gpu(devices / name, known) for name in names)
    return [gpu for gpu in found if gpu is not None]


def read_hostname(root: Path) -> str:
    """The kernel's host name under ``root``, else this process's."""
    return read_text_file(root / "proc" / "sys" / "kernel" / "hostname") or socket.gethostname()


def read_inventory(root: str | os.PathLike[str] = "/") -> dict[str, Any]:
    """This host's inventory document (``schemas/inventory.schema.json``), read below ``root``."""
    base = Path(root)
    node_ids = numbered(base / NODE_DIR, "node")
    cpus = read_cpus(base, node_ids)
    if not cpus:
        raise UnsupportedError(
            "no online CPUs in /sys/devices/system/cpu: the agent reads a Linux host's sysfs",
            {"path": "/sys/devices/system/cpu"},
        )
    return {
        "cpus": cpus,
        "numaNodes": read_numa_nodes(base, node_ids),
        "memoryGiB": read_memory_gib(base),
        "diskGiB": read_disk_gib(base),
        "gpus": read_gpus(base, node_ids),
        "agent": {"version": __version__, "hostname": read_hostname(base)},
    }

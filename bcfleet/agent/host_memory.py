"""The host's memory as the balloon and huge-page deciders need it; the libvirt driver calls it.

Read below an injectable root (default ``/``) like bcfleet.agent.inventory, so tests build a
fake tree. What each reader does with a missing or unreadable file:

- read_meminfo: ``MemTotal`` and ``MemAvailable`` of ``/proc/meminfo``, in bytes. A missing
  file, a missing line or one that is not ``<whole number> kB`` raises UnsupportedError naming
  the file: without them the agent cannot tell whether the host is short of memory.
- read_memory_pressure: ``some avg10`` of ``/proc/pressure/memory``. None when the file is
  absent or cannot be read (a kernel without PSI, or booted with ``psi=0``): the MemAvailable
  trigger alone then applies. A file that is there but not PSI's format raises
  UnsupportedError.
- read_hugepage_pools: the huge page pools per NUMA node from
  ``/sys/devices/system/node/nodeN/hugepages/hugepages-<kB>kB/{nr,free}_hugepages``, or the
  global pool of ``/sys/kernel/mm/hugepages`` under node None when sysfs lists no node. A node
  (or host) without a ``hugepages`` folder has no pools. A size folder whose counts are missing
  or not whole numbers raises UnsupportedError naming the file: admission never guesses.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

from bcfleet.agent.inventory import HUGEPAGE_DIR, NODE_DIR, numbered, read_text_file
from bcfleet.domain.balloon import HostMemory
from bcfleet.domain.hugepage_admission import HostPools
from bcfleet.domain.shapes import HugepagePool
from bcfleet.errors import UnsupportedError

KIB = 1024
MEMINFO = "proc/meminfo"
PRESSURE = "proc/pressure/memory"
GLOBAL_HUGEPAGES = "sys/kernel/mm/hugepages"
_AVG10 = re.compile(r"(?:^|\s)avg10=(\S+)")


def _unsupported(relative: str, why: str) -> UnsupportedError:
    return UnsupportedError(f"/{relative}: {why}", {"path": f"/{relative}"})


def _meminfo_kib(text: str, key: str) -> int | None:
    match = re.search(rf"^{key}:\s+([0-9]+)\s+kB\s*$", text, re.MULTILINE)
    return int(match.group(1)) if match else None


def read_meminfo(root: str | os.PathLike[str] = "/") -> tuple[int, int]:
    """(MemTotal, MemAvailable) of ``/proc/meminfo`` in bytes."""
    text = read_text_file(Path(root) / MEMINFO)
    if text is None:
        raise _unsupported(MEMINFO, "cannot read it: the agent reads a Linux host's procfs")
    figures = []
    for key in ("MemTotal", "MemAvailable"):
        kib = _meminfo_kib(text, key)
        if kib is None:
            raise _unsupported(MEMINFO, f"no {key} line reading '<whole number> kB'")
        figures.append(kib * KIB)
    if figures[0] == 0:
        raise _unsupported(MEMINFO, "MemTotal is 0 kB")
    return figures[0], figures[1]


def read_memory_pressure(root: str | os.PathLike[str] = "/") -> float | None:
    """``some avg10`` of ``/proc/pressure/memory`` (percent of the last 10 s stalled), or None."""
    text = read_text_file(Path(root) / PRESSURE)
    if text is None:
        return None
    for line in text.splitlines():
        if line.startswith("some "):
            match = _AVG10.search(line)
            try:
                value = float(match.group(1)) if match else math.nan
            except ValueError:
                value = math.nan
            if 0 <= value <= 100:
                return value
            break
    raise _unsupported(PRESSURE, "no 'some avg10=<percent>' line")


def read_host_memory(root: str | os.PathLike[str] = "/") -> HostMemory:
    """What the balloon decider reads of the host: MemTotal, MemAvailable and memory pressure."""
    total, available = read_meminfo(root)
    return HostMemory(total, available, read_memory_pressure(root))


def _count(root: Path, relative: str) -> int:
    text = read_text_file(root / relative)
    if text is None or not re.fullmatch(r"[0-9]+", text):
        raise _unsupported(relative, f"want a whole number of huge pages, got {text!r}")
    return int(text)


def _pools(root: Path, relative: str) -> tuple[HugepagePool, ...]:
    """The pools of one ``hugepages`` folder, smallest size first; none when it is absent."""
    try:
        names = os.listdir(root / relative)
    except OSError:
        return ()
    sizes = sorted((int(m.group(1)), m.group(0)) for m in map(HUGEPAGE_DIR.match, names) if m)
    return tuple(
        HugepagePool(
            size_bytes=kib * KIB,
            total=_count(root, f"{relative}/{name}/nr_hugepages"),
            free=_count(root, f"{relative}/{name}/free_hugepages"),
        )
        for kib, name in sizes
    )


def read_hugepage_pools(root: str | os.PathLike[str] = "/") -> HostPools:
    """NUMA node → its huge page pools; {None: the global pools} on a host with no nodes."""
    base = Path(root)
    nodes = numbered(base / NODE_DIR, "node")
    if not nodes:
        return {None: _pools(base, GLOBAL_HUGEPAGES)}
    return {node: _pools(base, f"{NODE_DIR}/node{node}/hugepages") for node in nodes}

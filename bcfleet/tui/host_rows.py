"""The Hosts view's rows, pure: one host's cells and sort values from hosts.list and its guests."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.text import Text

from bcfleet.tui.format import DIM_DASH, Cell, age, count_of, usage_cell
from bcfleet.tui.source import is_degraded
from bcfleet.tui.widgets.keyed_table import Column, Row

COLUMNS = (
    Column("name", "NAME"),
    Column("pool", "POOL"),
    Column("state", "STATE"),
    Column("vcpu", "VCPU"),
    Column("memory", "MEM GiB"),
    Column("disk", "DISK GiB"),
    Column("gpu", "GPU"),
    Column("degraded", "DEGR"),
    Column("age", "AGE"),
)
AGE = 8
"""The index of the AGE column, the one cell the clock changes."""


def state_cell(host: Mapping[str, Any], *, narrow: bool = False) -> Cell:
    """ready, draining or no inventory (both when a draining host never reported)."""
    words = []
    if host["state"] == "draining":
        words.append("draining")
    if not host.get("inventoryReportedAt"):
        words.append("no inv." if narrow else "no inventory")
    if not words:
        return "ready"
    return Text(", ".join(words), style="yellow" if "draining" in words else "dim")


@dataclass(frozen=True)
class NodeUse:
    """What the live instances on one host hold: GPUs, and how many run degraded."""

    gpus: int = 0
    degraded: int = 0


def node_use(instances: Iterable[Mapping[str, Any]]) -> dict[str, NodeUse]:
    """GPUs held and degraded guests per host, from the live instances."""
    gpus: Counter[str] = Counter()
    degraded: Counter[str] = Counter()
    for instance in instances:
        node = instance.get("nodeId")
        if not node or instance.get("state") == "deleted":
            continue
        gpus[node] += int((instance.get("shape") or {}).get("gpus") or 0)
        degraded[node] += is_degraded(instance)
    return {n: NodeUse(gpus[n], degraded[n]) for n in set(gpus) | set(degraded)}


def gpu_cell(host: Mapping[str, Any], used: int | None, total: int | None) -> tuple[Cell, float]:
    gpus = host.get("gpus")
    if isinstance(gpus, Mapping):
        used, total = int(gpus.get("used", 0)), int(gpus.get("total", 0))
    if used is None or not host.get("inventoryReportedAt"):
        return count_of(None, None)
    if total == 0 and used == 0:
        return Text("0/0", style="dim"), -1.0
    if total is None:
        return f"{used}/?", -1.0
    return count_of(used, total)


def degraded_cell(host: Mapping[str, Any], known: int | None) -> tuple[Cell, int]:
    count = host.get("degradedGuests", known)
    if count is None:
        return DIM_DASH, -1
    if not count:
        return "0", 0
    return Text(f"{count} !", style="bold yellow"), int(count)


def host_row(
    host: Mapping[str, Any],
    now: datetime,
    use: NodeUse | None = None,
    gpu_total: int | None = None,
    *,
    narrow: bool = False,
) -> Row:
    """One host as the table shows it; sort values are fractions used, not the text.

    Narrow (under 100 columns) says "no inv." and leaves out ratios of 1, so the
    table fits 80 columns.
    """
    resources = {r["resource"]: r for r in host.get("resources") or []}
    vcpu, vcpu_used = usage_cell(resources.get("vcpu"), narrow=narrow)
    memory, memory_used = usage_cell(resources.get("memoryGiB"), narrow=narrow)
    disk, disk_used = usage_cell(resources.get("diskGiB"), narrow=narrow)
    gpu, gpu_used = gpu_cell(host, use.gpus if use else None, gpu_total)
    degraded, degraded_count = degraded_cell(host, use.degraded if use else None)
    inventory_age, seconds = age(host.get("inventoryReportedAt"), now, short=True)
    state = state_cell(host, narrow=narrow)
    return Row(
        key=host["id"],
        cells=(host["name"], host["pool"], state, vcpu, memory, disk, gpu, degraded, inventory_age),
        sort=(
            host["name"],
            host["pool"],
            state.plain if isinstance(state, Text) else state,
            vcpu_used,
            memory_used,
            disk_used,
            gpu_used,
            degraded_count,
            seconds,
        ),
    )


def with_age(row: Row, host: Mapping[str, Any], now: datetime) -> Row | None:
    """The row with its AGE cell for a new now, or None when the text stays the same."""
    text, seconds = age(host.get("inventoryReportedAt"), now, short=True)
    if text == row.cells[AGE]:
        return None
    cells = row.cells[:AGE] + (text,) + row.cells[AGE + 1 :]
    return Row(row.key, cells, row.sort[:AGE] + (seconds,) + row.sort[AGE + 1 :])

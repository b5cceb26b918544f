"""The Hosts view's rows, pure: one host's cells and sort values from its hosts.list item."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from rich.text import Text

from bcfleet.domain.agent_report import HEALTH_DEGRADED
from bcfleet.domain.inventory_age import inventory_stale
from bcfleet.domain.states import INVENTORY_SHORTFALL, HostState
from bcfleet.tui.format import (
    DIM_DASH,
    Cell,
    age,
    count_of,
    parse_stamp,
    percent_text,
    plain,
    usage_cell,
)
from bcfleet.tui.widgets.keyed_table import Column, Row

COLUMNS = (
    Column("name", "NAME", name=True),
    Column("pool", "POOL", give_way=1, name=True),
    Column("state", "STATE"),
    Column("vcpu", "VCPU"),
    Column("memory", "MEM GiB"),
    Column("disk", "DISK GiB", give_way=2),
    Column("gpu", "GPU"),
    Column("degraded", "DEGR"),
    Column("age", "AGE"),
)
AGE = 8
"""The index of the AGE column, the one cell the clock changes."""


def state_cell(host: Mapping[str, Any], *, narrow: bool = False) -> Cell:
    """ready, draining or no inventory (both when a draining host never reported); short
    (red) while its InventoryShortfall condition holds, and degraded while its agent says so
    (libvirt unreachable)."""
    words = []
    if host["state"] == HostState.DRAINING:
        words.append(HostState.DRAINING.value)
    if not host.get("inventoryReportedAt"):
        words.append("no inv." if narrow else "no inventory")
    short = any(c.get("type") == INVENTORY_SHORTFALL for c in host.get("conditions") or ())
    if short:
        words.append("short" if narrow else "inventory short")
    degraded = (host.get("health") or {}).get("state") == HEALTH_DEGRADED
    if degraded:
        words.append("degraded")
    if not words:
        return HostState.READY.value
    style = "bold red" if short or degraded else "yellow" if HostState.DRAINING in words else "dim"
    return Text(", ".join(words), style=style)


def gpu_cell(host: Mapping[str, Any]) -> tuple[Cell, float]:
    """GPUs booked now of those present (hosts.list's `gpus`); a dash without an inventory."""
    gpus = host.get("gpus")
    if not isinstance(gpus, Mapping) or not host.get("inventoryReportedAt"):
        return count_of(None, None)
    used, total = int(gpus.get("used", 0)), int(gpus.get("total", 0))
    if total == 0 and used == 0:
        return Text("0/0", style="dim"), -1.0
    return count_of(used, total)


def degraded_cell(host: Mapping[str, Any]) -> tuple[Cell, int]:
    count = host.get("degradedGuests")
    if count is None:
        return DIM_DASH, -1
    if not count:
        return "0", 0
    return Text(f"{count} !", style="bold yellow"), int(count)


def age_cell(host: Mapping[str, Any], now: datetime) -> tuple[Cell, float]:
    """How long ago the inventory came ('12s'), and 'stale' after it once it is older than
    the rule the agent reports by (domain/inventory_age.py)."""
    text, seconds = age(host.get("inventoryReportedAt"), now, short=True)
    if host.get("inventoryReportedAt") and inventory_stale(seconds):
        return Text(f"{text} stale", style="yellow"), seconds
    return text, seconds


def host_row(host: Mapping[str, Any], now: datetime, *, narrow: bool = False) -> Row:
    """One host as the table shows it; sort values are fractions used, not the text.

    Narrow (under 100 columns) says "no inv." and leaves out ratios of 1 and the share used
    (the pool totals under the table give it), so the table fits 80 columns.
    """
    resources = {r["resource"]: r for r in host.get("resources") or []}
    wide = not narrow
    vcpu, vcpu_used = usage_cell(resources.get("vcpu"), narrow=narrow, percent=wide)
    memory, memory_used = usage_cell(resources.get("memoryGiB"), narrow=narrow, percent=wide)
    disk, disk_used = usage_cell(resources.get("diskGiB"), narrow=narrow, percent=wide)
    gpu, gpu_used = gpu_cell(host)
    degraded, degraded_count = degraded_cell(host)
    inventory_age, seconds = age_cell(host, now)
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
    text, seconds = age_cell(host, now)
    if plain(text) == plain(row.cells[AGE]):
        return None
    cells = row.cells[:AGE] + (text,) + row.cells[AGE + 1 :]
    return Row(row.key, cells, row.sort[:AGE] + (seconds,) + row.sort[AGE + 1 :])


_AGE_UNITS = ((60, 1), (3600, 60), (86400, 3600))
"""(below this many seconds, the short AGE text moves every so many seconds); then by days."""


def next_age_change(when: str | None, now: datetime) -> float | None:
    """The fleet time (epoch seconds) after `now` at which the AGE text of `when` changes next;
    None for no time (the cell is a dash for good)."""
    if not when:
        return None
    start = parse_stamp(when).timestamp()
    elapsed = max(now.timestamp() - start, 0.0)
    unit = next((every for below, every in _AGE_UNITS if elapsed < below), 86400)
    return start + (elapsed // unit + 1) * unit


TOTALS_SHOWN = 3
"""Pool totals lines under the Hosts table; more pools are counted in one last line."""
TOTAL_LABELS = (("vcpu", "vCPU"), ("memoryGiB", "MEM"), ("gpu", "GPU"), ("diskGiB", "DISK"))
"""In this order, so that a narrow screen crops DISK first."""


def pool_totals(hosts: Iterable[Mapping[str, Any]]) -> list[str]:
    """One line per pool: its hosts, and allocated/capacity with the share used per resource
    and GPUs booked now of those present, summed over its hosts' hosts.list items."""
    sums: dict[str, dict[str, int]] = {}
    for host in hosts:
        pool = sums.setdefault(str(host["pool"]), {"hosts": 0})
        pool["hosts"] += 1
        for row in host.get("resources") or ():
            name = row["resource"]
            pool[f"{name}.a"] = pool.get(f"{name}.a", 0) + int(row["allocated"])
            pool[f"{name}.c"] = pool.get(f"{name}.c", 0) + int(row["capacity"])
        gpus = host.get("gpus") or {}
        pool["gpu.a"] = pool.get("gpu.a", 0) + int(gpus.get("used", 0))
        pool["gpu.c"] = pool.get("gpu.c", 0) + int(gpus.get("total", 0))
    lines = []
    for name in sorted(sums):
        pool = sums[name]
        parts = [f"{name}: {pool['hosts']} host{'s' if pool['hosts'] != 1 else ''}"]
        for key, label in TOTAL_LABELS:
            allocated, capacity = pool.get(f"{key}.a", 0), pool.get(f"{key}.c", 0)
            if capacity or allocated:
                share = percent_text(allocated / capacity if capacity else float("inf"))
                parts.append(f"{label} {allocated}/{capacity} {share}")
        lines.append(" · ".join(parts))
    if len(lines) > TOTALS_SHOWN:
        rest = len(lines) - TOTALS_SHOWN + 1
        lines = [*lines[: TOTALS_SHOWN - 1], f"… and {rest} more pools (filter pool:NAME)"]
    return lines

"""The Hosts view's rows, pure: one host's cells and sort values from its hosts.list item."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from rich.text import Text

from bcfleet.tui.format import DIM_DASH, Cell, age, count_of, parse_stamp, usage_cell
from bcfleet.tui.widgets.keyed_table import Column, Row

COLUMNS = (
    Column("name", "NAME"),
    Column("pool", "POOL", give_way=1),
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
    """ready, draining or no inventory (both when a draining host never reported)."""
    words = []
    if host["state"] == "draining":
        words.append("draining")
    if not host.get("inventoryReportedAt"):
        words.append("no inv." if narrow else "no inventory")
    if not words:
        return "ready"
    return Text(", ".join(words), style="yellow" if "draining" in words else "dim")


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


def host_row(host: Mapping[str, Any], now: datetime, *, narrow: bool = False) -> Row:
    """One host as the table shows it; sort values are fractions used, not the text.

    Narrow (under 100 columns) says "no inv." and leaves out ratios of 1, so the
    table fits 80 columns.
    """
    resources = {r["resource"]: r for r in host.get("resources") or []}
    vcpu, vcpu_used = usage_cell(resources.get("vcpu"), narrow=narrow)
    memory, memory_used = usage_cell(resources.get("memoryGiB"), narrow=narrow)
    disk, disk_used = usage_cell(resources.get("diskGiB"), narrow=narrow)
    gpu, gpu_used = gpu_cell(host)
    degraded, degraded_count = degraded_cell(host)
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

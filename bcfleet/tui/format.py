"""How the dashboard writes numbers, ages and countdowns; pure, shared by every view.

State is never told by colour alone: a cell that is over its capacity says
"over" in words, a disconnected source says DISCONNECTED, and colours only
repeat what the text already says (NO_COLOR loses nothing).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from functools import lru_cache
from typing import Any

from rich.cells import cell_len, set_cell_size
from rich.text import Text

from bcfleet.clock import parse_time
from bcfleet.domain.instance_spec import format_cpuset

DASH = "-"
DIM_DASH = Text(DASH, style="dim")
"""Shared and never changed: cells are built thousands of times a refresh."""

Cell = Text | str

parse_stamp = lru_cache(maxsize=1 << 16)(parse_time)
"""parse_time for stamps that repeat refresh after refresh (inventory reports, conditions)."""


def ratio_text(ratio: float) -> str:
    """A ratio as written: 2.0 → '2', 1.5 → '1.5'."""
    return f"{ratio:g}"


def percent_text(fraction: float) -> str:
    """A fraction used as a whole percentage, rounded down so that 99.6 % is not yet 100 %."""
    if fraction == float("inf"):
        return "∞%"
    return f"{int(fraction * 100)}%"


def usage_cell(
    row: Mapping[str, Any] | None, *, narrow: bool = False, percent: bool = False
) -> tuple[Cell, float]:
    """'30/128 ×2' for allocated of floor(allocatable × ratio), and the fraction used for sorting.

    At or above 90 % the cell is marked as getting full; above 100 % (a host that
    shrank, or whose ratio was lowered, under what it holds) it reads 'over' as well as turning red.
    Narrow tables leave out a ratio of 1 (no overcommit); `percent` adds the share used.
    """
    if row is None:
        return DIM_DASH, -1.0
    allocated, capacity = int(row["allocated"]), int(row["capacity"])
    fraction = allocated / capacity if capacity else (0.0 if allocated == 0 else float("inf"))
    ratio = row.get("ratio")  # None: a stored ratio that is not a finite number
    shown = "" if ratio is None or (narrow and ratio == 1) else f" ×{ratio_text(float(ratio))}"
    if percent:
        shown += f" {percent_text(fraction)}"
    if fraction < 0.9:
        return f"{allocated}/{capacity}{shown}", fraction
    text = Text(f"{allocated}/{capacity}{shown}")
    if fraction > 1:
        text.append(" over", style="bold")
        text.stylize("bold red")
    elif fraction >= 0.9:
        text.stylize("yellow")
    return text, fraction


def count_of(used: int | None, total: int | None) -> tuple[Cell, float]:
    """'2/4' for used of total (GPUs), '-' when unknown."""
    if used is None or total is None:
        return DIM_DASH, -1.0
    return f"{used}/{total}", (used / total if total else -1.0)


def duration_text(seconds: float, *, short: bool = False) -> str:
    """A duration: 42s, 5m 10s, 3h 20m, 2d 4h; short keeps the larger unit only (5m, 3h, 2d)."""
    total = int(max(seconds, 0))
    if total < 60:
        return f"{total}s"
    minutes, secs = divmod(total, 60)
    if short:
        hours, days = minutes // 60, minutes // 1440
        return f"{days}d" if days else f"{hours}h" if hours else f"{minutes}m"
    if minutes < 60:
        return f"{minutes}m {secs}s" if secs and minutes < 10 else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours}h {minutes}m" if minutes else f"{hours}h"
    days, hours = divmod(hours, 24)
    return f"{days}d {hours}h" if hours else f"{days}d"


def age(when: str | None, now: datetime, *, short: bool = False) -> tuple[str, float]:
    """How long ago an RFC 3339 time was ('12s', '3h 5m'), and the seconds for sorting."""
    if not when:
        return DASH, float("inf")
    seconds = (now - parse_stamp(when)).total_seconds()
    return duration_text(seconds, short=short), seconds


def countdown(when: str | None, now: datetime) -> tuple[Text, float]:
    """Time left until an RFC 3339 time: 'in 1m 50s', or 'passed' once it is behind us."""
    if not when:
        return Text(DASH, style="dim"), float("inf")
    seconds = (parse_stamp(when) - now).total_seconds()
    if seconds <= 0:
        return Text("passed", style="dim"), seconds
    text = Text(f"in {duration_text(seconds)}")
    if seconds < 60:
        text.stylize("bold red")
    elif seconds < 300:
        text.stylize("yellow")
    return text, seconds


def clock_time(when: datetime) -> str:
    """The time of day of a stamp, UTC: '10:00:02'."""
    return when.strftime("%H:%M:%S")


def short_time(when: str | None) -> str:
    """An RFC 3339 time as 'MM-DD HH:MM' (UTC), '-' when absent."""
    if not when:
        return DASH
    return parse_time(when).strftime("%m-%d %H:%M")


def cpulist(ids: Iterable[int]) -> str:
    """CPU ids as Linux and libvirt write them: [0, 1, 2, 5] → '0-2,5'; '-' when empty."""
    return format_cpuset(ids) or DASH


def short_id(rid: str) -> str:
    """rsv_01JD…7K2Q: the prefix and the last six characters, enough to tell rows apart."""
    prefix, _, rest = rid.partition("_")
    return rid if len(rest) <= 8 else f"{prefix}_…{rest[-6:]}"


def croppable(text: str, style: str = "") -> Text:
    """A cell of free text that ends in '…' where a narrow screen crops it (Enter shows it all)."""
    return Text(text, style=style, overflow="ellipsis")


def crop_words(text: str, width: int) -> str:
    """The text in at most `width` cells, cut after a whole word or id and ended with '…'
    ('rsv_…gprcf5 globex spot until 11-30 10:02, rsv_…w9hdv3 acme' → '…, rsv_…w9hdv3 acme…'
    never '…, rsv_…w9'); a first word longer than the width is cut where it must be."""
    if cell_len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    kept = ""
    for word in text.split(" "):
        longer = f"{kept} {word}" if kept else word
        if cell_len(longer) + 1 > width:
            break
        kept = longer
    if not kept:
        return set_cell_size(text, width - 1) + "…"
    return kept.rstrip(",;") + "…"


def plain(value: Cell) -> str:
    return value.plain if isinstance(value, Text) else value


def yes_no(value: bool) -> str:
    return "yes" if value else "no"


def bytes_text(count: int) -> str:
    """A size in bytes as people say it: 2097152 → '2 MiB', 1536 → '1.5 KiB'."""
    size, unit = float(count), "B"
    for bigger in ("KiB", "MiB", "GiB", "TiB"):
        if abs(size) < 1024:
            break
        size, unit = size / 1024, bigger
    return f"{size:.1f}".removesuffix(".0") + f" {unit}"


def moment(when: str, now: datetime) -> str:
    """An RFC 3339 time to the minute with how far it is from now: '11-30 08:00 (2h ago)'."""
    seconds = (now - parse_stamp(when)).total_seconds()
    if seconds >= 0:
        return f"{short_time(when)} ({duration_text(seconds, short=True)} ago)"
    return f"{short_time(when)} (in {duration_text(-seconds, short=True)})"

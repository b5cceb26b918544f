"""The one-line bars around every view: the title bar on top and the status line below.

The status line carries the freshness of what is shown: "updated 10:00:02",
"refreshing…", "STALE" once refreshes stop arriving and "DISCONNECTED" when
the source fails; each is a word, with colour only repeating it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from rich.text import Text
from textual.widgets import Static

from bcfleet.tui.format import clock_time


def acting_as(who: Mapping[str, Any]) -> str:
    """Whom the console acts as, for the header: 'as operator (root admin)', 'as alice (acme
    member)'."""
    kind = f"{who.get('tenantId')} {who.get('role')}"
    if who.get("operator"):
        return f"as operator ({kind})"
    return f"as {who.get('principal') or who.get('principalId') or '?'} ({kind})"


class TitleBar(Static):
    """'bcfleet › Hosts › fra-01' on the left; where the data comes from and READ-ONLY on the right."""

    _last: tuple[list[str], str, bool, str | None] = ([], "", False, None)

    def on_resize(self) -> None:
        self.show(*self._last)

    def show(
        self, crumbs: list[str], where: str, read_only: bool, trouble: str | None = None
    ) -> None:
        """trouble: what stands between the console and its database (FILE DELETED, …)."""
        self._last = (crumbs, where, read_only, trouble)
        left = Text("bcfleet", style="bold")
        for crumb in crumbs:
            left.append(" › ")
            left.append(crumb, style="bold")
        right = Text(where, style="dim")
        if trouble:
            right.append("  ")
            right.append(f" {trouble} ", style="reverse bold red")
        if read_only:
            right.append("  ")
            right.append(" READ-ONLY ", style="reverse bold")
        width = max(self.size.width, 1)
        gap = max(1, width - left.cell_len - right.cell_len)
        if left.cell_len + right.cell_len + 1 > width:
            right.truncate(max(0, width - left.cell_len - 1), overflow="ellipsis")
        self.update(Text.assemble(left, " " * gap, right))


@dataclass
class Freshness:
    """What the status line says about the data: when it was last good and what went wrong."""

    updated: datetime | None = None
    loading: bool = False
    stale: bool = False
    problem: str | None = None
    disconnected: bool = False
    unavailable: bool = False
    trouble: str | None = None
    """What the header says stands between the console and its database (FILE DELETED, …)."""

    def text(self) -> Text:
        text = Text()
        if self.disconnected and self.trouble == "BUSY, RETRYING":
            text.append(" BUSY ", style="reverse bold yellow")
            text.append(" busy, retrying ")
        elif self.disconnected:
            text.append(" DISCONNECTED ", style="reverse bold red")
            text.append(f" {self.problem or ''} ")
        elif self.stale:
            text.append(" STALE ", style="reverse bold yellow")
            text.append(" ")
        if self.updated is not None:
            text.append(f"updated {clock_time(self.updated)}")
        elif self.unavailable:
            text.append("not available in this build")
        elif not self.disconnected:
            text.append("loading…" if self.loading else "not loaded")
        if self.loading and self.updated is not None:
            text.append(" · refreshing…", style="dim")
        return text


class StatusLine(Static):
    """What the view shows (counts, filter, sort) on the left; freshness on the right."""

    _last: tuple[Text | str, Freshness] = ("", Freshness())
    _drawn: Text | None = None

    def on_resize(self) -> None:
        self.show(*self._last)

    def show(self, summary: Text | str, freshness: Freshness) -> None:
        self._last = (summary, freshness)
        left = summary.copy() if isinstance(summary, Text) else Text(summary)
        right = freshness.text()
        width = max(self.size.width, 1)
        if left.cell_len + right.cell_len + 1 > width:
            left.truncate(max(0, width - right.cell_len - 1), overflow="ellipsis")
        gap = max(1, width - left.cell_len - right.cell_len)
        line = Text.assemble(left, " " * gap, right)
        if line != self._drawn:  # a timer tick that changed nothing draws nothing
            self._drawn = line
            self.update(line)

"""The Hosts view: every host with its pool, state, capacity used against overcommit, GPUs and age.

A refresh is one hosts.list: it carries each host's capacity rows, its GPUs (present,
and booked now) and how many of its guests run degraded, so the view never reads
the fleet's instances or a host's inventory.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.widgets import Static

from bcfleet.tui.actions import actions_for
from bcfleet.tui.host_rows import COLUMNS, host_row, next_age_change, pool_totals, with_age
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.widgets.keyed_table import Row
from bcfleet.tui.widgets.table_rows import natural

NARROW_BELOW = 100
"""Terminal widths under this get the compact cells that fit 80 columns."""


class HostsView(TableView):
    """Hosts, as allocated of floor(allocatable × ratio) per resource."""

    TITLE = "Hosts"
    ABOUT = (
        "Every host: its pool; its state (ready, draining, no inventory); vCPU, memory and "
        "disk as allocated of floor(allocatable × ratio) with the pool's ratio (×2); GPUs "
        "booked now (by instances and reservations) of those it has; guests whose placement "
        "is degraded (DEGR); and how long ago the host last reported its inventory (AGE). "
        "A resource above its capacity reads 'over'. Under 100 columns a ratio of 1 is left "
        "out and 'no inv.' means no inventory; AGE says 'stale' once the inventory is older than "
        "five missed agent reports. Under the table, each pool's totals with the share used. "
        "Enter opens the host, and Enter on a guest there describes it."
    )
    COLUMNS = COLUMNS
    NOUN = ("host", "hosts")
    ACTIONS = actions_for("hosts")
    KIND = "host"

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.hosts: dict[str, dict[str, Any]] = {}
        self._drawn_narrow = False
        self._age_due: dict[str, float] = {}
        """Per row, the fleet time (epoch seconds) at which its AGE text changes next."""
        self._age_heap: list[tuple[float, str]] = []
        """The same times as a heap, so a clock tick looks at the rows whose AGE moved only."""

    def fetch(self) -> Any:
        return self.source.hosts()

    def compose_body(self) -> ComposeResult:
        yield from super().compose_body()
        yield Static(id="totals", classes="totals")

    def show(self, data: Any) -> None:
        """Rows for the hosts; a host whose item has not changed keeps its row (its AGE brought
        up to now when that moved), so a refresh where little changed builds little."""
        narrow = self.narrow
        now = self.now or self.source.now()
        at = now.timestamp()
        before = self.hosts if narrow == self._drawn_narrow else {}
        drawn = self.table.all_rows
        dues = self._age_due
        self._drawn_narrow = narrow
        self.hosts = {h["id"]: h for h in data}
        self._age_due = {}

        def row(host: dict[str, Any]) -> Row:
            key = host["id"]
            old = drawn.get(key)
            if old is not None and before.get(key) == host:
                due = dues.get(key)
                if due is None or due > at:
                    if due is not None:
                        self._age_due[key] = due
                    return old
                new = with_age(old, host, now) or old
            else:
                new = host_row(host, now, narrow=narrow)
            self._due(key, host, now)
            return new

        self.table.set_rows(row(h) for h in sorted(data, key=lambda h: natural(str(h["name"]))))
        totals = Text("\n".join(pool_totals(data)))
        self.query_one("#totals", Static).update(totals)
        self._age_heap = [(due, key) for key, due in self._age_due.items()]
        heapq.heapify(self._age_heap)

    def _due(self, key: str, host: Mapping[str, Any], now: datetime) -> None:
        due = next_age_change(host.get("inventoryReportedAt"), now)
        if due is not None:
            self._age_due[key] = due
        else:
            self._age_due.pop(key, None)

    def clock_tick(self) -> None:
        """Only the AGE cells move with the clock: patch the rows whose AGE text is due to."""
        now = self.now or self.source.now()
        at = now.timestamp()
        heap, due_keys = self._age_heap, []
        while heap and heap[0][0] <= at:
            due, key = heapq.heappop(heap)
            if self._age_due.get(key) == due:
                due_keys.append(key)
        table, changed = self.table, []
        for key in due_keys:
            host, old = self.hosts.get(key), table.all_rows.get(key)
            if host is None or old is None:
                self._age_due.pop(key, None)
                continue
            new = with_age(old, host, now)
            if new is not None:
                changed.append(new)
            self._due(key, host, now)
            if key in self._age_due:
                heapq.heappush(heap, (self._age_due[key], key))
        if changed:
            table.patch(changed)

    @property
    def narrow(self) -> bool:
        return self.app.size.width < NARROW_BELOW

    def on_resize(self) -> None:
        if self.hosts and self._drawn_narrow != self.narrow:
            self._drawn_narrow = self.narrow
            now = self.now or self.source.now()
            self.table.set_rows(host_row(h, now, narrow=self.narrow) for h in self.hosts.values())
            self.table.remeasure()  # the narrow cells are shorter: the columns shrink to them

    def _host(self, key: str | None) -> Mapping[str, Any] | None:
        return self.hosts.get(key) if key is not None else None

    def item(self, key: str) -> Any:
        return self.hosts.get(key)

    def open_row(self, key: str) -> None:
        host = self._host(key)
        if host is not None:
            self.fleet_app.open_host(host["id"], host["name"])

    def action_open(self) -> None:
        if self.table.cursor_key is not None:
            self.open_row(self.table.cursor_key)

    def commands(self) -> Iterable[SystemCommand]:
        yield from super().commands()
        host = self._host(self.table.cursor_key) if self.is_mounted else None
        if host is not None:
            yield SystemCommand(
                f"Open host {host['name']}", "NUMA nodes, CPUs, huge pages, GPUs", self.action_open
            )

"""The Hosts view: every host with its pool, state, capacity used against overcommit, GPUs and age.

A refresh reads hosts.list and paints it, then (at most every USE_EVERY
seconds, or on r) the live instances for the GPUs held and degraded guests per
host. How many GPUs a host has is only in its inventory (hosts.show), so it is
read for the rows on screen (and a page around them) as they scroll into view,
not for the whole fleet at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from textual import work
from textual.app import SystemCommand
from textual.binding import Binding, BindingType
from textual.message import Message

from bcfleet.tui.host_rows import COLUMNS, NodeUse, host_row, node_use, with_age
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.widgets.keyed_table import Row

NARROW_BELOW = 100
"""Terminal widths under this get the compact cells that fit 80 columns."""
UNKNOWN = -1
"""A GPU count that could not be read this time."""
USE_EVERY = 10.0
"""Seconds between reads of every live instance (at least five times as long as one read)."""


@dataclass(frozen=True)
class HostsFetch:
    """One refresh: the hosts, and the guests' use per host when it was read this time."""

    hosts: list[dict[str, Any]]
    use: dict[str, NodeUse] | None = None


class HostsView(TableView):
    """Hosts, as allocated of floor(allocatable × ratio) per resource."""

    TITLE = "Hosts"
    ABOUT = (
        "Every host: its pool; its state (ready, draining, no inventory); vCPU, memory and "
        "disk as allocated of floor(allocatable × ratio) with the pool's ratio (×2); GPUs "
        "used of total; guests whose placement is degraded (DEGR); and how long ago the host "
        "last reported its inventory (AGE). A resource above its capacity reads 'over'. "
        "Under 100 columns a ratio of 1 is left out and 'no inv.' means no inventory. "
        "GPU totals are read as rows come into view ('1/?' until then). Enter opens the host."
    )
    COLUMNS = COLUMNS
    NOUN = ("host", "hosts")
    MUTATING = frozenset({"drain"})

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", show=False),
        Binding("d", "drain", "Drain/undrain"),
    ]

    class TotalsRead(Message):
        def __init__(self, totals: dict[str, tuple[str | None, int]]) -> None:
            super().__init__()
            self.totals = totals

    def __init__(self) -> None:
        super().__init__()
        self.hosts: dict[str, dict[str, Any]] = {}
        self.use: dict[str, NodeUse] | None = None
        self.totals: dict[str, tuple[str | None, int]] = {}
        self._use_read_at = 0.0
        self._use_seconds = 0.0
        self._reading_totals = False
        self._drawn_narrow = False

    def on_mount(self) -> None:
        self.watch(self.table, "scroll_y", self._scrolled, init=False)

    # -- fetching (worker thread) ---------------------------------------------------------------

    def fetch(self) -> Any:
        """Hosts first (painted at once), then, when due, what their guests use."""
        hosts = self.source.hosts()
        counted = bool(hosts) and "gpus" in hosts[0] and "degradedGuests" in hosts[0]
        due = time.monotonic() - self._use_read_at >= max(USE_EVERY, 5 * self._use_seconds)
        if counted or not (due or self.forced or self.use is None):
            return HostsFetch(hosts)
        self.deliver(HostsFetch(hosts))
        started = time.monotonic()
        use = node_use(self.source.instances())
        self._use_read_at = time.monotonic()
        self._use_seconds = self._use_read_at - started
        return HostsFetch(hosts, use)

    @work(thread=True, exclusive=True, group="gpu-totals", exit_on_error=False)
    def _read_totals(self, hosts: list[dict[str, Any]]) -> None:
        totals: dict[str, tuple[str | None, int]] = {}
        for host in hosts:
            try:
                inventory = self.source.host(host["id"]).get("inventory") or {}
            except Exception:  # noqa: BLE001 - unknown for now ('?'), read again next refresh
                totals[host["id"]] = (host["inventoryReportedAt"], UNKNOWN)
            else:
                totals[host["id"]] = (host["inventoryReportedAt"], len(inventory.get("gpus") or []))
        self.post_message(self.TotalsRead(totals))

    # -- showing (UI thread) ----------------------------------------------------------------------

    def show(self, data: Any) -> None:
        self._drawn_narrow = self.narrow
        self.hosts = {h["id"]: h for h in data.hosts}
        self.totals = {k: v for k, v in self.totals.items() if v[1] != UNKNOWN}
        if data.use is not None:
            self.use = data.use
        self.table.set_rows(self._row(h) for h in data.hosts)
        self._want_totals()

    def clock_tick(self) -> None:
        """Only the AGE cells move with the clock; patch the rows whose text changed."""
        now = self.now or self.source.now()
        table = self.table
        changed = [
            row
            for key, old in table.all_rows.items()
            if key in self.hosts and (row := with_age(old, self.hosts[key], now)) is not None
        ]
        if changed:
            table.patch(changed)

    def _row(self, host: Mapping[str, Any]) -> Row:
        node = host["id"]
        use = self.use.get(node, NodeUse()) if self.use is not None else None
        total = self.totals.get(node)
        current = total is not None and total[0] == host["inventoryReportedAt"]
        known = total[1] if total is not None and current and total[1] != UNKNOWN else None
        return host_row(host, self.now or self.source.now(), use, known, narrow=self.narrow)

    def _scrolled(self, _value: float) -> None:
        self._want_totals()

    def _want_totals(self) -> None:
        """Read the GPU count of the rows on screen (and a page around) that lack one."""
        table = self.table
        if self._reading_totals or not table.row_count:
            return
        page = max(table.size.height, 10)
        first = max(0, int(table.scroll_y) - page)
        keys = [r.key.value for r in table.ordered_rows[first : int(table.scroll_y) + 2 * page]]
        missing = [
            self.hosts[k]
            for k in keys
            if k in self.hosts
            and self.hosts[k]["inventoryReportedAt"]
            and self.totals.get(k, (None, 0))[0] != self.hosts[k]["inventoryReportedAt"]
        ]
        if missing:
            self._reading_totals = True
            self._read_totals(missing)

    def on_hosts_view_totals_read(self, message: TotalsRead) -> None:
        self._reading_totals = False
        self.totals.update(message.totals)
        self.table.patch(self._row(self.hosts[k]) for k in message.totals if k in self.hosts)
        self._want_totals()

    @property
    def narrow(self) -> bool:
        return self.app.size.width < NARROW_BELOW

    def on_resize(self) -> None:
        if self.hosts and self._drawn_narrow != self.narrow:
            self._drawn_narrow = self.narrow
            self.table.set_rows(self._row(h) for h in self.hosts.values())

    def _host(self, key: str | None) -> Mapping[str, Any] | None:
        return self.hosts.get(key) if key is not None else None

    def open_row(self, key: str) -> None:
        host = self._host(key)
        if host is not None:
            from bcfleet.tui.screens.host_detail import HostDetail

            self.app.push_screen(HostDetail(host["id"], host["name"]))

    def action_open(self) -> None:
        if self.table.cursor_key is not None:
            self.open_row(self.table.cursor_key)

    def action_drain(self) -> None:
        host = self._host(self.table.cursor_key)
        if host is None:
            return
        draining = host["state"] != "draining"
        verb = "Drain" if draining else "Return to ready"
        question = f"{verb} host {host['name']}?" + (
            "\nNo new instances will be placed on it." if draining else ""
        )

        def answer(yes: bool | None) -> None:
            if yes:
                self._set_draining(host["name"], draining)

        self.app.push_screen(Confirm(question, verb), answer)

    def _set_draining(self, name: str, draining: bool) -> None:
        try:
            self.source.set_draining(name, draining)
        except Exception as exc:  # noqa: BLE001 - shown to the operator, not raised
            self.notify(str(exc), title="Not changed", severity="error")
            return
        self.notify(f"{name} is {'draining' if draining else 'ready'}.")
        self.request_refresh(force=True)

    def commands(self) -> Iterable[SystemCommand]:
        yield from super().commands()
        host = self._host(self.table.cursor_key) if self.is_mounted else None
        if host is not None:
            yield SystemCommand(
                f"Open host {host['name']}", "NUMA nodes, CPUs, huge pages, GPUs", self.action_open
            )
            if not self.fleet_app.read_only:
                verb = "Undrain" if host["state"] == "draining" else "Drain"
                yield SystemCommand(f"{verb} host {host['name']}", "(d)", self.action_drain)

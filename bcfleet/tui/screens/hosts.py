"""The Hosts view: every host with its pool, state, capacity used against overcommit, and age."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual.app import SystemCommand
from textual.binding import Binding, BindingType

from bcfleet.tui.format import DASH, age, count_of, usage_cell
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.source import is_degraded
from bcfleet.tui.widgets.keyed_table import Column, Row

NARROW_BELOW = 100
"""Terminal widths under this get the compact cells that fit 80 columns."""
GPU_COUNT_BATCH = 250
"""Hosts whose GPU count is read (hosts.show) before the table is updated again."""

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


def state_cell(host: Mapping[str, Any], *, narrow: bool = False) -> Text:
    """ready, draining or no inventory (both when a draining host never reported)."""
    words = []
    if host["state"] == "draining":
        words.append("draining")
    if not host.get("inventoryReportedAt"):
        words.append("no inv." if narrow else "no inventory")
    if not words:
        return Text("ready", style="green")
    return Text(", ".join(words), style="yellow" if "draining" in words else "dim")


@dataclass(frozen=True)
class NodeUse:
    """What the live instances on one host hold: GPUs, and how many run degraded."""

    gpus: int = 0
    degraded: int = 0


@dataclass(frozen=True)
class HostsData:
    """The hosts, then (when fetched) what their guests use and how many GPUs each host has."""

    hosts: list[dict[str, Any]]
    use: Mapping[str, NodeUse] | None = None
    gpu_totals: Mapping[str, tuple[str | None, int]] = field(default_factory=dict)


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


def gpu_cell(host: Mapping[str, Any], used: int | None, total: int | None) -> tuple[Text, float]:
    gpus = host.get("gpus")
    if isinstance(gpus, Mapping):
        used, total = int(gpus.get("used", 0)), int(gpus.get("total", 0))
    if used is None or not host.get("inventoryReportedAt"):
        return count_of(None, None)
    if total == 0 and used == 0:
        return Text("0/0", style="dim"), -1.0
    if total is None:
        return Text(f"{used}/?"), -1.0
    return count_of(used, total)


def degraded_cell(host: Mapping[str, Any], known: int | None) -> tuple[Text, int]:
    count = host.get("degradedGuests", known)
    if count is None:
        return Text(DASH, style="dim"), -1
    text = Text(str(count))
    if count:
        text.append(" !", style="bold")
        text.stylize("bold yellow")
    return text, int(count)


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
            state.plain,
            vcpu_used,
            memory_used,
            disk_used,
            gpu_used,
            degraded_count,
            seconds,
        ),
    )


class HostsView(TableView):
    """Hosts, as allocated of floor(allocatable × ratio) per resource."""

    TITLE = "Hosts"
    ABOUT = (
        "Every host: its pool; its state (ready, draining, no inventory); vCPU, memory and "
        "disk as allocated of floor(allocatable × ratio) with the pool's ratio (×2); GPUs "
        "used of total; guests whose placement is degraded (DEGR); and how long ago the host "
        "last reported its inventory (AGE). A resource above its capacity reads 'over'. "
        "Under 100 columns a ratio of 1 is left out and 'no inv.' means no inventory. "
        "Enter opens the host."
    )
    COLUMNS = COLUMNS
    NOUN = ("host", "hosts")
    _drawn_narrow = False
    MUTATING = frozenset({"drain"})

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", show=False),
        Binding("d", "drain", "Drain/undrain"),
    ]

    def fetch(self) -> Any:
        """Hosts first (painted at once), then their guests' use, then GPU counts not yet known."""
        hosts = self.source.hosts()
        if hosts and "gpus" in hosts[0] and "degradedGuests" in hosts[0]:
            return HostsData(hosts)
        totals = dict(self.data.gpu_totals) if isinstance(self.data, HostsData) else {}
        use = self.data.use if isinstance(self.data, HostsData) else None
        self.deliver(HostsData(hosts, use, totals))
        use = node_use(self.source.instances())
        self.deliver(HostsData(hosts, use, dict(totals)))
        stale = [
            h
            for h in hosts
            if h["id"] not in totals or totals[h["id"]][0] != h["inventoryReportedAt"]
        ]
        for start in range(0, len(stale), GPU_COUNT_BATCH):
            for host in stale[start : start + GPU_COUNT_BATCH]:
                totals[host["id"]] = (host["inventoryReportedAt"], self._gpu_total(host))
            if start + GPU_COUNT_BATCH < len(stale):
                self.deliver(HostsData(hosts, use, dict(totals)))
        return HostsData(hosts, use, totals)

    def _gpu_total(self, host: Mapping[str, Any]) -> int:
        if not host["inventoryReportedAt"]:
            return 0
        inventory = self.source.host(host["id"]).get("inventory") or {}
        return len(inventory.get("gpus") or [])

    def rows(self, data: Any) -> Iterable[Row]:
        now = self.now or self.source.now()
        use = data.use
        totals = data.gpu_totals
        for host in data.hosts:
            node = host["id"]
            known = use.get(node, NodeUse()) if use is not None else None
            total = totals[node][1] if node in totals else None
            yield host_row(host, now, known, total, narrow=self.narrow)

    @property
    def narrow(self) -> bool:
        return self.app.size.width < NARROW_BELOW

    def on_resize(self) -> None:
        if self.data is not None and self._drawn_narrow != self.narrow:
            self.show(self.data)

    def show(self, data: Any) -> None:
        self._drawn_narrow = self.narrow
        super().show(data)

    def _host(self, key: str | None) -> Mapping[str, Any] | None:
        if key is None or not isinstance(self.data, HostsData):
            return None
        return next((h for h in self.data.hosts if h["id"] == key), None)

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

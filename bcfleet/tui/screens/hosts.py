"""The Hosts view: every host with its pool, state, capacity used against overcommit, and age."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any, ClassVar

from rich.text import Text
from textual.app import SystemCommand
from textual.binding import Binding, BindingType

from bcfleet.tui.format import DASH, age, count_of, usage_cell
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.screens.table import TableView
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
    Column("age", "INV AGE"),
)


def state_cell(host: Mapping[str, Any]) -> Text:
    """ready, draining or no inventory (both when a draining host never reported)."""
    words = []
    if host["state"] == "draining":
        words.append("draining")
    if not host.get("inventoryReportedAt"):
        words.append("no inventory")
    if not words:
        return Text("ready", style="green")
    return Text(", ".join(words), style="yellow" if "draining" in words else "dim")


def gpu_cell(host: Mapping[str, Any]) -> tuple[Text, float]:
    gpus = host.get("gpus")
    if not isinstance(gpus, Mapping):
        return count_of(None, None)
    return count_of(int(gpus.get("used", 0)), int(gpus.get("total", 0)))


def degraded_cell(host: Mapping[str, Any]) -> tuple[Text, int]:
    count = host.get("degradedGuests")
    if count is None:
        return Text(DASH, style="dim"), -1
    text = Text(str(count))
    if count:
        text.append(" !", style="bold")
        text.stylize("bold yellow")
    return text, int(count)


def host_row(host: Mapping[str, Any], now: datetime) -> Row:
    """One host as the table shows it; sort values are fractions used, not the text."""
    resources = {r["resource"]: r for r in host.get("resources") or []}
    vcpu, vcpu_used = usage_cell(resources.get("vcpu"))
    memory, memory_used = usage_cell(resources.get("memoryGiB"))
    disk, disk_used = usage_cell(resources.get("diskGiB"))
    gpu, gpu_used = gpu_cell(host)
    degraded, degraded_count = degraded_cell(host)
    inventory_age, seconds = age(host.get("inventoryReportedAt"), now)
    state = state_cell(host)
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
        "used of total; guests whose placement is degraded; and how long ago the host last "
        "reported its inventory. A resource above its capacity reads 'over'. Enter opens "
        "the host."
    )
    COLUMNS = COLUMNS
    NOUN = ("host", "hosts")
    MUTATING = frozenset({"drain"})

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open", show=False),
        Binding("d", "drain", "Drain/undrain"),
    ]

    def fetch(self) -> Any:
        return self.source.hosts()

    def rows(self, data: Any) -> Iterable[Row]:
        now = self.now or self.source.now()
        return (host_row(host, now) for host in data)

    def _host(self, key: str | None) -> Mapping[str, Any] | None:
        if key is None or not self.data:
            return None
        return next((h for h in self.data if h["id"] == key), None)

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

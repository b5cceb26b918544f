"""One host, drilled into from Hosts: NUMA nodes, reserved and isolated CPUs, huge pages, GPUs, guests.

The reserved CPUs are the host's answer's reservedCpus (hosts.show works them out
as the placement chooser does, with the fleet's host_reserve and the pool's
hostReserve); huge pages free per node are the node's pool less what the
guests booked there.
Guests come from the host's InstanceSpecs (pinned CPUs, NUMA nodes, GPUs) and
their instances (flavor, huge pages, degraded reason).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from bcfleet.domain.inventory_age import inventory_stale
from bcfleet.domain.numa import size_label
from bcfleet.domain.shapes import Inventory
from bcfleet.tui.format import (
    DASH,
    age,
    cpulist,
    crop_words,
    parse_stamp,
    ratio_text,
    short_id,
    short_time,
)
from bcfleet.tui.screens.base import DrillDown
from bcfleet.tui.screens.reservations import day_time
from bcfleet.tui.source import NotAvailable
from bcfleet.tui.widgets.steady_table import SteadyTable

RESOURCE_LABELS = {"vcpu": "vCPU", "memoryGiB": "memory GiB", "diskGiB": "disk GiB"}


def pages_booked(guests: Sequence[Mapping[str, Any]]) -> dict[tuple[int, int], int]:
    """Huge pages the guests hold, per (NUMA node, page size)."""
    booked: dict[tuple[int, int], int] = {}
    for guest in guests:
        placement = guest.get("hostPlacement") or {}
        size = placement.get("hugepageSizeBytes")
        for node, count in (placement.get("hugepagesByNode") or {}).items():
            if size:
                key = (int(node), int(size))
                booked[key] = booked.get(key, 0) + int(count)
    return booked


def numa_rows(
    inventory: Mapping[str, Any],
    reserved: Iterable[int],
    guests: Sequence[Mapping[str, Any]] = (),
) -> list[tuple[str, ...]]:
    """Per NUMA node: CPUs, isolated, reserved, memory, huge pages free of total per size.

    Free is the pool's total less what the guests booked on that node.
    """
    parsed = Inventory.from_json(inventory)
    reserved = frozenset(reserved)
    booked = pages_booked(guests)
    rows: list[tuple[str, ...]] = []
    for node in parsed.numa_nodes:
        cpus = [c for c in parsed.cpus if c.numa_node == node.id]
        pages = [
            f"{size_label(p.size_bytes)} {p.total - booked.get((node.id, p.size_bytes), 0)}"
            f" of {p.total}"
            for p in node.hugepages
            if p.total
        ]
        rows.append(
            (
                str(node.id),
                cpulist(c.id for c in cpus),
                cpulist(c.id for c in cpus if c.isolated),
                cpulist(c.id for c in cpus if c.id in reserved),
                f"{node.memory_gib:g}",
                ", ".join(pages) or DASH,
            )
        )
    return rows


def gpu_rows(
    inventory: Mapping[str, Any],
    guests: Sequence[Mapping[str, Any]] | None,
    bookings: Sequence[Mapping[str, Any]] = (),
    now: datetime | None = None,
) -> list[tuple[str, ...]]:
    """Per GPU: PCI address, model, NUMA node, and the guest or reservations holding it."""
    by_pci: dict[str, list[str]] = {}
    for guest in guests or ():
        for gpu in guest.get("gpus") or ():
            by_pci.setdefault(str(gpu.get("pciAddress")), []).append(guest_name(guest))
    for booking in bookings:
        for pci in booking.get("gpus") or ():
            by_pci.setdefault(str(pci), []).append(booking_text(booking, now or datetime.now(UTC)))
    rows: list[tuple[str, ...]] = []
    for gpu in inventory.get("gpus") or []:
        node = gpu.get("numaNode")
        holder = ", ".join(by_pci.get(gpu["pciAddress"], []))
        booked = holder or ("free" if guests is not None else DASH)
        rows.append(
            (gpu["pciAddress"], gpu["model"], "unknown" if node is None else str(node), booked)
        )
    return rows


GPU_COLUMNS = ("PCI", "MODEL", "NODE", "HELD BY")
HELD_BY_MARGIN = 6
"""Cells of a host's page that are not the GPU table's: its indent, the scrollbar, a spare."""


def held_by_fitted(rows: list[tuple[str, ...]], width: int) -> list[tuple[str, ...]]:
    """The GPU rows with HELD BY cropped after a whole booking word or id to what the other
    columns leave of `width` (each column takes its widest cell and one cell each side)."""
    if not rows:
        return rows
    others = sum(
        max(len(GPU_COLUMNS[i]), *(len(r[i]) for r in rows)) + 2 for i in range(len(rows[0]) - 1)
    )
    room = max(width - others - 2, len(GPU_COLUMNS[-1]))
    return [(*row[:-1], crop_words(row[-1], room)) for row in rows]


def starts_later(booking: Mapping[str, Any], now: datetime) -> bool:
    start = booking.get("start")
    return bool(start) and parse_stamp(str(start)) > now


def booking_text(booking: Mapping[str, Any], now: datetime) -> str:
    """'rsv_…3x9k globex spot until 11-30 22:00'; one that starts later: '… from 08:38 until …'."""
    kind = "spot" if booking.get("spot") else "regular"
    rid = short_id(str(booking.get("reservationId") or booking["id"]))
    start = booking.get("start")
    since = f" from {day_time(start, now)}" if starts_later(booking, now) else ""
    return (
        f"{rid} {booking.get('tenantId', '')} {kind}{since} until {short_time(booking.get('end'))}"
    )


def gpus_now_and_later(bookings: Sequence[Mapping[str, Any]], now: datetime) -> str:
    """'GPUs reserved 3 now, 2 later': distinct GPUs, each counted once however many bookings
    hold it (a preempted booking and the one after it); a booking whose end passed holds none."""
    current: set[str] = set()
    later: set[str] = set()
    for booking in bookings:
        end = booking.get("end")
        if end and parse_stamp(str(end)) <= now:
            continue
        (later if starts_later(booking, now) else current).update(
            map(str, booking.get("gpus") or ())
        )
    return f"GPUs reserved {len(current)} now, {len(later)} later"


def guest_name(guest: Mapping[str, Any]) -> str:
    return str(guest.get("name") or guest["id"])


def guest_rows(guests: Sequence[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """Per guest: name, flavor, pinned CPUs (or the floating cpuset), NUMA nodes, degraded reason."""
    rows: list[tuple[str, ...]] = []
    for guest in sorted(guests, key=guest_name):
        placement = guest.get("hostPlacement") or {}
        cpus = placement.get("cpus")
        where = (
            f"pinned {cpulist(cpus)}"
            if cpus
            else f"floating {cpulist(placement.get('cpuset') or [])}"
        )
        mems = placement.get("mems")
        reason = placement.get("degradedReason")
        rows.append(
            (
                guest_name(guest),
                str(guest.get("flavor") or DASH),
                where,
                cpulist(mems) if mems else DASH,
                f"degraded: {reason}" if reason else "no",
            )
        )
    return rows


def capacity_text(resources: Iterable[Mapping[str, Any]]) -> str:
    parts = []
    order = list(RESOURCE_LABELS)
    for row in sorted(
        resources, key=lambda r: order.index(r["resource"]) if r["resource"] in order else 9
    ):
        name = RESOURCE_LABELS.get(row["resource"], row["resource"])
        parts.append(
            f"{name} {row['allocated']}/{row['capacity']} "
            f"(allocatable {row['allocatable']} ×{ratio_text(float(row['ratio'] or 1))})"
        )
    return " · ".join(parts) or "no capacity rows yet"


class HostDetail(DrillDown):
    """Pushed over Hosts by Enter; Esc or q goes back."""

    TITLE = "Host"
    ABOUT = (
        "One host: its NUMA nodes with their CPUs, isolated CPUs and the CPUs the host keeps "
        "for itself (reserved), memory and huge pages free per node; its GPUs and their "
        "bookings; and its guests with the CPUs each is pinned to (Tab, then Enter on one "
        "describes it). d describes the host itself, with its FleetConfig YAML."
    )
    BINDINGS: ClassVar[list[BindingType]] = [Binding("d", "describe", "Describe")]

    def __init__(self, host_id: str, name: str) -> None:
        super().__init__()
        self.host_id, self.host_name = host_id, name
        self.guests: dict[str, Mapping[str, Any]] = {}
        """The guests shown, by instance id: Enter on one describes it."""

    def crumbs(self) -> list[str]:
        return ["Hosts", self.host_name]

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="detail"):
            yield Static(id="facts")
            yield Static(Text("NUMA nodes", style="bold"), classes="heading")
            yield SteadyTable(id="numa", cursor_type="none", show_cursor=False)
            yield Static(id="numa-note", classes="note")
            yield Static(Text("GPUs", style="bold"), classes="heading")
            yield SteadyTable(id="gpus", cursor_type="none", show_cursor=False)
            yield Static(id="gpus-note", classes="note")
            yield Static(Text("Guests", style="bold"), classes="heading")
            yield SteadyTable(id="guests", cursor_type="row")
            yield Static(id="guests-note", classes="note")

    def on_mount(self) -> None:
        for table_id, columns in (
            ("#numa", ("NODE", "CPUS", "ISOLATED", "RESERVED", "MEM GiB", "HUGE PAGES FREE")),
            ("#gpus", GPU_COLUMNS),
            ("#guests", ("GUEST", "FLAVOR", "CPUS", "NODES", "DEGRADED")),
        ):
            self.query_one(table_id, DataTable).add_columns(*columns)
        for table_id in ("#numa", "#gpus"):  # Tab from the page goes straight to the guests
            self.query_one(table_id, DataTable).can_focus = False

    def fetch(self) -> Any:
        host = self.source.host(self.host_id)
        guests: list[dict[str, Any]] | None
        try:
            specs = self.source.host_guests(self.host_id)
            guests = [{**self.source.instance(s["id"]), "gpus": s.get("gpus")} for s in specs]
        except NotAvailable:
            guests = None
        try:
            bookings = self.source.host_bookings(self.host_id)
        except NotAvailable:
            bookings = []
        return host, guests, bookings

    def show(self, data: Any) -> None:
        host, guests, bookings = data
        now = self.now or self.source.now()
        if host.get("name") and host["name"] != self.host_name:  # opened by id (a reservation's)
            self.host_name = str(host["name"])
            self.update_title()
        inventory = host.get("inventory")
        reserved = host.get("reservedCpus") or []
        reported, seconds = age(host.get("inventoryReportedAt"), now)
        reported = f"reported {reported} ago" + (" (stale)" if inventory_stale(seconds) else "")
        facts = Text()
        facts.append(f"{host['name']}", style="bold")
        facts.append(f"  {host['id']}\npool {host['pool']} · state {host['status']} · ")
        facts.append(f"inventory {reported if inventory else 'never reported'}")
        facts.append(f"\n{capacity_text(host.get('resources') or [])}")
        for condition in host.get("conditions") or []:
            facts.append(f"\n{condition['type']}: {condition['message']}", style="bold red")
        if bookings:
            facts.append(f"\n{gpus_now_and_later(bookings, now)}")
        if inventory:
            parsed = Inventory.from_json(inventory)
            facts.append(
                f"\nCPUs {len(parsed.cpus)} · reserved for the host {cpulist(reserved)} · "
                f"isolated {cpulist(c.id for c in parsed.cpus if c.isolated)}"
            )
        self.query_one("#facts", Static).update(facts)
        unknown = "unknown: the host has not reported its inventory"
        self._fill(
            "#numa",
            numa_rows(inventory, reserved, guests or []) if inventory else [],
            "#numa-note",
            "none reported (no NUMA topology)" if inventory else unknown,
        )
        self._fill(
            "#gpus",
            held_by_fitted(
                gpu_rows(inventory, guests, bookings, now) if inventory else [],
                self.size.width - HELD_BY_MARGIN,
            ),
            "#gpus-note",
            "none" if inventory else unknown,
        )
        ordered = sorted(guests or [], key=guest_name)
        self.guests = {str(g["id"]): g for g in ordered}
        self._fill("#guests", guest_rows(ordered), "#guests-note", "none", keys=list(self.guests))
        if guests is None:
            self.query_one("#guests-note", Static).update("not available in this build")

    def on_resize(self) -> None:
        """The HELD BY cells are cropped to the width: crop them again to the new one."""
        if self.data is not None:
            self.show(self.data)

    def _fill(
        self,
        selector: str,
        rows: list[tuple[str, ...]],
        note: str = "",
        empty: str = "",
        keys: list[str] | None = None,
    ) -> None:
        table = self.query_one(selector, SteadyTable)
        table.fill(rows, keys)
        table.display = bool(rows)
        if note:
            self.query_one(note, Static).update(empty)
            self.query_one(note, Static).display = not rows

    def action_describe(self) -> None:
        """The host's fields, events and the FleetConfig YAML that would declare it."""
        from bcfleet.tui.screens.describe import DescribeScreen, describe_object

        source, host = self.source, self.host_id
        self.app.push_screen(
            DescribeScreen(
                "Host",
                [*self.crumbs(), "describe"],
                lambda: describe_object(source, "host", source.host(host)),
            )
        )

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        """Enter on a guest describes the instance (fields, conditions, events)."""
        event.stop()
        key = event.row_key.value
        if key is None or key not in self.guests:
            return
        from bcfleet.tui.screens.describe import DescribeScreen, describe_object

        source, name = self.source, guest_name(self.guests[key])
        self.app.push_screen(
            DescribeScreen(
                "Instance",
                [*self.crumbs(), name],
                lambda: describe_object(source, "instance", source.instance(key)),
            )
        )

    def focus_body(self) -> None:
        self.set_focus(self.query_one("#detail"))

    def id_to_copy(self) -> str | None:
        return self.host_id

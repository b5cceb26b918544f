"""One host, drilled into from Hosts: NUMA nodes, reserved and isolated CPUs, huge pages, GPUs, guests.

The reserved CPUs are worked out as the placement chooser does (the lowest
non-isolated CPUs, as many as the pool's hostReserve.vcpu, default 2); huge
pages free are what the host's agent last reported per node. Which CPUs each
guest is pinned to and which GPU is booked by whom come from the host's guests
and bookings when this build's API reports them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Static

from bcfleet.domain.numa import reserved_cpus, size_label
from bcfleet.domain.shapes import Inventory
from bcfleet.tui.format import DASH, age, cpulist, ratio_text, short_time
from bcfleet.tui.screens.base import ViewScreen

DEFAULT_RESERVE_VCPU = 2
RESOURCE_LABELS = {"vcpu": "vCPU", "memoryGiB": "memory GiB", "diskGiB": "disk GiB"}


def reserve_of(pool: Mapping[str, Any] | None) -> int:
    policy = (pool or {}).get("policy") or {}
    return int((policy.get("hostReserve") or {}).get("vcpu", DEFAULT_RESERVE_VCPU))


def numa_rows(inventory: Mapping[str, Any], reserve_vcpu: int) -> list[tuple[str, ...]]:
    """Per NUMA node: CPUs, isolated, reserved, memory, huge pages free/total per size."""
    parsed = Inventory.from_json(inventory)
    reserved = reserved_cpus(parsed, reserve_vcpu)
    rows: list[tuple[str, ...]] = []
    for node in parsed.numa_nodes:
        cpus = [c for c in parsed.cpus if c.numa_node == node.id]
        pages = [
            f"{size_label(p.size_bytes)} {p.free}/{p.total}" for p in node.hugepages if p.total
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
    inventory: Mapping[str, Any], bookings: Sequence[Mapping[str, Any]] | None
) -> list[tuple[str, ...]]:
    """Per GPU: PCI address, model, NUMA node, and who has it booked (when known)."""
    by_pci: dict[str, list[str]] = {}
    for booking in bookings or ():
        by_pci.setdefault(str(booking.get("pciAddress")), []).append(_booking_text(booking))
    rows: list[tuple[str, ...]] = []
    for gpu in inventory.get("gpus") or []:
        node = gpu.get("numaNode")
        booked = "; ".join(by_pci.get(gpu["pciAddress"], [])) or ("free" if bookings else "-")
        rows.append(
            (gpu["pciAddress"], gpu["model"], "unknown" if node is None else str(node), booked)
        )
    return rows


def _booking_text(booking: Mapping[str, Any]) -> str:
    who = str(booking.get("consumerId", "?"))
    if booking.get("spot"):
        who += " (spot)"
    until = booking.get("endsAt")
    return who + (f" until {short_time(until)}" if until else "")


def guest_rows(guests: Sequence[Mapping[str, Any]]) -> list[tuple[str, ...]]:
    """Per guest: instance, flavor, pinned CPUs (or the floating cpuset), NUMA nodes, degraded."""
    rows: list[tuple[str, ...]] = []
    for guest in guests:
        placement = guest.get("hostPlacement") or {}
        cpus = placement.get("cpus")
        pinned = (
            f"pinned {cpulist(cpus)}"
            if cpus
            else f"floating {cpulist(placement.get('cpuset') or [])}"
        )
        mems = placement.get("mems")
        rows.append(
            (
                guest.get("name") or guest["id"],
                str(guest.get("flavor") or DASH),
                pinned,
                cpulist(mems) if mems else DASH,
                str(placement.get("degradedReason") or DASH),
            )
        )
    return rows


def capacity_text(resources: Iterable[Mapping[str, Any]]) -> str:
    parts = []
    for row in resources:
        name = RESOURCE_LABELS.get(row["resource"], row["resource"])
        parts.append(
            f"{name} {row['allocated']}/{row['capacity']} "
            f"(allocatable {row['allocatable']} ×{ratio_text(float(row['ratio']))})"
        )
    return " · ".join(parts) or "no capacity rows yet"


class HostDetail(ViewScreen):
    """Pushed over Hosts by Enter; Esc goes back."""

    TITLE = "Host"
    ABOUT = (
        "One host: its NUMA nodes with their CPUs, isolated CPUs and the CPUs the host keeps "
        "for itself (reserved), memory and huge pages free per node; its GPUs and their "
        "bookings; and its guests with the CPUs each is pinned to."
    )

    def __init__(self, host_id: str, name: str) -> None:
        super().__init__()
        self.host_id, self.host_name = host_id, name

    def crumbs(self) -> list[str]:
        return ["Hosts", self.host_name]

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="detail"):
            yield Static(id="facts")
            yield Static(Text("NUMA nodes", style="bold"), classes="heading")
            yield DataTable(id="numa", cursor_type="none", show_cursor=False)
            yield Static(Text("GPUs", style="bold"), classes="heading")
            yield DataTable(id="gpus", cursor_type="none", show_cursor=False)
            yield Static(Text("Guests", style="bold"), classes="heading")
            yield DataTable(id="guests", cursor_type="none", show_cursor=False)
            yield Static(id="guests-note", classes="note")

    def on_mount(self) -> None:
        for table_id, columns in (
            ("#numa", ("NODE", "CPUS", "ISOLATED", "RESERVED", "MEM GiB", "HUGE PAGES free/total")),
            ("#gpus", ("PCI", "MODEL", "NODE", "BOOKED BY")),
            ("#guests", ("GUEST", "FLAVOR", "CPUS", "NODES", "DEGRADED")),
        ):
            self.query_one(table_id, DataTable).add_columns(*columns)

    def fetch(self) -> Any:
        host = self.source.host(self.host_id)
        pool = next((p for p in self.source.pools() if p["id"] == host["poolId"]), None)
        return host, pool

    def show(self, data: Any) -> None:
        host, pool = data
        now = self.now or self.source.now()
        inventory = host.get("inventory")
        reported, _ = age(host.get("inventoryReportedAt"), now)
        facts = Text()
        facts.append(f"{host['name']}", style="bold")
        facts.append(f"  {host['id']}\npool {host['pool']} · state {host['status']} · ")
        facts.append(
            f"inventory {'reported ' + reported + ' ago' if inventory else 'never reported'}"
        )
        facts.append(f"\n{capacity_text(host.get('resources') or [])}")
        if inventory:
            parsed = Inventory.from_json(inventory)
            reserved = reserved_cpus(parsed, reserve_of(pool))
            facts.append(
                f"\nCPUs {len(parsed.cpus)} · reserved for the host {cpulist(reserved)} · "
                f"isolated {cpulist(c.id for c in parsed.cpus if c.isolated)}"
            )
        self.query_one("#facts", Static).update(facts)
        self._fill("#numa", numa_rows(inventory, reserve_of(pool)) if inventory else [])
        self._fill("#gpus", gpu_rows(inventory, host.get("bookings")) if inventory else [])
        guests = host.get("guests")
        self._fill("#guests", guest_rows(guests) if guests is not None else [])
        note = self.query_one("#guests-note", Static)
        note.update(
            "Guests and GPU bookings: not available in this build." if guests is None else ""
        )
        note.display = guests is None

    def _fill(self, selector: str, rows: list[tuple[str, ...]]) -> None:
        table = self.query_one(selector, DataTable)
        table.clear()
        table.add_rows(rows)
        table.display = bool(rows)

    def focus_body(self) -> None:
        self.query_one("#detail").focus()

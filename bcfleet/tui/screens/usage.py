"""Usage and credits: spare instances' credits per month per tenant and size, and usage by meter over time."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import DataTable, Label, Sparkline, Static

from bcfleet.clock import parse_time
from bcfleet.domain.compute_settings import credits_table
from bcfleet.domain.sizes import SIZE_NAMES, format_credits, label
from bcfleet.tui.screens.base import ViewScreen
from bcfleet.tui.source import ComputeSnapshot, NotAvailable, UsageReadJson
from bcfleet.tui.widgets.steady_table import SteadyTable

HOURS = 24


def credits_rows(snapshots: Sequence[ComputeSnapshot]) -> list[tuple[str, ...]]:
    """Per tenant: spares × credits per month of each enabled size, then the tenant's total."""
    rows = []
    for snap in snapshots:
        table = credits_table(snap.settings)
        cells = [snap.tenant]
        for row in table.rows:
            cells.append(
                f"{row.spares} · {format_credits(row.credits_per_month)}" if row.enabled else "off"
            )
        cells.append(format_credits(table.total))
        rows.append(tuple(cells))
    return rows


def hourly(
    windows: Sequence[Mapping[str, Any]], now: datetime, hours: int = HOURS
) -> dict[str, list[float]]:
    """Quantities per meter in hourly buckets over the last `hours`, oldest first."""
    start = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=hours - 1)
    series: dict[str, list[float]] = {}
    for window in windows:
        at = parse_time(str(window.get("windowStart") or window.get("start")))
        index = int((at - start).total_seconds() // 3600)
        if 0 <= index < hours:
            bucket = series.setdefault(str(window["meter"]), [0.0] * hours)
            bucket[index] += float(window.get("quantity", 0))
    return dict(sorted(series.items()))


class UsageView(ViewScreen):
    TITLE = "Usage and credits"
    CLOCK_DEPENDENT = False
    ABOUT = (
        "What spare instances cost each tenant: spares and credits per month for every "
        "size (spares × 720 credits) and the tenant's total; and usage by meter over the "
        "last 24 hours (vps.vcpu.hours, gpu.l40s.hours, credits, …) as sparklines."
    )

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="usage"):
            yield Static(
                Text("Credits per month (spares · credits)", style="bold"), classes="heading"
            )
            yield SteadyTable(id="credits", cursor_type="row")
            yield Static(id="credits-note", classes="note")
            yield Static(
                Text(f"Usage by meter, last {HOURS} hours", style="bold"), classes="heading"
            )
            yield VerticalScroll(id="meters")
            yield Static(id="meters-note", classes="note")

    def on_mount(self) -> None:
        self.query_one("#credits", DataTable).add_columns(
            "TENANT", *(label(s).upper() for s in SIZE_NAMES), "TOTAL"
        )

    def fetch(self) -> Any:
        credits: list[ComputeSnapshot] | str
        try:
            tenants = [t["id"] for t in self.source.tenants()]
            credits = [self.source.compute_settings(t) for t in tenants]
        except NotAvailable as exc:
            credits = exc.area
        windows: UsageReadJson | str
        try:
            windows = self.source.usage(self.source.now() - timedelta(hours=HOURS))
        except NotAvailable as exc:
            windows = exc.area
        return credits, windows

    def show(self, data: Any) -> None:
        credits, windows = data
        table = self.query_one("#credits", SteadyTable)
        note = self.query_one("#credits-note", Static)
        if isinstance(credits, str):
            table.fill([])
            note.update(f"{credits}: not available in this build.")
        else:
            table.fill(credits_rows(credits))
            note.update("")
        table.display = not isinstance(credits, str)
        note.display = isinstance(credits, str)
        self._meters(windows)

    def _meters(self, windows: dict[str, Any] | str) -> None:
        box = self.query_one("#meters", VerticalScroll)
        note = self.query_one("#meters-note", Static)
        box.remove_children()
        if isinstance(windows, str):
            note.update(f"{windows}: not available in this build.")
            note.display, box.display = True, False
            return
        series = hourly(windows["items"], self.now or self.source.now())
        text = ""
        if not series:
            text = "No usage windows in the last 24 hours."
        elif not windows["complete"]:
            text = f"Partial: the first {len(windows['items']):,} windows of the last 24 hours."
        note.update(text)
        note.display, box.display = bool(text), bool(series)
        for meter, values in series.items():
            row = Horizontal(classes="meter")
            box.mount(row)
            row.mount(Label(meter, classes="meter-name"))
            row.mount(Sparkline(values, classes="meter-line"))
            row.mount(Label(f"{sum(values):,.2f}", classes="meter-total"))

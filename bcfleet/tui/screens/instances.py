"""Instances: each with its state, flavor, host (as the caller may see it) and why it is pending.

The REASON column carries a pending instance's counted Unschedulable message (the
CLI's `why`), or a degraded placement's reason, or else what its host's agent reports
(a start refused, libvirt's refusal, a crash); Enter describes the instance: every
field, its conditions, and the events the log holds about it.

A fleet of up to PAGE_MAX instances is read whole and filtered and sorted here, as every
other view is. A larger one is read a page at a time (instance_pages.py): the server
filters, sorts and counts, the next page is read as the cursor nears the end of what is
read, and the status line says "N of M".
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.text import Text

from bcfleet.domain.states import InstanceState
from bcfleet.tui.actions import actions_for
from bcfleet.tui.format import DASH, age, croppable
from bcfleet.tui.instance_pages import Listing, Pager
from bcfleet.tui.screens.reservations import condition
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.widgets.keyed_table import Column, KeyedTable, Row

# At 80 columns TENANT gives way first, then AGE, then FLAVOR; STATE, HOST and REASON stay.
COLUMNS = (
    Column("name", "NAME", name=True),
    Column("tenant", "TENANT", give_way=3, name=True),
    Column("state", "STATE"),
    Column("flavor", "FLAVOR", give_way=1, name=True),
    Column("host", "HOST", name=True),
    Column("age", "AGE", give_way=2),
    Column("reason", "REASON", crop_to=14),
)
STATE_ORDER: dict[str, int] = {
    InstanceState.PENDING: 0,
    "starting": 1,
    InstanceState.RUNNING: 2,
    "stopping": 3,
    InstanceState.STOPPED: 4,
}
"""The view's own order: instances waiting for a host first."""
STATE_STYLE: dict[str, str] = {
    InstanceState.PENDING: "yellow",
    InstanceState.RUNNING: "green",
    InstanceState.STOPPED: "dim",
    InstanceState.DELETED: "dim",
}


def reason_of(instance: Mapping[str, Any]) -> str:
    """Why it waits (the counted Unschedulable message) or why it runs degraded, or else its
    agent's first condition; '-' otherwise."""
    for kind in ("Unschedulable", "PlacementDegraded"):
        found = condition(instance, kind)
        if found is not None and found.get("status", "True") == "True":
            return str(found.get("message") or found.get("reason") or kind)
    for reported in instance.get("agentConditions") or ():
        return f"{reported.get('type')}: {reported.get('message')}"
    return DASH


def instance_row(instance: Mapping[str, Any], now: Any) -> Row:
    state = str(instance.get("state") or DASH)
    name = str(instance.get("name") or instance["id"])
    host = str(instance.get("host") or DASH)
    flavor = str(instance.get("flavor") or instance.get("flavorId") or DASH)
    since, seconds = age(instance.get("createdAt"), now, short=True)
    reason = reason_of(instance)
    return Row(
        key=instance["id"],
        cells=(
            name,
            str(instance.get("tenantId") or DASH),
            Text(state, style=STATE_STYLE.get(state, "")),
            flavor,
            host,
            since,
            croppable(reason, style="yellow" if state == InstanceState.PENDING else ""),
        ),
        sort=(name, instance.get("tenantId"), STATE_ORDER.get(state, 9), flavor, host, seconds),
        search=tuple(  # the id last: a search for part of it finds the row, as the server's does
            t.lower()
            for t in (
                name,
                str(instance.get("tenantId")),
                state,
                flavor,
                host,
                since,
                reason,
                str(instance["id"]),
            )
        ),  # fmt: skip
    )


class InstancesView(TableView):
    TITLE = "Instances"
    ABOUT = (
        "Every instance you may see: its state, flavor and host (a host you may not see "
        "reads '-'), how long ago it was created, and REASON: why a pending one waits "
        "(the counted Unschedulable message) or why a running one is degraded. Enter "
        "describes it: every field, its conditions and its latest events."
    )
    COLUMNS = COLUMNS
    NOUN = ("instance", "instances")
    ACTIONS = actions_for("instances")

    def __init__(self) -> None:
        super().__init__()
        self.instances: dict[str, Mapping[str, Any]] = {}
        self.pager = Pager(COLUMNS)
        self.listing: Listing | None = None

    def on_mount(self) -> None:
        super().on_mount()
        self.watch(self.table, "cursor_row", self._near_the_end, init=False)

    def fetch(self) -> Any:
        return self.pager.fetch(self.source)

    def item(self, key: str) -> Any:
        return self.instances.get(key)

    def rows(self, data: Any) -> Iterable[Row]:
        now = self.now or self.source.now()
        listing: Listing = data
        self.listing = listing
        self.pager.shown(listing)
        self.instances = {i["id"]: i for i in listing.items}
        rows = [instance_row(i, now) for i in listing.items]
        if listing.paged:  # the server's order, as it pages
            return rows
        rows.sort(key=lambda r: (r.sort[2], r.key))
        return rows

    def show(self, data: Any) -> None:
        """The rows; an answer to a new filter or sort starts with the cursor on its first row
        (the row it was on may be pages away, or gone)."""
        before, listing = self.listing, data
        fresh = listing.paged and before is not None and before.query != listing.query
        if fresh:  # the cursor moved by the new rows is not a move down to the end
            self.pager.cursor_seen = None
        super().show(data)
        if fresh:
            self.table.move_cursor(row=0)

    def on_keyed_table_changed(self, event: KeyedTable.Changed) -> None:
        """A filter or a sort of a fleet read a page at a time: the server is asked again."""
        super().on_keyed_table_changed(event)
        table = self.table
        if self.pager.ask(table.filter_text, table.sort_index, table.sort_reverse):
            self.request_refresh(force=True)

    def _near_the_end(self, row: int) -> None:
        """The cursor came near the last row read: read the next page (unless the filter just
        changed, as the table tells later: then the server is asked that first)."""
        table = self.table
        asked = self.pager.ask(table.filter_text, table.sort_index, table.sort_reverse)
        if asked or self.pager.near_the_end(row, table.shown_count):
            self.request_refresh(force=True)

    def open_row(self, key: str) -> None:
        self.describe_row(key)

    def describe_doc(self, key: str, item: Mapping[str, Any]) -> Mapping[str, Any]:
        from bcfleet.tui.screens.describe import describe_object

        del item
        return describe_object(self.source, "instance", self.source.instance(key))

    def summary(self) -> Text:
        """The table's summary, its count as "N of M" of the whole fleet when it is read a page
        at a time, with what the server was not asked."""
        text = super().summary()
        listing = self.listing
        if listing is None or not listing.paged or not text.plain:
            return text
        head = text.plain.split(" · ")[0]
        counted = Text(self.pager.counted(listing, self.table.shown_count))
        counted.append_text(text[len(head) :])
        for note in self.pager.notes(listing):
            counted.append(f" · {note}")
        return counted

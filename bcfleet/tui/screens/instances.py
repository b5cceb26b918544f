"""Instances: each with its state, flavor, host (as the caller may see it) and why it is pending.

The REASON column carries a pending instance's counted Unschedulable message (the
CLI's `why`), or a degraded placement's reason; Enter describes the instance: every
field, its conditions, and the events the log holds about it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from rich.text import Text

from bcfleet.tui.actions import actions_for
from bcfleet.tui.format import DASH, age, croppable
from bcfleet.tui.screens.events import data_text
from bcfleet.tui.screens.reservations import condition
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.source import JSON, FleetSource
from bcfleet.tui.widgets.keyed_table import Column, Row

# At 80 columns TENANT gives way first, then AGE, then FLAVOR; STATE, HOST and REASON stay.
COLUMNS = (
    Column("name", "NAME"),
    Column("tenant", "TENANT", give_way=3),
    Column("state", "STATE"),
    Column("flavor", "FLAVOR", give_way=1),
    Column("host", "HOST"),
    Column("age", "AGE", give_way=2),
    Column("reason", "REASON", crop_to=14),
)
STATE_ORDER = {"pending": 0, "starting": 1, "running": 2, "stopping": 3, "stopped": 4}
"""The view's own order: instances waiting for a host first."""
STATE_STYLE = {"pending": "yellow", "running": "green", "stopped": "dim", "deleted": "dim"}
EVENT_PAGE = 1000
EVENT_PAGES = 50
"""Enter reads at most this many pages of the event log for the instance's events."""
EVENTS_SHOWN = 20


def reason_of(instance: Mapping[str, Any]) -> str:
    """Why it waits (the counted Unschedulable message) or why it runs degraded; '-' otherwise."""
    for kind in ("Unschedulable", "PlacementDegraded"):
        found = condition(instance, kind)
        if found is not None and found.get("status", "True") == "True":
            return str(found.get("message") or found.get("reason") or kind)
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
            croppable(reason, style="yellow" if state == "pending" else ""),
        ),
        sort=(name, instance.get("tenantId"), STATE_ORDER.get(state, 9), flavor, host, seconds),
        search=tuple(
            t.lower()
            for t in (name, str(instance.get("tenantId")), state, flavor, host, since, reason)
        ),
    )


def events_about(source: FleetSource, subject_id: str) -> list[str]:
    """The latest events the log holds about one object, newest first, one line each."""
    found: list[Mapping[str, Any]] = []
    cursor: int | None = None
    for _ in range(EVENT_PAGES):
        page = source.events(cursor, limit=EVENT_PAGE)
        found.extend(e for e in page["items"] if e.get("subjectId") == subject_id)
        found = found[-EVENTS_SHOWN:]
        if len(page["items"]) < EVENT_PAGE or page["cursor"] in (None, cursor):
            break
        cursor = page["cursor"]
    return [f"{e['at']}  {e['type']}  {data_text(e.get('data') or {})}" for e in reversed(found)]


def describe_instance(source: FleetSource, instance_id: str, host: str | None) -> JSON:
    """The instance as `instances show` gives it, its host by name, and its events."""
    doc = dict(source.instance(instance_id))
    if host is not None:
        doc["host"] = host
    doc["events"] = events_about(source, instance_id) or [DASH]
    return doc


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

    def fetch(self) -> Any:
        return self.source.instances()

    def item(self, key: str) -> Any:
        return self.instances.get(key)

    def rows(self, data: Any) -> Iterable[Row]:
        now = self.now or self.source.now()
        self.instances = {i["id"]: i for i in data}
        rows = [instance_row(i, now) for i in data]
        rows.sort(key=lambda r: (r.sort[2], r.key))
        return rows

    def open_row(self, key: str) -> None:
        from bcfleet.tui.screens.detail import DetailScreen

        instance = self.instances.get(key, {})
        name = str(instance.get("name") or key)
        host = instance.get("host")
        source = self.source
        self.app.push_screen(
            DetailScreen(
                "Instance", ["Instances", name], lambda: describe_instance(source, key, host)
            )
        )

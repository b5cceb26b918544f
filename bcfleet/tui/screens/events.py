"""Events: the event log as a live tail, newest first, filtered by type with `t` (or `/type:…`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from rich.text import Text
from textual.app import SystemCommand
from textual.binding import Binding, BindingType

from bcfleet.clock import parse_time
from bcfleet.domain.bounds import PAGE_MAX
from bcfleet.domain.pages import EVENTS
from bcfleet.errors import FleetError
from bcfleet.tui.format import DASH, croppable, short_id
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.widgets.keyed_table import Column, Row
from bcfleet.tui.widgets.prompt import Prompt

# At 80 columns SEQ gives way; SUBJECT (a name, cropped when long) and DATA (cropped) stay.
COLUMNS = (
    Column("seq", "SEQ", give_way=1),
    Column("at", "AT"),
    Column("type", "TYPE"),
    Column("subject", "SUBJECT", name=True),
    Column("data", "DATA", crop_to=16),
)
KEEP = 1000
"""Events kept in the tail; older ones scroll out."""
PAGE = EVENTS.maximum  # the screen reads whole pages


def data_text(data: Mapping[str, Any]) -> str:
    """key=value pairs; nested values as compact JSON (Enter on the row shows them in full)."""
    parts = []
    for key, value in data.items():
        shown = (
            value
            if isinstance(value, str | int | float)
            else json.dumps(value, separators=(",", ":"))
        )
        parts.append(f"{key}={shown}")
    return " ".join(parts) or DASH


def type_style(event_type: str) -> str:
    if event_type.endswith((".preempting", ".preempted")):
        return "bold red"
    if event_type.endswith((".failed", ".draining")):
        return "yellow"
    return ""


def carried_name(event: Mapping[str, Any]) -> str | None:
    """The name the event's data carries (hosts, flavors, services do), if any."""
    data = event.get("data") or {}
    name = data.get("name") if isinstance(data, Mapping) else None
    return name if isinstance(name, str) and name else None


def subject_text(event: Mapping[str, Any], names: Mapping[str, str] | None = None) -> str:
    """The subject by the name the event carries ('fra-07'), else by the name looked up for its
    id (an instance's), else its id shortened ('rsv_…3x9k', as the Reservations list's ID)."""
    name = carried_name(event)
    subject = event.get("subjectId")
    if name:
        return name
    if subject and names and subject in names:
        return names[str(subject)]
    return short_id(str(subject)) if subject else DASH


NAMED_BY_LOOKUP = ("ins_",)
"""Subjects whose events carry no name, named by the object's own (instances; reservations have
no name and keep their short id)."""
LOOKUPS_PER_FETCH = 20
"""Subjects looked up one by one per fetch, past those the instances page named."""


def unnamed_subjects(items: Iterable[Mapping[str, Any]], known: Mapping[str, str]) -> list[str]:
    """The subject ids that want a looked-up name and have none yet, newest first."""
    found: dict[str, None] = {}
    for event in reversed(list(items)):
        subject = str(event.get("subjectId") or "")
        if subject.startswith(NAMED_BY_LOOKUP) and subject not in known and not carried_name(event):
            found[subject] = None
    return list(found)


def event_row(event: Mapping[str, Any], names: Mapping[str, str] | None = None) -> Row:
    at = parse_time(event["at"]).strftime("%m-%d %H:%M:%S")
    kind = Text(event["type"], style=type_style(event["type"]))
    subject = subject_text(event, names)
    data = data_text(event.get("data") or {})
    return Row(
        key=str(event["seq"]),
        cells=(str(event["seq"]), at, kind, subject, croppable(data)),
        sort=(event["seq"], event["at"], event["type"], subject, ""),
        # the filter finds the subject by its name and by its whole id
        search=tuple(
            t.lower()
            for t in (
                str(event["seq"]),
                at,
                event["type"],
                f"{subject} {event.get('subjectId') or ''}",
                data,
            )
        ),  # fmt: skip
    )


class EventsView(TableView):
    TITLE = "Events"
    ABOUT = (
        "The event log, newest first, following new events as they are written "
        "(host.adopted, reservation.placed, reservation.preempting, …). t filters by type; "
        "/ filters by any words."
    )
    COLUMNS = COLUMNS
    NOUN = ("event", "events")
    CLOCK_DEPENDENT = False

    BINDINGS: ClassVar[list[BindingType]] = [Binding("t", "filter_type", "By type")]

    def __init__(self) -> None:
        super().__init__()
        self.tail: dict[int, Mapping[str, Any]] = {}
        self.cursor: int | None = None
        self.names: dict[str, str] = {}
        """Instance names by id, looked up in the worker (events carry no instance name)."""

    def fetch(self) -> Any:
        """Every event after the cursor (the whole log on the first fetch), oldest first; and
        the names of the instances they are about, looked up once each."""
        items: list[Mapping[str, Any]] = []
        cursor = self.cursor
        while True:
            page = self.source.events(cursor, limit=PAGE)
            items.extend(page["items"])
            items = items[-KEEP:]
            if len(page["items"]) < PAGE or page["cursor"] == cursor:
                self._look_up_names(items)
                return items, page["cursor"]
            cursor = page["cursor"]

    def _look_up_names(self, items: list[Mapping[str, Any]]) -> None:
        """Name the instances the events are about: the newest page of instances first (one
        read), then a few one by one; one that cannot be read keeps its short id."""
        wanted = unnamed_subjects(items, self.names)
        if not wanted:
            return
        listed, _total = self.source.instances_page(PAGE_MAX)
        named = {str(i["id"]): str(i.get("name") or short_id(str(i["id"]))) for i in listed}
        for subject in wanted:
            if subject in named:
                self.names[subject] = named[subject]
        for subject in [w for w in wanted if w not in named][:LOOKUPS_PER_FETCH]:
            try:
                instance = self.source.instance(subject)
            except FleetError:  # gone, or not visible: its short id stays
                self.names[subject] = short_id(subject)
                continue
            self.names[subject] = str(instance.get("name") or short_id(subject))

    def show(self, data: Any) -> None:
        items, cursor = data
        for event in items:
            self.tail[int(event["seq"])] = event
        if len(self.tail) > KEEP:
            for seq in sorted(self.tail)[: len(self.tail) - KEEP]:
                del self.tail[seq]
        self.cursor = cursor if cursor is not None else self.cursor
        follow = self.table.cursor_row == 0
        super().show(data)
        if follow and self.table.row_count:
            self.table.move_cursor(row=0, scroll=True)

    def rows(self, _data: Any) -> Iterable[Row]:
        names = self.names
        return (event_row(self.tail[seq], names) for seq in sorted(self.tail, reverse=True))

    def open_row(self, key: str) -> None:
        from bcfleet.tui.screens.detail import DetailScreen

        event = self.tail.get(int(key))
        if event is not None:
            crumbs = ["Events", f"{event['seq']} {event['type']}"]
            self.app.push_screen(DetailScreen("Event", crumbs, lambda: event))

    def action_filter_type(self) -> None:
        current = self.table.filter_text
        self.query_one(Prompt).open("filter", current if current.startswith("type:") else "type:")

    def commands(self) -> Iterable[SystemCommand]:
        yield from super().commands()
        seen = sorted({str(e["type"]) for e in self.tail.values()})
        for event_type in seen:
            yield SystemCommand(
                f"Events of type {event_type}",
                "Filter the tail by this type",
                lambda t=event_type: self.table.set_filter(f"type:{t}"),
            )

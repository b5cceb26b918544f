"""Describe any row of any view (`d` or Enter, as k9s does): every field, conditions, events, YAML.

Fields are written for people: yes/no for booleans, hosts by name instead of node ids,
times to the minute with how long ago, sizes in bytes as KiB/MiB/GiB, CPU lists as ranges
(2-63). Below them come the object's conditions, its latest events, and the FleetConfig
YAML that would declare it (tui/declare.py), or a line saying a FleetConfig does not
declare such objects.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from bcfleet.domain import pages
from bcfleet.tui.declare import declaration
from bcfleet.tui.format import DASH, bytes_text, cpulist, moment, yes_no
from bcfleet.tui.screens.detail import DetailScreen, describe
from bcfleet.tui.source import JSON, FleetSource

STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d")
FLEETCONFIG = "FleetConfig"
EVENTS = "events"
CPU_LISTS = frozenset({"cpus", "cpuset", "mems", "isolated"})
"""Lists of CPU or NUMA node ids, written as Linux writes them: 2-63."""
EVENT_PAGE = pages.EVENTS.maximum
EVENT_PAGES = 50
EVENTS_SHOWN = 20


def humane(value: Any, now: datetime, hosts: Mapping[str, str], key: str = "") -> Any:
    """A JSON value as people read it (see the module's docstring); nested values alike."""
    if isinstance(value, bool):
        return yes_no(value)
    if isinstance(value, Mapping):
        return humane_fields(value, now, hosts)
    if isinstance(value, list) and key in CPU_LISTS and all(isinstance(v, int) for v in value):
        return cpulist(value)
    if isinstance(value, list):
        return [humane(v, now, hosts) for v in value]
    if isinstance(value, str) and STAMP.match(value):
        return moment(value, now)
    if isinstance(value, int) and key.endswith("Bytes"):
        return bytes_text(value)
    return value


def humane_fields(doc: Mapping[str, Any], now: datetime, hosts: Mapping[str, str]) -> JSON:
    """Each field humane; `nodeId`/`nodeIds` become `host`/`hosts` by name ('-' if not visible)."""
    out: JSON = {}
    for key, value in doc.items():
        if key == "nodeId":
            out["host"] = hosts.get(value, DASH) if value else None
        elif key == "nodeIds" and isinstance(value, list):
            out["hosts"] = [hosts.get(v, DASH) for v in value]
        else:
            out[key.removesuffix("Bytes")] = humane(value, now, hosts, key)
    return out


def _with_pool(key: str, value: Any, pool: str) -> list[tuple[str, Any]]:
    """The field, followed by the pool's name when it is the pool's id."""
    return [(key, value), ("pool", pool)] if key == "poolId" else [(key, value)]


def _needs_hosts(doc: Mapping[str, Any]) -> bool:
    return bool(doc.get("nodeId") or doc.get("nodeIds"))


def latest_events(source: FleetSource, subject_id: str) -> list[Mapping[str, Any]]:
    """The latest events the log holds about one object, newest first.

    The events API has no subject filter: at most EVENT_PAGES pages are read.
    """
    found: list[Mapping[str, Any]] = []
    cursor: int | None = None
    for _ in range(EVENT_PAGES):
        page = source.events(cursor, limit=EVENT_PAGE)
        found.extend(e for e in page["items"] if e.get("subjectId") == subject_id)
        found = found[-EVENTS_SHOWN:]
        if len(page["items"]) < EVENT_PAGE or page["cursor"] in (None, cursor):
            break
        cursor = page["cursor"]
    return found[::-1]


def event_line(event: Mapping[str, Any], now: datetime) -> str:
    from bcfleet.tui.screens.events import data_text

    return f"{moment(event['at'], now)}  {event['type']}  {data_text(event.get('data') or {})}"


def describe_object(
    source: FleetSource, kind: str | None, doc: Mapping[str, Any], *, events: bool = True
) -> JSON:
    """What the describe screen shows for one object (runs in the view's worker)."""
    hosts = {h["id"]: h["name"] for h in source.hosts()} if _needs_hosts(doc) else {}
    accounts = (
        {a["id"]: a["name"] for a in source.provider_accounts()}
        if doc.get("providerAccountId")
        else {}
    )
    now = source.now()
    if doc.get("poolId") and "pool" not in doc:  # the pool by name too, beside its id
        name = {p["id"]: p["name"] for p in source.pools()}.get(doc["poolId"], DASH)
        doc = {k: v for key, value in doc.items() for k, v in _with_pool(key, value, name)}
    shown = humane_fields(doc, now, hosts)
    if "conditions" in shown:  # after the plain fields, as kubectl describe puts them
        shown["conditions"] = shown.pop("conditions") or DASH
    if events and doc.get("id"):
        found = latest_events(source, str(doc["id"]))
        shown[EVENTS] = [event_line(e, now) for e in found] or [DASH]
    shown[FLEETCONFIG] = declaration(kind, doc, accounts)
    return shown


class DescribeScreen(DetailScreen):
    """One object in full: its fields, conditions and events, then its FleetConfig YAML."""

    ABOUT = (
        "Every field of the object (yes/no, hosts by name, times with how long ago), its "
        "conditions, its latest events, and the FleetConfig YAML that would declare it."
    )

    def show(self, data: Any) -> None:
        fields = {k: v for k, v in data.items() if k not in (FLEETCONFIG, EVENTS)}
        table = Table(box=None, show_header=False, padding=(0, 2, 0, 0), expand=False)
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")
        for label, value in describe(fields):
            table.add_row(label, Text(str(value)))
        for heading in (EVENTS, FLEETCONFIG):
            if heading not in data:
                continue
            table.add_row(heading, "")
            lines = data[heading]
            for line in lines if isinstance(lines, list) else str(lines).splitlines():
                table.add_row("", Text(str(line)))
        self.query_one("#fields", Static).update(table)

"""One object in full, drilled into from a list (a reservation, an instance, an event): every field.

Lists keep to the columns that fit 80 columns; Enter shows everything, with
conditions and nested documents spelled out line by line, as `kubectl describe`
does. Esc goes back to the list, on the same row.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import Static

from bcfleet.tui.screens.base import DrillDown

Fields = list[tuple[str, Any]]


def describe(doc: Mapping[str, Any]) -> Fields:
    """A JSON document as (label, value) lines: nested objects and lists indented below their key."""
    lines: Fields = []
    for key, value in doc.items():
        _add(lines, key, value, 0)
    return lines


def _add(lines: Fields, key: str, value: Any, depth: int) -> None:
    label = "  " * depth + key
    if isinstance(value, Mapping) and value:
        lines.append((label, ""))
        for sub, inner in value.items():
            _add(lines, sub, inner, depth + 1)
    elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
        lines.append((label, ""))
        for index, item in enumerate(value):
            _add(lines, f"[{index}]", item, depth + 1)
    elif isinstance(value, list):
        lines.append((label, ", ".join(str(v) for v in value) or "-"))
    else:
        lines.append((label, "-" if value is None or value == {} else str(value)))


class DetailScreen(DrillDown):
    """Fields of one object, fetched again on r (and by the timer) while it is open."""

    ABOUT = "Every field of the object; nested documents are indented under their key."

    def __init__(self, title: str, crumbs: list[str], load: Callable[[], Mapping[str, Any]]):
        super().__init__()
        self.title_text, self._crumbs, self.load = title, crumbs, load

    def crumbs(self) -> list[str]:
        return self._crumbs

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="detail"):
            yield Static(id="fields")

    def fetch(self) -> Any:
        return self.load()

    def show(self, data: Any) -> None:
        table = Table(box=None, show_header=False, padding=(0, 2, 0, 0), expand=False)
        table.add_column(style="bold", no_wrap=True)
        table.add_column(overflow="fold")
        for label, value in describe(data):
            table.add_row(label, Text(str(value)))
        self.query_one("#fields", Static).update(table)

    def focus_body(self) -> None:
        self.set_focus(self.query_one("#detail"))

    def id_to_copy(self) -> str | None:
        found = self.data.get("id") if isinstance(self.data, Mapping) else None
        return str(found) if found else None

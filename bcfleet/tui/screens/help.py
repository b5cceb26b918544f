"""`?`: the keys of the view underneath, what the view shows, and the views' names and numbers."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import Static

from bcfleet.tui.widgets.keyed_table import KeyedTable

if TYPE_CHECKING:
    from bcfleet.tui.views import ViewSpec

KEY_NAMES = {
    "question_mark": "?",
    "slash": "/",
    "colon": ":",
    "escape": "Esc",
    "enter": "Enter",
    "ctrl+p": "Ctrl+P",
    "ctrl+c": "Ctrl+C",
    "ctrl+a": "Ctrl+A",
    "ctrl+d": "Ctrl+D",
    "space": "Space",
    "plus": "+",
    "minus": "-",
    "left_square_bracket": "[",
    "right_square_bracket": "]",
}


def key_label(key: str) -> str:
    return ", ".join(KEY_NAMES.get(k.strip(), k.strip()) for k in key.split(","))


def _declared(*nodes: object) -> set[tuple[str, str]]:
    """(key, action) of the bindings bcfleet's own classes declare (not Textual's defaults)."""
    found: set[tuple[str, str]] = set()
    for node in nodes:
        for cls in type(node).__mro__:
            if not cls.__module__.startswith("bcfleet."):
                continue
            for binding in cls.__dict__.get("BINDINGS", []):
                if isinstance(binding, Binding):
                    found.update((key.strip(), binding.action) for key in binding.key.split(","))
    return found


def keys_table(screen: Screen[Any]) -> Table:
    """The enabled keys of the view: its own and the dashboard's (read-only hides some)."""
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
    table.add_column(style="bold", no_wrap=True)
    table.add_column()
    ours = _declared(screen, screen.app)
    seen: set[tuple[str, str]] = set()
    for key, active in screen.active_bindings.items():
        binding = active.binding
        if (key, binding.action) not in ours or not binding.description or not active.enabled:
            continue
        label = key_label(binding.key_display or key)
        if (label, binding.description) in seen or binding.action.startswith("view("):
            continue
        seen.add((label, binding.description))
        table.add_row(label, binding.description)
    if screen.query(KeyedTable):  # a list: rows to move over, filter and open
        table.add_row("↑ ↓ j k PgUp PgDn", "Move")
        table.add_row("g, G", "First row, last row")
        table.add_row("/ … !word", "Filter; ! in front of a word or column:value inverts it")
        table.add_row("/ … ~re", "A regular expression: ~^fra-0[1-3]$, or in a column: name:~^gpu")
        table.add_row("Enter", "Open the row (drill down)")
    elif screen.query("Input, Select, OnOff"):  # a form: fields to move between
        table.add_row("Tab, Shift+Tab", "Next field, previous field")
        table.add_row("Enter", "Run the form")
    table.add_row("Ctrl+P", "Command palette: every view and action")
    table.add_row("Ctrl+C", "Quit (asks first when a view has unsaved edits)")
    return table


def views_table(views: tuple[ViewSpec, ...]) -> Table:
    table = Table(box=None, show_header=False, padding=(0, 2, 0, 0))
    table.add_column(style="bold", no_wrap=True)
    table.add_column(no_wrap=True)
    table.add_column()
    for view in views:
        table.add_row(view.key, f":{view.name}", view.title)
    return table


class HelpScreen(ModalScreen[None]):
    """A panel over the view; any of Esc, q or ? closes it."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,question_mark", "dismiss(None)", "Close"),
    ]

    def __init__(self, title: str, about: str, keys: Table, views: Table) -> None:
        super().__init__()
        self.title_text, self.about, self.keys, self.views = title, about, keys, views

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text(f"{self.title_text}: keys", style="bold"))
            if self.about:
                yield Static(self.about, classes="about")
            yield Static(self.keys)
            yield Static(Text("Views", style="bold"), classes="heading")
            yield Static(self.views)
            yield Static(Text("Esc, q or ? closes this panel.", style="dim"), classes="heading")

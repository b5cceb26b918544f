"""The list views' common screen: a KeyedTable with `/` filter, sort keys, Enter to drill down,
and space to mark rows for the view's actions (screens/acting.py)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.widgets import Input

from bcfleet.tui.format import short_id
from bcfleet.tui.screens.acting import ActingView
from bcfleet.tui.widgets.keyed_table import Column, KeyedTable, Row
from bcfleet.tui.widgets.prompt import Prompt

EDITABLE = frozenset({"tenant", "providerAccount", "pool", "host", "flavor", "quota"})
"""Kinds a FleetConfig declares: `e` edits their YAML (tui/editing.py)."""
NEWABLE = frozenset(
    {"flavor", "pool", "quota", "tenant", "service", "webhook", "token", "instance", "reservation"}
)
"""Kinds `n` makes from a template: FleetConfig's (tui/editing.py), the API's (tui/creating.py)."""


class TableView(ActingView):
    """A view whose body is one keyed table; subclasses give COLUMNS, `fetch` and `rows`."""

    COLUMNS: ClassVar[Sequence[Column]] = ()
    NOUN: ClassVar[tuple[str, str]] = ("row", "rows")

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("slash", "filter", "Filter"),
        Binding("s", "sort_next", "Sort"),
        Binding("S", "sort_reverse", "Reverse", show=False),
        Binding("space", "mark", "Mark or unmark the row (for bulk actions)", show=False),
        Binding("ctrl+a", "mark_all", "Mark every row shown (again: unmark)", show=False),
        Binding("d", "describe", "Describe", show=False),
        Binding("e", "edit_yaml", "Edit the row's FleetConfig YAML in $EDITOR", show=False),
        Binding("E", "edit_yaml", "The same (where e does something else: quotas)", show=False),
        Binding("n", "create_yaml", "New: a template in $EDITOR, or a form", show=False),
    ]
    KIND: ClassVar[str | None] = None
    """What the view's objects are called (declare.py's kinds: pool, flavor, …; instance, …)."""

    def __init__(self) -> None:
        super().__init__()
        self._arriving_filter: str | None = None
        """A filter given before the table was mounted (a drill-down into a view not shown yet)."""

    def compose_body(self) -> ComposeResult:
        yield KeyedTable(self.COLUMNS, id="table")

    def on_mount(self) -> None:  # after ViewScreen.on_mount (Textual calls each class's)
        if self._arriving_filter is not None:
            self.restore_filter(self._arriving_filter)

    def filter_now(self) -> str:
        if self._arriving_filter is not None or not self.is_mounted:
            return self._arriving_filter or ""
        return self.table.filter_text

    def restore_filter(self, text: str) -> None:
        if not self.query(KeyedTable):
            self._arriving_filter = text
            return
        self._arriving_filter = None
        if self.table.filter_text != text:
            self.table.set_filter(text)
            self.update_status()

    def id_to_copy(self) -> str | None:
        """The cursor row's object id (its key where the row has no id: a quota, a job)."""
        key = self.table.cursor_key if self.query(KeyedTable) else None
        if key is None:
            return None
        item = self.item(key)
        found = item.get("id") if isinstance(item, Mapping) else None
        return str(found or key)

    @property
    def table(self) -> KeyedTable:
        return self.query_one(KeyedTable)

    def rows(self, _data: Any) -> Iterable[Row]:
        """The table's rows for fetched data (self.now is the fleet's time of the fetch)."""
        return ()

    def show(self, data: Any) -> None:
        self.table.set_rows(self.rows(data))

    def open_row(self, key: str) -> None:
        """Enter on a row: drill down (each view says into what)."""

    def target_keys(self) -> list[str]:
        """What is visible: the marked rows the filter shows, else the row under the cursor."""
        table = self.table
        shown = table.marked_shown()
        if shown:
            return shown
        return [table.cursor_key] if table.cursor_key is not None else []

    def hidden_marks(self) -> int:
        table = self.table
        return len(table.marked) - len(table.marked_shown())

    def clear_marks(self, keys: list[str]) -> None:
        self.table.unmark(keys)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in ("mark", "mark_all"):  # marks are for actions, and read-only has none
            return bool(self.ACTIONS) and not self.fleet_app.read_only
        if action == "edit_yaml":  # tui/editing.py (says so where a FleetConfig declares none)
            return not self.fleet_app.read_only
        if action == "create_yaml":  # tui/editing.py, tui/creating.py
            return not self.fleet_app.read_only and self.new_kind in NEWABLE
        return super().check_action(action, parameters)

    def action_mark(self) -> None:
        table = self.table
        key = table.cursor_key
        if key is not None:
            table.toggle_mark(key)
            table.action_cursor_down()

    def action_mark_all(self) -> None:
        self.table.mark_shown()

    def describe_row(self, key: str) -> None:
        """d on a row (Enter too in views without a drill-down of their own): describe it."""
        from bcfleet.tui.screens.describe import DescribeScreen

        item = self.item(key)
        noun = self.NOUN[0].capitalize()
        self.app.push_screen(
            DescribeScreen(
                noun, [self.TITLE, self.row_name(key)], lambda: self.describe_doc(key, item or {})
            )
        )

    def row_name(self, key: str) -> str:
        """What the describe screen's crumbs call a row: its object's name, else its short id."""
        item = self.item(key)
        name = str(item.get("name") or "") if item else ""
        return name or short_id(key)

    def item(self, key: str) -> Mapping[str, Any] | None:
        """The fetched object a row shows (the item whose `id` is the row's key)."""
        data = self.data if isinstance(self.data, list) else []
        return next((i for i in data if isinstance(i, Mapping) and i.get("id") == key), None)

    def describe_doc(self, key: str, item: Mapping[str, Any]) -> Mapping[str, Any]:
        """What describe shows of a row; runs in the describe screen's worker."""
        from bcfleet.tui.screens.describe import describe_object

        return describe_object(self.source, self.KIND, item or {"id": key})

    def action_describe(self) -> None:
        key = self.table.cursor_key
        if key is not None:
            self.describe_row(key)

    def action_edit_yaml(self) -> None:
        from bcfleet.tui.editing import edit_row

        key = self.table.cursor_key
        edit_row(self, self.KIND or self.NOUN[0], self.item(key) if key is not None else None)

    def action_create_yaml(self) -> None:
        from bcfleet.tui.editing import create

        key = self.table.cursor_key
        create(self, self.new_kind, self.item(key) if key is not None else None)

    @property
    def new_kind(self) -> str:
        """What `n` makes here: the view's KIND, else its noun (instance, reservation)."""
        return self.KIND or self.NOUN[0]

    def on_keyed_table_selected(self, event: KeyedTable.Selected) -> None:
        event.stop()
        self.open_row(event.key)

    def on_keyed_table_changed(self, _event: KeyedTable.Changed) -> None:
        self.update_status()

    def summary(self) -> Text:
        tables = self.query(KeyedTable)
        if not tables:
            return Text("")
        table = tables.first()
        if self.freshness.unavailable:
            return Text("")
        one, many = self.NOUN
        total, shown = len(table.all_rows), table.shown_count
        noun = one if total == 1 else many
        text = Text(f"{total} {noun}" if shown == total else f"{shown} of {total} {noun}")
        if table.filter_text:
            text.append(" · filter ")
            text.append(table.filter_text, style="bold")
        if table.filter_error:
            text.append(f" · {table.filter_error}", style="bold")
        if table.marked:
            hidden = self.hidden_marks()
            text.append(f" · {len(table.marked)} marked", style="bold")
            if hidden:
                text.append(f" ({hidden} hidden by the filter)", style="bold")
        for name in table.unknown_columns:
            text.append(f" · no column {name!r}", style="bold")
        if table.sort_index is not None:
            column = self.COLUMNS[table.sort_index].label
            text.append(f" · sort {column} {'▼' if table.sort_reverse else '▲'}")
        return text

    def focus_body(self) -> None:
        table = self.table
        if table.display:
            self.set_focus(table)

    def commands(self) -> Iterable[SystemCommand]:
        yield from super().commands()
        yield SystemCommand("Filter", "Filter the rows of this view (/)", self.action_filter)
        key = self.table.cursor_key if self.query(KeyedTable) else None
        if key is not None:
            yield SystemCommand("Open the selected row", "Enter", lambda: self.open_row(key))
        if self.KIND in EDITABLE and not self.fleet_app.read_only:
            yield SystemCommand(
                "Edit the row's FleetConfig YAML", "In $EDITOR, then plan and apply (e)",
                self.action_edit_yaml,
            )  # fmt: skip
        if self.new_kind in NEWABLE and not self.fleet_app.read_only:
            yield SystemCommand(
                f"New {self.NOUN[0]} from a FleetConfig template",
                "In $EDITOR, then confirm (n)",
                self.action_create_yaml,
            )
        for index, column in enumerate(self.COLUMNS):
            yield SystemCommand(
                f"Sort by {column.label}",
                f"Order {self.TITLE} by {column.label}; again to reverse",
                lambda i=index: self.table.sort_by(i),
            )

    # -- keys -------------------------------------------------------------------------------------

    def action_filter(self) -> None:
        self.query_one(Prompt).open("filter", self.table.filter_text)

    def action_sort_next(self) -> None:
        self.table.sort_next()

    def action_sort_reverse(self) -> None:
        table = self.table
        table.sort_by(table.sort_index, reverse=not table.sort_reverse)

    def action_back(self) -> None:
        """Esc: clear the filter, then the marks, then go back."""
        if self.table.filter_text:
            self.table.set_filter("")
            self.update_status()
            return
        if self.table.marked:
            self.table.clear_marks()
            return
        super().action_back()

    def on_input_changed(self, event: Input.Changed) -> None:
        if isinstance(event.input, Prompt) and event.input.mode == "filter":
            event.stop()
            self.table.set_filter(event.value)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if isinstance(event.input, Prompt) and event.input.mode == "filter":
            event.stop()
            event.input.close()
            self.table.set_filter(event.value)
            self.focus_body()
            self._say_unknown_columns()

    def _say_unknown_columns(self) -> None:
        if self.table.filter_error:
            self.notify(
                f"{self.table.filter_error}. Write ~regex (e.g. ~^fra-0[1-3]$) or "
                "column:~regex; the other words still filter.",
                title="Filter",
                severity="warning",
            )
        unknown = self.table.unknown_columns
        if unknown:
            names = ", ".join(c.key for c in self.COLUMNS)
            self.notify(
                f"No column {unknown[0]!r} in {self.TITLE}. Columns: {names}. "
                "Without a column name a word matches anywhere; ! in front inverts it.",
                title="Filter",
                severity="warning",
            )

    def on_prompt_cancelled(self, event: Prompt.Cancelled) -> None:
        # The base screen's handler runs after this one and closes the prompt.
        if event.mode == "filter":
            self.table.set_filter("")

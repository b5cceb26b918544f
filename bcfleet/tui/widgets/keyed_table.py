"""A DataTable of keyed rows updated in place, with a text filter and a sort by any column.

Views hand it every row they have (`set_rows`); it shows the ones the filter
keeps, in the chosen order, touching only the cells that changed, so the
cursor stays on the same row (by key) and the scroll where it was, as
Dolphie's process list does. The filter is words, all of which must match
somewhere in the row; `column:word` matches one column (`pool:fra`,
`state:draining`), `~regex` is a regular expression (`~^fra-0[1-3]$`,
`name:~^gpu`), and a leading `!` inverts a term (`!state:ready`). Columns fit
the table's width (widgets/fit.py): less important ones give way and come back
when there is room again. Marked rows (space, for bulk actions) show MARK
before their first cell.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Self, cast

from rich.cells import cell_len
from rich.style import Style
from rich.text import Text
from textual import events
from textual._two_way_dict import TwoWayDict
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.message import Message
from textual.widgets import DataTable
from textual.widgets._data_table import Column as TableColumn
from textual.widgets._data_table import Row as TableRow
from textual.widgets.data_table import CellDoesNotExist, ColumnKey, RowKey

from bcfleet.domain.bounds import printable
from bcfleet.tui.widgets.fit import Fit, fit_columns

Cell = Text | str
REBUILD_ABOVE = 64
"""Removing more rows than this rebuilds the table (remove_row is linear in the row count)."""
CELL_CACHE = 4096
"""Drawn cells remembered across updates: a screenful of rows, with and without the cursor."""


@dataclass(frozen=True)
class Column:
    """A column: `give_way` > 0 lets it be hidden on a narrow screen (the highest rank first);
    `crop_to` lets long free text be cropped to that width before anything is hidden."""

    key: str
    label: str
    width: int | None = None
    give_way: int = 0
    crop_to: int | None = None


@dataclass
class _FitColumn(TableColumn):
    """DataTable's column, drawn hidden (no width at all) or cropped when the table is narrow."""

    hidden: bool = False
    cropped: int | None = None

    def get_render_width(self, data_table: DataTable[Any]) -> int:
        if self.hidden:
            return 0
        if self.cropped is not None:
            return 2 * data_table.cell_padding + self.cropped
        return super().get_render_width(data_table)

    def natural(self) -> int:
        return max(
            self.content_width if self.auto_width else self.width, cell_len(self.label.plain)
        )


def _printable_cell(cell: Cell) -> Cell:
    """The cell with control and format characters written as escapes (bounds.printable)."""
    if isinstance(cell, Text):
        if cell.plain.isprintable():
            return cell
        return Text(printable(cell.plain), style=cell.style)
    return printable(cell)


@dataclass(frozen=True)
class Row:
    """One row: what it shows, one sort value per column, and the text the filter searches."""

    key: str
    cells: tuple[Cell, ...]
    sort: tuple[Any, ...] = ()
    search: tuple[str, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        # A name holding a newline or a bidi override must not draw a row of its own.
        if not all((c.plain if isinstance(c, Text) else c).isprintable() for c in self.cells):
            object.__setattr__(self, "cells", tuple(_printable_cell(c) for c in self.cells))

    def sort_value(self, index: int) -> Any:
        if index < len(self.sort):
            return self.sort[index]
        cell = self.cells[index]
        return cell.plain if isinstance(cell, Text) else cell

    def searchable(self) -> tuple[str, ...]:
        if self.search:
            return self.search
        texts = tuple((c.plain if isinstance(c, Text) else c).lower() for c in self.cells)
        object.__setattr__(self, "search", texts)
        return texts


MARK = "✓ "
"""Drawn before the first cell of a marked row."""
REGEX = "~"
"""A filter term starting with this (after any `!` and `column:`) is a regular expression."""

Term = tuple[int | None, str | re.Pattern[str], bool]
"""(column index or None for anywhere, the word or regex, whether it is inverted with a leading !)."""


class FilterError(ValueError):
    """A filter term that cannot be read (a bad regular expression); the message says why."""


def _regex(source: str) -> re.Pattern[str]:
    try:
        return re.compile(source, re.IGNORECASE)
    except re.error as exc:
        raise FilterError(f"bad regex {source!r}: {exc.msg}") from None


def parse_filter(text: str, columns: Sequence[Column]) -> list[Term]:
    """'pool:fra !ready ~^fra-0[1-3]$' → [(index of pool, 'fra', False), (None, 'ready', True),
    (None, re.compile('^fra-0[1-3]$'), False)]; unknown columns match anywhere (a time like
    10:02 is a word). A bad regular expression raises FilterError."""
    names = {c.key.lower(): i for i, c in enumerate(columns)}
    names.update({c.label.lower(): i for i, c in enumerate(columns)})
    terms: list[Term] = []
    for given in text.split():  # a regex keeps its case (\S is not \s)
        negated = given.startswith("!")
        given = given.lstrip("!")
        if given in ("", REGEX):  # a lone ! or ~ (a term still being typed) is no term
            continue
        name, sep, value = given.partition(":")
        index = names.get(name.lower()) if sep else None
        if index is not None and value.startswith(REGEX):
            terms.append((index, _regex(value[1:]), negated))
        elif given.startswith(REGEX) and len(given) > 1:
            terms.append((None, _regex(given[1:]), negated))
        elif index is not None:
            terms.append((index, value.lower(), negated))
        else:
            terms.append((None, given.lower(), negated))
    return terms


def _found(word: str | re.Pattern[str], text: str) -> bool:
    return word in text if isinstance(word, str) else word.search(text) is not None


def matches(row: Row, terms: Sequence[Term]) -> bool:
    texts = row.searchable()
    for index, word, negated in terms:
        looked_in = texts if index is None else (texts[index],)
        found = any(_found(word, t) for t in looked_in)
        if found == negated:
            return False
    return True


def unknown_columns(text: str, columns: Sequence[Column], rows: Iterable[Row]) -> list[str]:
    """The `name:` of each `name:value` term that names no column and matches no row as a word."""
    names = {c.key.lower() for c in columns} | {c.label.lower() for c in columns}
    suspects = []
    for word in text.lower().split():
        name, sep, _value = word.lstrip("!").partition(":")
        if sep and name.isalpha() and name not in names:
            suspects.append((name, word.lstrip("!")))
    if not suspects:
        return []
    rows = list(rows)
    return [
        name
        for name, word in suspects
        if not any(any(word in t for t in row.searchable()) for row in rows)
    ]


def _sort_key(value: Any) -> tuple[int, Any]:
    """Numbers before text, None last, so a mixed column still sorts."""
    if value is None:
        return (2, 0)
    if isinstance(value, int | float):
        return (0, value)
    return (1, str(value).lower())


class SteadyTable(DataTable[Cell]):
    """A DataTable that redraws once it has measured rows added since the last frame."""

    def fill(self, rows: Iterable[Sequence[Cell]], keys: Sequence[str] | None = None) -> None:
        """Replace every row, each with its key when keys are given."""
        self.clear()
        for index, row in enumerate(rows):
            self.add_row(*row, key=keys[index] if keys is not None else None)

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        # DataTable measures new rows when idle; lines drawn before that keep the old
        # column widths in its caches, so a table filled once (and not touched again)
        # could stay truncated. Drop the caches whenever the widths moved.
        before = [c.content_width for c in self.columns.values()]
        super()._update_dimensions(new_rows)
        if [c.content_width for c in self.columns.values()] != before:
            self._clear_caches()
            self.refresh()


class KeyedTable(SteadyTable):
    """The table of every list view; j/k/g/G move as in vi and less, beside the arrows."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_top", "First row", show=False),
        Binding("G", "scroll_bottom", "Last row", show=False),
    ]

    class Changed(Message):
        """The shown rows, filter or sort changed (the status line counts them)."""

        def __init__(self, table: KeyedTable) -> None:
            super().__init__()
            self.table = table

    def __init__(self, columns: Sequence[Column], **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self.spec = tuple(columns)
        self.all_rows: dict[str, Row] = {}
        self.filter_text = ""
        self.unknown_columns: list[str] = []
        """Columns the filter names (`name:value`) that this table does not have."""
        self.filter_error: str | None = None
        """Why the filter cannot be read (a bad regex), or None."""
        self.marked: dict[str, None] = {}
        """The keys of the marked rows, in the order they were marked."""
        self.sort_index: int | None = None
        self.sort_reverse = False
        self._shown: list[str] = []
        self._drawn: dict[str, Row] = {}
        """The rows the DataTable holds, as of the last sync: the same Row object again is
        known to be drawn already, so a refresh of 5,000 unchanged rows compares none."""
        self._widened = False
        self._cells: LRUCache[tuple[Any, ...], tuple[Cell, Any]] = LRUCache(CELL_CACHE)

    def on_mount(self) -> None:
        for column in self.spec:
            self.add_column(column.label, width=column.width, key=column.key)
            key = ColumnKey(column.key)
            old = self.columns[key]
            self.columns[key] = _FitColumn(
                key, old.label, old.width, old.content_width, old.auto_width
            )

    # -- fitting the width -------------------------------------------------------------------

    def _fit_columns(self) -> list[_FitColumn]:
        return [cast(_FitColumn, self.columns[ColumnKey(c.key)]) for c in self.spec]

    @property
    def hidden_columns(self) -> list[str]:
        """The keys of the columns hidden to fit the width."""
        if len(self.columns) != len(self.spec):
            return []
        return [c.key.value or "" for c in self._fit_columns() if c.hidden]

    def fit(self) -> None:
        """Hide or crop columns so that the ones that matter fit the table's width."""
        if not self.is_mounted or len(self.columns) != len(self.spec) or not self.size.width:
            return
        columns = self._fit_columns()
        rules = [
            Fit(column.natural(), spec.give_way, spec.crop_to)
            for column, spec in zip(columns, self.spec, strict=True)
        ]
        # Fitted exactly, no horizontal scrollbar takes a row; the vertical one takes a column.
        scrolls = self.virtual_size.height > self.size.height
        available = self.size.width - (self.styles.scrollbar_size_vertical if scrolls else 0)
        widths = fit_columns(rules, available, self.cell_padding)
        changed = False
        for column, rule, width in zip(columns, rules, widths, strict=True):
            hidden = width is None
            cropped = None if width is None or width >= rule.natural else width
            if (column.hidden, column.cropped) != (hidden, cropped):
                column.hidden, column.cropped = hidden, cropped
                changed = True
        if changed:
            self._clear_caches()
            self._require_update_dimensions = True
            self.refresh()
            self.check_idle()

    def remeasure(self) -> None:
        """Measure the columns again from the rows shown (they may have become narrower)."""
        if len(self.columns) != len(self.spec):
            return
        widths = [cell_len(c.label.plain) for c in self.ordered_columns]
        for key in self._shown:
            for i, cell in enumerate(self.shown_cells(self.all_rows[key])):
                width = cell.cell_len if isinstance(cell, Text) else cell_len(cell)
                if width > widths[i]:
                    widths[i] = width
        for column, width in zip(self.ordered_columns, widths, strict=True):
            column.content_width = width
        self._clear_caches()
        self._require_update_dimensions = True
        self.refresh()
        self.check_idle()

    def _on_resize(self, event: events.Resize) -> None:
        super()._on_resize(event)
        self.fit()

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        super()._update_dimensions(new_rows)
        self.fit()

    # -- what the view calls ------------------------------------------------------------------

    def set_rows(self, rows: Iterable[Row]) -> None:
        """Replace the data: rows are matched by key and only changed cells are redrawn."""
        self.all_rows = {row.key: row for row in rows}
        if self.marked:  # a row that is gone is no longer marked
            self.marked = {k: None for k in self.marked if k in self.all_rows}
        self._sync()

    def patch(self, rows: Iterable[Row]) -> None:
        """Replace some rows (by key), leaving the others as they are."""
        changed = False
        for row in rows:
            if row.key in self.all_rows and self.all_rows[row.key] != row:
                self.all_rows[row.key] = row
                changed = True
        if changed:
            self._sync()

    # -- marks ------------------------------------------------------------------------------------

    def toggle_mark(self, key: str) -> bool:
        """Mark a row, or unmark a marked one; whether it is marked now."""
        if key in self.marked:
            del self.marked[key]
        elif key in self.all_rows:
            self.marked[key] = None
        self._redraw_mark(key)
        self.post_message(self.Changed(self))
        return key in self.marked

    def mark_shown(self) -> None:
        """Mark every row the filter shows; when all of them are marked already, clear the marks."""
        if self._shown and all(k in self.marked for k in self._shown):
            self.clear_marks()
            return
        for key in self._shown:
            if key not in self.marked:
                self.marked[key] = None
                self._redraw_mark(key)
        self.post_message(self.Changed(self))

    def clear_marks(self) -> None:
        keys, self.marked = list(self.marked), {}
        for key in keys:
            self._redraw_mark(key)
        self.post_message(self.Changed(self))

    def shown_cells(self, row: Row) -> tuple[Cell, ...]:
        """The row's cells as drawn: a marked row's first cell starts with MARK."""
        if row.key not in self.marked or not row.cells:
            return row.cells
        first = row.cells[0]
        marked = Text.assemble((MARK, "bold"), first) if isinstance(first, Text) else MARK + first
        return (marked, *row.cells[1:])

    def _redraw_mark(self, key: str) -> None:
        row = self.all_rows.get(key)
        if row is None or not self.spec or RowKey(key) not in self.rows:
            return
        cell = self.shown_cells(row)[0]
        self.update_cell(key, self.spec[0].key, cell)
        self._widen(self.spec[0].key, cell)

    def set_filter(self, text: str) -> None:
        if text != self.filter_text:
            self.filter_text = text
            self._sync()

    def sort_by(self, index: int | None, reverse: bool | None = None) -> None:
        """Sort by a column (None: the order the view gave); same column again flips the order."""
        if reverse is None:
            reverse = not self.sort_reverse if index == self.sort_index else False
        self.sort_index, self.sort_reverse = index, reverse
        self._relabel()
        self._sync()

    def sort_next(self) -> None:
        """Sort by the next column to the right (wrapping back to the view's own order)."""
        nxt = 0 if self.sort_index is None else self.sort_index + 1
        self.sort_by(nxt if nxt < len(self.spec) else None, reverse=False)

    @property
    def cursor_key(self) -> str | None:
        if not self.row_count:
            return None
        try:
            key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key
        except CellDoesNotExist:
            return None
        return key.value

    def move_to_key(self, key: str) -> bool:
        try:
            index = self.get_row_index(key)
        except Exception:  # noqa: BLE001 - RowDoesNotExist and friends
            return False
        self.move_cursor(row=index, scroll=True)
        return True

    @property
    def shown_count(self) -> int:
        return len(self._shown)

    # -- keeping the DataTable in step -----------------------------------------------------------

    def _visible(self) -> list[str]:
        try:
            terms = parse_filter(self.filter_text, self.spec)
            self.filter_error = None
        except FilterError as exc:  # said in the status line; the rows stay as they were
            self.filter_error = str(exc)
            terms = []
        rows = [r for r in self.all_rows.values() if not terms or matches(r, terms)]
        self.unknown_columns = (
            unknown_columns(self.filter_text, self.spec, self.all_rows.values()) if not rows else []
        )
        if self.sort_index is not None:
            index = self.sort_index
            rows.sort(key=lambda r: _sort_key(r.sort_value(index)), reverse=self.sort_reverse)
        return [r.key for r in rows]

    def _sync(self) -> None:
        if not self.is_mounted or len(self.columns) != len(self.spec):
            return
        wanted = self._visible()
        updates = self._update_count
        cursor = self.cursor_key
        wanted_set = set(wanted)
        gone = [k for k in self._shown if k not in wanted_set]
        if len(gone) > REBUILD_ABOVE:
            self._rebuild(wanted)
        else:
            for key in gone:
                self.remove_row(key)
            added = self._update_and_add(wanted)
            # With no row added or removed the table is still in the order last shown.
            order = self._ordered_keys() if gone or added else self._shown
            if list(order) != wanted:
                self._reorder(wanted)
        self._shown = wanted
        everything = len(wanted) == len(self.all_rows)
        self._drawn = dict(self.all_rows) if everything else {k: self.all_rows[k] for k in wanted}
        if self._update_count != updates:
            # DataTable's render caches are keyed by the update count: what they hold now is
            # never read again, only kept (thousands of segments) until the LRU pushes it out.
            self._clear_caches()
        if cursor is not None and cursor in wanted_set:
            index = self.get_row_index(cursor)
            if index != self.cursor_row:
                self.move_cursor(row=index, scroll=False)
        self.post_message(self.Changed(self))

    def _ordered_keys(self) -> Iterable[str]:
        return (str(row.key.value) for row in self.ordered_rows)

    def _update_and_add(self, wanted: Sequence[str]) -> int:
        """Update the rows that changed, append the new ones; returns how many were new."""
        keys = [c.key for c in self.spec]
        new = []
        drawn = self._drawn
        for key in wanted:
            row = self.all_rows[key]
            if drawn.get(key) is row:
                continue
            if RowKey(key) not in self.rows:
                new.append(key)
                continue
            old = self.get_row(key)
            for column, before, after in zip(keys, old, self.shown_cells(row), strict=False):
                if before != after:
                    self.update_cell(key, column, after)
                    self._widen(column, after)
        self._append(new)
        if self._widened:
            self._widened = False
            self._clear_caches()
            self._require_update_dimensions = True
            self.check_idle()
        return len(new)

    def _widen(self, column_key: str, cell: Cell) -> None:
        """Columns grow to fit a wider cell and never shrink on updates.

        DataTable's update_width re-measures the whole column whenever a cell gets
        narrower, once per updated cell: for 5,000 rows that took seconds.
        """
        width = cell.cell_len if isinstance(cell, Text) else cell_len(cell)
        column = self.columns[ColumnKey(column_key)]
        if width > column.content_width:
            column.content_width = width
            self._widened = True

    def _rebuild(self, wanted: Sequence[str]) -> None:
        self.clear()
        self._append(wanted)

    def _append(self, keys: Sequence[str]) -> None:
        """add_row for many rows at once: the same bookkeeping, without its per-row cursor work.

        DataTable.add_row re-sets the cursor and re-reads the column order for every row,
        and measures every cell with Rich when idle; 5,000 hosts made that most of the
        time of a first paint. Cells here are one-line text, measured by their length.
        """
        if not keys:
            return
        was_empty = not self.row_count
        columns = [column.key for column in self.ordered_columns]
        widths = [column.content_width for column in self.ordered_columns]
        index = len(self._row_locations)
        for key in keys:
            row_key = RowKey(key)
            cells = self.shown_cells(self.all_rows[key])
            self._row_locations[row_key] = index
            self._data[row_key] = dict(zip(columns, cells, strict=False))
            self.rows[row_key] = TableRow(row_key, 1)
            for i, cell in enumerate(cells):
                width = cell.cell_len if isinstance(cell, Text) else cell_len(cell)
                if width > widths[i]:
                    widths[i] = width
            index += 1
        for column, width in zip(self.ordered_columns, widths, strict=True):
            column.content_width = width
        self._clear_caches()
        self._require_update_dimensions = True
        self.cursor_coordinate = self.cursor_coordinate
        self._update_count += 1
        self.check_idle()
        if was_empty and self.show_cursor and self.cursor_type != "none":
            self._highlight_cursor()

    def _render_cell(
        self,
        row_index: int,
        column_index: int,
        base_style: Style,
        width: int,
        cursor: bool = False,
        hover: bool = False,
    ) -> Any:
        """DataTable's rendering of a cell, remembered by the cell's value.

        DataTable keys its own cell cache by the table's update count, so changing one cell
        drew every visible cell again (with Rich, about 0.1 ms a cell: a third of a refresh
        of 5,000 hosts). Views hand the same cell objects again for rows that did not change,
        so a cell whose value is the very object drawn last time, at the same place and in
        the same style, is the same drawing.
        """
        row_key = self._row_locations.get_key(row_index)
        column_key = self._column_locations.get_key(column_index)
        if width == 0:  # a column hidden to fit the width
            return [[] for _ in range(self.header_height if row_index < 0 else 1)]
        if row_key is None or column_key is None:  # the header and row labels: DataTable's own
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        value = self._data[row_key][column_key]
        key = (row_key, column_key, row_index, column_index, base_style, width, cursor, hover,
               self._show_hover_cursor, self._pseudo_class_state, self.show_cursor,
               self.cell_padding, self.fixed_rows, self.fixed_columns,
               self.cursor_foreground_priority, self.cursor_background_priority)  # fmt: skip
        drawn = self._cells.get(key)
        if drawn is not None and drawn[0] is value:
            return drawn[1]
        lines = super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        self._cells[key] = (value, lines)
        return lines

    def notify_style_update(self) -> None:
        """New CSS or theme: every cell is drawn anew (the key above does not hold the styles)."""
        super().notify_style_update()
        self._cells.clear()

    def clear(self, columns: bool = False) -> Self:
        self._cells.clear()
        return super().clear(columns)

    def _reorder(self, wanted: Sequence[str]) -> None:
        """Put the rows in the wanted order without re-adding them (DataTable.sort does the same)."""
        self._row_locations = TwoWayDict({RowKey(k): i for i, k in enumerate(wanted)})
        self._update_count += 1
        self.refresh()

    def _relabel(self) -> None:
        for index, column in enumerate(self.spec):
            label = column.label
            if index == self.sort_index:
                label += " ▼" if self.sort_reverse else " ▲"
            self.columns[ColumnKey(column.key)].label = Text(label)
        self._require_update_dimensions = True
        self.refresh()

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(event.column_index)

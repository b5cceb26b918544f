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
from typing import Any, ClassVar, cast

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.render import measure
from textual.strip import Strip
from textual.widgets import DataTable
from textual.widgets.data_table import CellDoesNotExist, ColumnKey
from textual.widgets.data_table import Column as TableColumn

from bcfleet.domain.bounds import printable
from bcfleet.tui.widgets.fit import Fit, fit_columns

Cell = Text | str
REBUILD_ABOVE = 64
"""Removing more rows than this rebuilds the table (remove_row is linear in the row count)."""
LINE_CACHE = 512
"""Drawn lines remembered across updates: a few screenfuls of rows."""


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
    """DataTable's column with the width the table gives it; a hidden one is drawn 0 cells wide."""

    hidden: bool = False

    def get_render_width(self, data_table: DataTable[Any]) -> int:
        return 0 if self.hidden else super().get_render_width(data_table)


class _Drawn:
    """A cell as the table hands it to DataTable: drawn as DataTable draws a str or Text.

    It has no Rich measure: the table sets every column's width itself, so DataTable's
    measuring of new rows finds nothing to read (with Rich, measuring 5,000 rows took
    longer than the rest of a first paint). It reads, compares and sorts as its text.
    """

    __slots__ = ("cell", "_text")

    def __init__(self, cell: Cell) -> None:
        self.cell = cell
        self._text: Text | None = None

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self._text is None:
            if isinstance(self.cell, Text):
                self._text = self.cell
            else:  # as DataTable reads a str: markup, one line
                self._text = Text.from_markup(self.cell, end="")
                self._text.no_wrap = True
        yield self._text

    def __str__(self) -> str:
        return self.cell.plain if isinstance(self.cell, Text) else self.cell

    def __repr__(self) -> str:
        return f"_Drawn({self.cell!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, _Drawn):
            return self.cell == other.cell
        if isinstance(other, str | Text):
            return self.cell == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(str(self))

    def __lt__(self, other: object) -> bool:
        return str(self) < str(other)

    def __contains__(self, text: str) -> bool:
        return text in str(self)


def _cell_width(cell: Cell) -> int:
    """Cells here are one line of printable text: their width is their length in cells,
    which for ASCII (most cells) is their length."""
    text = cell.plain if isinstance(cell, Text) else cell
    return len(text) if text.isascii() else cell_len(text)


def _widest(rows: Sequence[Sequence[Cell]], columns: int) -> list[int]:
    """The widest cell of each column, a column at a time: when a column is all ASCII (one
    test of its joined text), its widest cell is its longest."""
    widths = []
    for index in range(columns):
        texts = [
            (c.plain if isinstance(c, Text) else c)
            for c in (cells[index] for cells in rows if index < len(cells))
        ]
        if "".join(texts).isascii():
            widths.append(max(map(len, texts), default=0))
        else:
            widths.append(max(map(cell_len, texts), default=0))
    return widths


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
    joined: str = field(default="", compare=False, repr=False)
    """The search texts joined by newlines, made on the first search: a word (no whitespace)
    is in one of the texts exactly when it is in this one string."""

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
        if not self.search:
            texts = tuple(self.searched().split("\n")) if self.cells else ()
            object.__setattr__(self, "search", texts)
        return self.search

    def searched(self) -> str:
        """The search texts as one string (see `joined`), lowered once for the whole row."""
        if not self.joined:
            texts = self.search or [c.plain if isinstance(c, Text) else c for c in self.cells]
            joined = "\n".join(texts)
            object.__setattr__(self, "joined", joined if self.search else joined.lower())
        return self.joined


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
    for index, word, negated in terms:
        if index is not None:
            found = _found(word, row.searchable()[index])
        elif isinstance(word, str):  # words hold no whitespace, so no match spans two texts
            found = word in row.searched()
        else:  # a regex may anchor (^, $) to each text's ends
            found = any(word.search(t) is not None for t in row.searchable())
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


def _as_text(cell: object) -> Text | None:
    """A cell as DataTable draws it, for measuring: a str is read as markup."""
    if cell is None or isinstance(cell, Text):
        return cell
    if isinstance(cell, str):
        return Text.from_markup(cell)
    return Text(f"{cell:.2f}" if isinstance(cell, float) else str(cell))


class SteadyTable(DataTable[Cell | _Drawn]):
    """A DataTable filled all at once, its columns as wide as their widest cell from the start."""

    def fill(self, rows: Iterable[Sequence[Cell]], keys: Sequence[str] | None = None) -> None:
        """Replace every row, each with its key when keys are given.

        The widths are set before the first line is drawn: DataTable measures new rows
        only when idle, and lines drawn before that would keep the narrower widths.
        """
        self.clear()
        columns = list(self.ordered_columns)
        widths = [c.content_width for c in columns]
        for index, row in enumerate(rows):
            self.add_row(*row, key=keys[index] if keys is not None else None)
            for i, cell in enumerate(row[: len(columns)]):
                text = _as_text(cell)
                if text is not None:
                    widths[i] = max(widths[i], measure(self.app.console, text, 1))
        for column, width in zip(columns, widths, strict=True):
            if column.auto_width:
                column.content_width = width


class KeyedTable(SteadyTable):
    """The table of every list view; j/k/g/G move as in vi and less, beside the arrows.

    Every column has a width the table computes itself (DataTable measures no cell), rows
    are added, updated, removed and ordered by key through DataTable's public methods.
    """

    _column_order: list[_FitColumn] = []  # noqa: RUF012 - replaced, never changed in place
    """The columns once mounted, in the spec's order (DataTable asks for them in __init__)."""

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
        self._cells: dict[str, tuple[_Drawn, ...]] = {}
        """The cells handed to the DataTable for each row key, as it holds them."""
        self._natural = [cell_len(c.label) for c in self.spec]
        """Each column's widest cell (or its label); it grows as cells do."""
        self._drawn_lines: LRUCache[tuple[Any, ...], tuple[tuple[_Drawn, ...] | None, Strip]]
        self._drawn_lines = LRUCache(LINE_CACHE)
        self._layout_changes = 0
        """Counts the changes of column widths, labels and hidden columns."""
        self._pseudo_classes: Any = None

    def on_mount(self) -> None:
        for column in self.spec:
            self.add_column(column.label, width=column.width or cell_len(column.label),
                            key=column.key)  # fmt: skip
            key = ColumnKey(column.key)
            old = self.columns[key]
            self.columns[key] = _FitColumn(key, old.label, old.width, old.content_width)
        self._column_order = self._fit_columns()

    @property
    def ordered_columns(self) -> list[TableColumn]:
        """The columns in the order of the spec (they never move): DataTable asks for them a
        few times for every row it adds, and would look each one up again every time."""
        if len(self._column_order) == len(self.columns):
            return list(self._column_order)
        return super().ordered_columns

    # -- fitting the width -------------------------------------------------------------------

    def _fit_columns(self) -> list[_FitColumn]:
        return [cast(_FitColumn, self.columns[ColumnKey(c.key)]) for c in self.spec]

    def _ready(self) -> bool:
        return self.is_mounted and len(self.columns) == len(self.spec)

    @property
    def hidden_columns(self) -> list[str]:
        """The keys of the columns hidden to fit the width."""
        if not self._ready():
            return []
        return [c.key.value or "" for c in self._fit_columns() if c.hidden]

    def fit(self, force: bool = False) -> None:
        """Hide or crop columns so that the ones that matter fit the table's width."""
        if not self._ready():
            return
        columns = self._fit_columns()
        rules = [
            Fit(max(spec.width or natural, cell_len(label)), spec.give_way, spec.crop_to)
            for natural, spec, label in zip(self._natural, self.spec, self._labels(), strict=True)
        ]
        if self.size.width:
            # Fitted exactly, no horizontal scrollbar takes a row; the vertical one a column.
            scrolls = self.row_count + self._header_lines() > self.size.height
            available = self.size.width - (self.styles.scrollbar_size_vertical if scrolls else 0)
            widths = fit_columns(rules, available, self.cell_padding)
        else:
            widths = [rule.natural for rule in rules]
        changed = force
        for column, width in zip(columns, widths, strict=True):
            hidden = width is None
            drawn = column.width if width is None else width
            if (column.hidden, column.width) != (hidden, drawn):
                column.hidden, column.width = hidden, drawn
                changed = True
        if changed:
            self._redraw_all()

    def _header_lines(self) -> int:
        return self.header_height if self.show_header else 0

    def _redraw_all(self) -> None:
        """Draw every line anew with the columns' new widths and labels.

        DataTable keeps its drawn lines until its rows or styles change; telling it that
        its styles changed is its public way to let go of them.
        """
        width = sum(c.get_render_width(self) for c in self.columns.values())
        self.virtual_size = Size(width, self.row_count + self._header_lines())
        self._layout_changes += 1
        self.notify_style_update()

    def remeasure(self) -> None:
        """Measure the columns again from the rows shown (they may have become narrower)."""
        if not self._ready():
            return
        widths = [cell_len(label) for label in self._labels()]
        for key in self._shown:
            for i, cell in enumerate(self._cells[key]):
                widths[i] = max(widths[i], _cell_width(cell.cell))
        self._natural = widths
        self.fit(force=True)

    def on_resize(self, _event: events.Resize) -> None:
        self.fit()

    def render_lines(self, crop: Region) -> list[Strip]:
        self._pseudo_classes = self.get_pseudo_class_state()
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        """A row's line as drawn last time when nothing it shows has changed, else DataTable's.

        DataTable lets go of every drawn line when any cell changes, so a refresh that
        changed one row would draw every visible row again with Rich. The line of a row is
        kept with the cells it showed (the very objects: a changed cell is a new object),
        its place, whether the cursor is on it, the widths and the widget's styles.
        """
        row_index = y - self._header_lines() + self.scroll_offset.y
        if y < self._header_lines() or not 0 <= row_index < len(self._shown):
            return super().render_line(y)
        if self.mouse_hover and row_index == self.hover_row:  # the hover highlight is DataTable's
            return super().render_line(y)
        key = self._shown[row_index]
        cells = self._cells.get(key)
        line_key = (key, row_index, row_index == self.cursor_row, self.show_cursor,
                    self.cursor_type, self.size.width, self.scroll_offset.x, self._layout_changes,
                    self._pseudo_classes, self.rich_style, self.cell_padding)  # fmt: skip
        known = self._drawn_lines.get(line_key)
        if known is not None and known[0] is cells:
            return known[1]
        strip = super().render_line(y)
        self._drawn_lines[line_key] = (cells, strip)
        return strip

    def notify_style_update(self) -> None:
        """New CSS or theme: every line is drawn anew (the keys above do not hold the styles)."""
        super().notify_style_update()
        self._drawn_lines.clear()

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
        self._redraw_marks([key])
        self.post_message(self.Changed(self))
        return key in self.marked

    def mark_shown(self) -> None:
        """Mark every row the filter shows; when all of them are marked already, clear the marks."""
        if self._shown and all(k in self.marked for k in self._shown):
            self.clear_marks()
            return
        newly = [key for key in self._shown if key not in self.marked]
        self.marked.update(dict.fromkeys(newly))
        self._redraw_marks(newly)
        self.post_message(self.Changed(self))

    def clear_marks(self) -> None:
        keys, self.marked = list(self.marked), {}
        self._redraw_marks(keys)
        self.post_message(self.Changed(self))

    def shown_cells(self, row: Row) -> tuple[Cell, ...]:
        """The row's cells as drawn: a marked row's first cell starts with MARK."""
        if row.key not in self.marked or not row.cells:
            return row.cells
        first = row.cells[0]
        marked = Text.assemble((MARK, "bold"), first) if isinstance(first, Text) else MARK + first
        return (marked, *row.cells[1:])

    def _redraw_marks(self, keys: Iterable[str]) -> None:
        if not self.spec:
            return
        column = self.spec[0].key
        for key in keys:
            row = self.all_rows.get(key)
            if row is None or key not in self._cells:
                continue
            first = self.shown_cells(row)[0]
            drawn = _Drawn(first)
            self.update_cell(key, column, drawn)
            self._cells[key] = (drawn, *self._cells[key][1:])
            self._widen(0, first)
        self._refit_if_widened()

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
        if not self._ready():
            return
        wanted = self._visible()
        cursor = self.cursor_key
        wanted_set = set(wanted)
        gone = [k for k in self._shown if k not in wanted_set]
        with self.app.batch_update():
            if len(gone) > REBUILD_ABOVE:
                self._rebuild(wanted)
            else:
                for key in gone:
                    self.remove_row(key)
                    del self._cells[key]
                added = self._update_and_add(wanted)
                # With no row added or removed the table is still in the order last shown.
                order = self._ordered_keys() if gone or added else self._shown
                if list(order) != wanted:
                    self._reorder(wanted)
            self._shown = wanted
            everything = len(wanted) == len(self.all_rows)
            self._drawn = (
                dict(self.all_rows) if everything else {k: self.all_rows[k] for k in wanted}
            )
            self._refit_if_widened()
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
            old = self._cells.get(key)
            if old is None:
                new.append(key)
                continue
            held = list(old)  # the objects DataTable holds: _reorder knows rows by them
            for index, (column, after) in enumerate(zip(keys, self.shown_cells(row), strict=False)):
                if held[index].cell != after:
                    held[index] = _Drawn(after)
                    self.update_cell(key, column, held[index])
                    self._widen(index, after)
            self._cells[key] = tuple(held)
        self._append(new)
        return len(new)

    def _widen(self, index: int, cell: Cell) -> None:
        """Columns grow to fit a wider cell and never shrink on updates (remeasure shrinks them)."""
        width = _cell_width(cell)
        if width > self._natural[index]:
            self._natural[index] = width
            self._widened = True

    _widened = False

    def _refit_if_widened(self) -> None:
        if self._widened:
            self._widened = False
            self.fit(force=True)

    def _rebuild(self, wanted: Sequence[str]) -> None:
        self.clear()
        self._cells.clear()
        self._append(wanted)

    def _append(self, keys: Sequence[str]) -> None:
        """Add the rows at the bottom; their cells widen the columns that are too narrow."""
        rows = [self.shown_cells(self.all_rows[key]) for key in keys]
        for key, cells in zip(keys, rows, strict=True):
            drawn = tuple(map(_Drawn, cells))
            self._cells[key] = drawn
            self.add_row(*drawn, key=key)
        for index, widest in enumerate(_widest(rows, len(self.spec))):
            if widest > self._natural[index]:
                self._natural[index] = widest
                self._widened = True

    def _reorder(self, wanted: Sequence[str]) -> None:
        """Put the rows in the wanted order with DataTable.sort, without re-adding them.

        DataTable sorts by cell values; each row's first cell is an object of its own
        (a _Drawn made for that row), so its identity names the row.
        """
        position = {id(self._cells[key][0]): index for index, key in enumerate(wanted)}
        self.sort(self.spec[0].key, key=lambda first: position[id(first)])

    def _labels(self) -> list[str]:
        labels = []
        for index, column in enumerate(self.spec):
            label = column.label
            if index == self.sort_index:
                label += " ▼" if self.sort_reverse else " ▲"
            labels.append(label)
        return labels

    def _relabel(self) -> None:
        if not self._ready():
            return
        for column, label in zip(self._fit_columns(), self._labels(), strict=True):
            column.label = Text(label)
        self.fit(force=True)

    def on_data_table_header_selected(self, event: DataTable.HeaderSelected) -> None:
        event.stop()
        self.sort_by(event.column_index)

"""The list views' table: rows kept by key, drawn a visible line at a time, filtered and sorted.

Views hand it every row they have (`set_rows`); it shows the ones the filter
keeps (table_rows.py), in the chosen order, so the cursor stays on the same row (by
key) and the scroll where it was, as Dolphie's process list does. Columns fit the
table's width (widgets/fit.py): less important ones give way and come back when there
is room again. Marked rows (space, for bulk actions) show MARK before their first cell.

It is a `ScrollView` on Textual's line API: `render_line(y)` draws only the rows on
screen, each as Textual's DataTable draws a row (table_look.py), and keeps every drawn
line with the cells it showed, so a refresh draws again only the rows that changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, ClassVar, cast

from rich.cells import cell_len
from rich.console import RenderableType
from rich.padding import Padding
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding, BindingType
from textual.cache import LRUCache
from textual.geometry import Region, Size, Spacing
from textual.message import Message
from textual.reactive import Reactive
from textual.renderables.styled import Styled
from textual.scroll_view import ScrollView
from textual.strip import Strip

from bcfleet.tui.widgets.fit import Fit, fit_columns
from bcfleet.tui.widgets.table_look import (
    TABLE_COMPONENTS,
    beyond_meta,
    cell_meta,
    default_css,
)
from bcfleet.tui.widgets.table_rows import (
    MARK,
    NAME_CROP,
    Cell,
    Column,
    FilterError,
    Row,
    cell_width,
    matches,
    parse_filter,
    sort_key,
    unknown_columns,
    widest,
)

__all__ = [
    "MARK",
    "NAME_CROP",
    "Cell",
    "Column",
    "FilterError",
    "KeyedTable",
    "Row",
    "ShownCell",
    "matches",
    "parse_filter",
    "unknown_columns",
]

LINE_CACHE = 512
"""Drawn lines remembered across updates: a few screenfuls of rows."""
CELL_CACHE = 4096
"""Drawn cells remembered across updates: a few screenfuls of rows of a dozen columns."""
HEADER = -1
"""The row index of the header line, as DataTable numbers it (in the cells' meta too)."""
_EMPTY = Text(no_wrap=True, end="")


class ShownColumn:
    """A column as the table shows it: its key, its label (with the sort arrow), its content
    width, and whether it is hidden to fit the width (then it is drawn 0 cells wide)."""

    __slots__ = ("hidden", "key", "label", "width")

    def __init__(self, key: str, label: Text, width: int) -> None:
        self.key = key
        self.label = label
        self.width = width
        self.hidden = False

    def render_width(self, padding: int) -> int:
        return 0 if self.hidden else self.width + 2 * padding


class ShownCell:
    """A cell as `get_row_at` hands it out: it reads, compares and sorts as its text."""

    __slots__ = ("cell",)

    def __init__(self, cell: Cell) -> None:
        self.cell = cell

    def __str__(self) -> str:
        return self.cell.plain if isinstance(self.cell, Text) else self.cell

    def __repr__(self) -> str:
        return f"ShownCell({self.cell!r})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, ShownCell):
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


def _same(before: Cell, after: Cell) -> bool:
    """Whether a cell shows the same as before (a Text's equality leaves out its style)."""
    if before is after:
        return True
    if type(before) is not type(after) or before != after:
        return False
    return not isinstance(before, Text) or before.style == cast(Text, after).style


def _renderable(cell: Cell) -> RenderableType:
    """A cell as DataTable draws it: a str is markup on one line."""
    if isinstance(cell, Text):
        return cell
    text = Text.from_markup(cell, end="")
    text.no_wrap = True
    return text


class KeyedTable(ScrollView, can_focus=True):
    """The table of every list view; j/k/g/G move as in vi and less, beside the arrows."""

    ALLOW_SELECT = False
    COMPONENT_CLASSES: ClassVar[set[str]] = TABLE_COMPONENTS
    DEFAULT_CSS = default_css("KeyedTable")
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "select_cursor", "Select", show=False),
        Binding("up", "cursor_up", "Cursor up", show=False),
        Binding("down", "cursor_down", "Cursor down", show=False),
        Binding("right", "scroll_right", "Scroll right", show=False),
        Binding("left", "scroll_left", "Scroll left", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("ctrl+home", "scroll_top", "Top", show=False),
        Binding("ctrl+end", "scroll_bottom", "Bottom", show=False),
        Binding("home", "scroll_home", "Home", show=False),
        Binding("end", "scroll_end", "End", show=False),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_top", "First row", show=False),
        Binding("G", "scroll_bottom", "Last row", show=False),
    ]

    cursor_row: Reactive[int] = Reactive(0, repaint=False, always_update=True)
    """The index of the shown row the cursor is on."""
    cell_padding = 1
    """Cells between a column's text and its neighbours', on each side."""
    show_cursor = True
    """The cursor is always drawn (DataTable's switch, read where its styles are composed)."""

    class Changed(Message):
        """The shown rows, filter or sort changed (the status line counts them)."""

        def __init__(self, table: KeyedTable) -> None:
            super().__init__()
            self.table = table

        @property
        def control(self) -> KeyedTable:
            return self.table

    class Selected(Message):
        """Enter (or a click on the cursor's row) on a row: the view opens it."""

        def __init__(self, table: KeyedTable, key: str) -> None:
            super().__init__()
            self.table = table
            self.key = key

        @property
        def control(self) -> KeyedTable:
            return self.table

    def __init__(self, columns: Sequence[Column], **kwargs: Any) -> None:
        super().__init__(**kwargs)
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
        """The keys of the rows shown, in their order."""
        self._places: dict[str, int] | None = None
        """Each shown key's index, made when first asked after a change of the shown rows."""
        self._drawn: dict[str, Row] = {}
        """The rows as of the last sync: the same Row object again is known to show the same
        cells, so a refresh of 5,000 unchanged rows compares none."""
        self._cells: dict[str, tuple[Cell, ...]] = {}
        """The cells each shown row draws (a marked row's first one with MARK): a changed row
        gets a new tuple, which tells its drawn line apart from the one kept."""
        self._natural = [cell_len(c.label) for c in self.spec]
        """Each column's widest cell (or its label); it grows as cells do."""
        self.ordered_columns = [
            ShownColumn(c.key, Text(c.label), c.width or cell_len(c.label)) for c in self.spec
        ]
        """The columns in the spec's order (they never move)."""
        self.columns = {c.key: c for c in self.ordered_columns}
        self._lines: LRUCache[tuple[Any, ...], tuple[object, Strip]] = LRUCache(LINE_CACHE)
        self._drawn_cells: LRUCache[tuple[Any, ...], tuple[object, list[Segment]]]
        self._drawn_cells = LRUCache(CELL_CACHE)
        """Each drawn cell with the cell object it showed: a row whose widths or one cell
        changed draws with Rich only the cells that did."""
        self._layout_changes = 0
        """Counts the changes of column widths, labels and hidden columns."""
        self._pseudo_classes: Any = None
        self._cell_styles: dict[tuple[Any, ...], tuple[Style, Style]] = {}
        self.hover_row = 0
        """The row under the mouse (HEADER: the header), when `_show_hover` is set."""
        self._show_hover = False
        self._widened = False

    def on_mount(self) -> None:
        self.fit(force=True)

    # -- DataTable's reading interface -------------------------------------------------------------

    @property
    def row_count(self) -> int:
        return len(self._shown)

    @property
    def shown_count(self) -> int:
        return len(self._shown)

    def get_row_index(self, key: str) -> int:
        """The index of the shown row with this key; KeyError when it is not shown."""
        if self._places is None:
            self._places = {k: i for i, k in enumerate(self._shown)}
        return self._places[key]

    def get_row_at(self, index: int) -> list[ShownCell]:
        """The cells of the index-th shown row, as drawn."""
        return [ShownCell(c) for c in self._cells[self._shown[index]]]

    def get_row(self, key: str) -> list[ShownCell]:
        """The cells of the shown row with this key, as drawn."""
        return [ShownCell(c) for c in self._cells[key]]

    @property
    def cursor_key(self) -> str | None:
        if 0 <= self.cursor_row < len(self._shown):
            return self._shown[self.cursor_row]
        return None

    def move_to_key(self, key: str) -> bool:
        try:
            index = self.get_row_index(key)
        except KeyError:
            return False
        self.move_cursor(row=index, scroll=True)
        return True

    def move_cursor(self, *, row: int | None = None, animate: bool = False,
                    scroll: bool = True) -> None:  # fmt: skip
        """Put the cursor on a row (the scroll follows it)."""
        if scroll:
            self._scroll_to_cursor(row, animate)
        if row is not None:
            self.cursor_row = row

    # -- the cursor and the scroll ---------------------------------------------------------------

    def validate_cursor_row(self, row: int) -> int:
        return max(0, min(row, len(self._shown) - 1))

    def watch_cursor_row(self, old: int, new: int) -> None:
        if old != new:
            self._refresh_row(old)
            self._refresh_row(new)
            self._scroll_to_cursor()

    def _refresh_row(self, index: int) -> None:
        """Draw the row at index (HEADER: the header) again, when it is on screen."""
        header = self._header_lines()
        y = 0 if index == HEADER else index + header - int(self.scroll_y)
        if (index == HEADER or y >= header) and y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _scroll_to_cursor(self, row: int | None = None, animate: bool = False) -> None:
        """Scroll so that the cursor's row (or `row`) is in view below the header."""
        index = self.cursor_row if row is None else self.validate_cursor_row(row)
        top = self._header_lines()
        width = max(self.size.width, self._table_width())
        region = Region(int(self.scroll_x), index + top, width, 1)
        self.scroll_to_region(region, animate=animate, spacing=Spacing(top, 0, 0, 0), force=True)

    def _set_hover(self, shown: bool) -> None:
        self._show_hover = shown
        self._refresh_row(self.hover_row)

    def action_cursor_up(self) -> None:
        self._set_hover(False)
        self.cursor_row -= 1

    def action_cursor_down(self) -> None:
        self._set_hover(False)
        self.cursor_row += 1

    def action_scroll_top(self) -> None:
        self._set_hover(False)
        self.cursor_row = 0

    def action_scroll_bottom(self) -> None:
        self._set_hover(False)
        self.cursor_row = len(self._shown) - 1

    def action_scroll_home(self) -> None:
        self._set_hover(False)
        self.scroll_x = 0

    def action_scroll_end(self) -> None:
        self._set_hover(False)
        self.scroll_x = self.max_scroll_x

    def action_page_down(self) -> None:
        """The cursor a page further down, the rows scrolled by a page (as DataTable does)."""
        self._set_hover(False)
        height = self.scrollable_content_region.height - self._header_lines()
        rows = min(height + 1, len(self._shown) - self.cursor_row)
        self.scroll_relative(y=height, animate=False, force=True)
        self.move_cursor(row=self.cursor_row + rows - 1, scroll=False)

    def action_page_up(self) -> None:
        self._set_hover(False)
        height = self.scrollable_content_region.height - self._header_lines()
        rows = min(height + 1, self.cursor_row + 1)
        self.scroll_relative(y=-height, animate=False)
        self.move_cursor(row=self.cursor_row - rows + 1, scroll=False)

    def action_select_cursor(self) -> None:
        self._set_hover(False)
        key = self.cursor_key
        if key is not None:
            self.post_message(self.Selected(self, key))

    def on_mouse_move(self, event: events.MouseMove) -> None:
        meta = event.style.meta
        if "row" not in meta:
            self._set_hover(False)
            return
        self._refresh_row(self.hover_row)
        self.hover_row = meta["row"]
        self._set_hover(True)

    def on_leave(self, _event: events.Leave) -> None:
        self._set_hover(False)

    def on_click(self, event: events.Click) -> None:
        """A click on a header sorts by its column; on a row puts the cursor there, and on the
        cursor's row selects it."""
        self._set_hover(True)
        meta = event.style.meta
        if "row" not in meta or "column" not in meta:
            return
        row, column = meta["row"], meta["column"]
        event.stop()
        if row == HEADER:
            if not meta.get("out_of_bounds", False):
                self.sort_by(column)
            return
        if row == self.cursor_row:
            self.action_select_cursor()
        self.cursor_row = row
        self._scroll_to_cursor(animate=True)

    # -- fitting the width -------------------------------------------------------------------

    @property
    def hidden_columns(self) -> list[str]:
        """The keys of the columns hidden to fit the width."""
        return [c.key for c in self.ordered_columns if c.hidden]

    def fit(self, force: bool = False) -> None:
        """Hide or crop columns so that the ones that matter fit the table's width."""
        if not self.is_mounted:
            return
        rules = [
            Fit(
                max(spec.width or natural, cell_len(label)),
                spec.give_way,
                spec.crop_to,
                NAME_CROP if spec.name else None,
            )
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
        for column, width in zip(self.ordered_columns, widths, strict=True):
            hidden = width is None
            drawn = column.width if width is None else width
            if (column.hidden, column.width) != (hidden, drawn):
                column.hidden, column.width = hidden, drawn
                changed = True
        if changed:
            self._layout_changes += 1
            self._lines.clear()
            self.refresh()
        self._size_to_rows()

    def _size_to_rows(self) -> None:
        self.virtual_size = Size(self._table_width(), len(self._shown) + self._header_lines())

    def _table_width(self) -> int:
        return sum(c.render_width(self.cell_padding) for c in self.ordered_columns)

    def _header_lines(self) -> int:
        return 1

    def remeasure(self) -> None:
        """Measure the columns again from the rows shown (they may have become narrower)."""
        widths = [cell_len(label) for label in self._labels()]
        for key in self._shown:
            for i, cell in enumerate(self._cells[key]):
                widths[i] = max(widths[i], cell_width(cell))
        self._natural = widths
        self.fit(force=True)

    def on_resize(self, _event: events.Resize) -> None:
        self.fit()

    # -- drawing --------------------------------------------------------------------------------

    def render_lines(self, crop: Region) -> list[Strip]:
        self._pseudo_classes = self.get_pseudo_class_state()
        return super().render_lines(crop)

    def render_line(self, y: int) -> Strip:
        """The line at y on screen: the header, a row, or blank below the last row.

        A row's line is drawn once and kept with the cells it showed (a changed row has a new
        tuple of cells), its place, whether the cursor or the mouse is on it, the widths and
        the widget's styles.
        """
        header = self._header_lines()
        index = HEADER if y < header else y - header + int(self.scroll_y)
        if index >= len(self._shown):
            return Strip.blank(self.size.width, self.rich_style)
        key = None if index == HEADER else self._shown[index]
        cells: object = self.ordered_columns if key is None else self._cells[key]
        line_key = (index, key, index == self.cursor_row, self._hovered(index), self.size.width,
                    int(self.scroll_x), self._layout_changes, self._pseudo_classes,
                    self.rich_style)  # fmt: skip
        known = self._lines.get(line_key)
        if known is not None and known[0] is cells:
            return known[1]
        strip = self.render_row(index)
        self._lines[line_key] = (cells, strip)
        return strip

    def _hovered(self, index: int) -> bool:
        return self._show_hover and self.show_cursor and index == self.hover_row

    def render_row(self, index: int) -> Strip:
        """Draw the shown row at index (HEADER: the header) as DataTable draws it, cropped to
        the scrolled window and padded to the width."""
        base = self.rich_style
        header = index == HEADER
        row_style = self.get_component_styles("datatable--header").rich_style if header else base
        cursor = index == self.cursor_row
        hovered = self._hovered(index)
        component, post = self._styles(header, hovered, cursor, css_priority=True)
        cells: Sequence[Cell] = (
            [c.label for c in self.ordered_columns] if header else self._cells[self._shown[index]]
        )
        padding = self.cell_padding
        state = (index, hovered, cursor, self._pseudo_classes, base)
        segments: list[Segment] = []
        for number, column in enumerate(self.ordered_columns):
            width = column.render_width(padding)
            cell = cells[number] if number < len(cells) else None
            cell_key = (number, width, *state)
            known = self._drawn_cells.get(cell_key)
            if known is not None and known[0] is cell:
                segments.extend(known[1])
                continue
            drawn = self.app.console.render_lines(
                Styled(
                    Padding(_EMPTY if cell is None else _renderable(cell), (0, padding)),
                    pre_style=row_style + cell_meta(index, number) + component,
                    post_style=post,
                ),
                self.app.console_options.update_dimensions(width, 1).update(
                    no_wrap=True, overflow="ellipsis"
                ),
            )[0]
            self._drawn_cells[cell_key] = (cell, drawn)
            segments.extend(drawn)
        width = self.size.width
        extend, _ = self._styles(header, hovered, cursor, css_priority=False)
        blank = max(0, width - self._table_width())
        segments.append(Segment(" " * blank, row_style + extend + beyond_meta(index)))
        scroll_x = int(self.scroll_x)
        return Strip(segments).crop(scroll_x).adjust_cell_length(width, base).simplify()

    def _styles(self, header: bool, hovered: bool, cursor: bool,
                css_priority: bool) -> tuple[Style, Style]:  # fmt: skip
        """The cursor's and the mouse's styles over a cell, and the colours put back over the
        cell's own (the CSS has priority), as DataTable composes them."""
        key = (header, hovered, cursor, css_priority, self._pseudo_classes)
        known = self._cell_styles.get(key)
        if known is not None:
            return known
        component = self.get_component_rich_style
        style = Style()
        if hovered:
            style += component("datatable--hover")
            if header:
                style += component("datatable--header-hover")
        if cursor and self.show_cursor:
            style += component("datatable--cursor")
            if header:
                style += component("datatable--header-cursor")
        post = Style.null()
        if css_priority:
            post = Style.from_color(color=style.color) + Style.from_color(bgcolor=style.bgcolor)
        self._cell_styles[key] = (style, post)
        return style, post

    def notify_style_update(self) -> None:
        """New CSS or theme: every line is drawn anew (the keys above do not hold the styles)."""
        super().notify_style_update()
        self._lines.clear()
        self._drawn_cells.clear()
        self._cell_styles.clear()
        self.refresh()

    # -- what the view calls ------------------------------------------------------------------

    def set_rows(self, rows: Iterable[Row]) -> None:
        """Replace the data: rows are matched by key and only changed rows are drawn again."""
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

    def unmark(self, keys: list[str]) -> None:
        """Unmark these rows (an action took them); other marks stay."""
        gone = [key for key in keys if key in self.marked]
        for key in gone:
            del self.marked[key]
        self._redraw_marks(gone)
        self.post_message(self.Changed(self))

    def marked_shown(self) -> list[str]:
        """The marked rows the filter shows, in the order they were marked."""
        if self._places is None:
            self._places = {k: i for i, k in enumerate(self._shown)}
        places = self._places
        return [key for key in self.marked if key in places]

    def shown_cells(self, row: Row) -> tuple[Cell, ...]:
        """The row's cells as drawn: a marked row's first cell starts with MARK."""
        if row.key not in self.marked or not row.cells:
            return row.cells
        first = row.cells[0]
        marked = Text.assemble((MARK, "bold"), first) if isinstance(first, Text) else MARK + first
        return (marked, *row.cells[1:])

    def _redraw_marks(self, keys: Iterable[str]) -> None:
        for key in keys:
            row = self.all_rows.get(key)
            if row is None or key not in self._cells:
                continue
            cells = self.shown_cells(row)
            self._cells[key] = (*cells[:1], *self._cells[key][1:])
            if cells:
                self._widen(0, cells[0])
        self._refit_if_widened()
        self.refresh()

    def set_filter(self, text: str) -> None:
        if text != self.filter_text:
            self.filter_text = text
            self._sync()

    def sort_by(self, index: int | None, reverse: bool | None = None) -> None:
        """Sort by a column (None: the order the view gave); same column again flips the order."""
        if reverse is None:
            reverse = not self.sort_reverse if index == self.sort_index else False
        self.sort_index, self.sort_reverse = index, reverse
        for column, label in zip(self.ordered_columns, self._labels(), strict=True):
            column.label = Text(label)
        self.fit(force=True)
        self._sync()

    def sort_next(self) -> None:
        """Sort by the next column to the right (wrapping back to the view's own order)."""
        nxt = 0 if self.sort_index is None else self.sort_index + 1
        self.sort_by(nxt if nxt < len(self.spec) else None, reverse=False)

    def _labels(self) -> list[str]:
        labels = []
        for index, column in enumerate(self.spec):
            label = column.label
            if index == self.sort_index:
                label += " ▼" if self.sort_reverse else " ▲"
            labels.append(label)
        return labels

    # -- keeping the shown rows in step -----------------------------------------------------------

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
            rows.sort(key=lambda r: sort_key(r.sort_value(index)), reverse=self.sort_reverse)
        return [r.key for r in rows]

    def _sync(self) -> None:
        wanted = self._visible()
        cursor = self.cursor_key
        changed = self._update_cells(wanted)
        moved = wanted != self._shown
        if moved:
            self._shown = wanted
            self._places = None
        everything = len(wanted) == len(self.all_rows)
        self._drawn = dict(self.all_rows) if everything else {k: self.all_rows[k] for k in wanted}
        if self.is_mounted:
            self.fit(force=self._widened)  # a change of widths draws every line again
            self._widened = False
            if moved:
                self.refresh()
            else:
                for key in changed:
                    self._refresh_row(self.get_row_index(key))
            if cursor is not None and cursor in self._cells:
                self.move_cursor(row=self.get_row_index(cursor), scroll=False)
            else:
                self.cursor_row = self.cursor_row  # kept in the rows that are left
        self.post_message(self.Changed(self))

    def _update_cells(self, wanted: Sequence[str]) -> list[str]:
        """The cells of every shown row: a changed row's new, a new row's measured (its cells
        widen the columns that are too narrow), a row no longer shown forgotten. Returns the
        keys of the rows shown before whose cells changed.

        A changed row keeps the cell objects that show the same as before: their drawings
        are known by those objects."""
        cells = self._cells
        drawn = self._drawn
        new = []
        changed = []
        for key in wanted:
            row = self.all_rows[key]
            if drawn.get(key) is row:
                continue
            old = cells.get(key)
            if old is None:
                new.append(key)
                continue
            after = self.shown_cells(row)
            if len(after) == len(old) and all(map(_same, old, after)):
                continue
            merged = list(after)
            for index, (before, cell) in enumerate(zip(old, after, strict=False)):
                if _same(before, cell):
                    merged[index] = before
                else:
                    self._widen(index, cell)
            cells[key] = tuple(merged)
            changed.append(key)
        if len(cells) > len(wanted) - len(new):
            kept = set(wanted)
            gone = [k for k in cells if k not in kept]
            widest_gone = widest([cells[k] for k in gone], len(self.spec))
            for key in gone:
                del cells[key]
            if any(w >= n for w, n in zip(widest_gone, self._natural, strict=False)):
                self._shrink()
        added = [self.shown_cells(self.all_rows[key]) for key in new]
        cells.update(zip(new, added, strict=True))
        for index, width in enumerate(widest(added, len(self.spec))):
            if width > self._natural[index]:
                self._natural[index] = width
                self._widened = True
        return changed

    def _shrink(self) -> None:
        """A row that held a column's widest cell left: measure the columns again from the rows
        still shown (and the labels), so the column gives its room back."""
        labels = [cell_len(label) for label in self._labels()]
        measured = widest(list(self._cells.values()), len(self.spec))
        widths = [max(pair) for pair in zip(labels, measured, strict=True)]
        if widths != self._natural:
            self._natural = widths
            self._widened = True

    def _widen(self, index: int, cell: Cell) -> None:
        """Columns grow to fit a wider cell and never shrink on updates (remeasure shrinks them)."""
        if index < len(self._natural):
            width = cell_width(cell)
            if width > self._natural[index]:
                self._natural[index] = width
                self._widened = True

    def _refit_if_widened(self) -> None:
        if self._widened:
            self._widened = False
            self.fit(force=True)

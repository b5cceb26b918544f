"""A DataTable filled all at once, for small tables (a host's NUMA nodes, GPUs and guests; credits)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.text import Text
from textual.render import measure
from textual.widgets import DataTable

from bcfleet.tui.widgets.table_rows import Cell


def _as_text(cell: object) -> Text | None:
    """A cell as DataTable draws it, for measuring: a str is read as markup."""
    if cell is None or isinstance(cell, Text):
        return cell
    if isinstance(cell, str):
        return Text.from_markup(cell)
    return Text(f"{cell:.2f}" if isinstance(cell, float) else str(cell))


class SteadyTable(DataTable[Cell]):
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

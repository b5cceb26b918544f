"""How Textual's DataTable looks, for a line-API table drawn the same: its CSS and component
classes (read from DataTable itself), cell styles and the crop of a line to the scrolled window."""

from __future__ import annotations

from rich.style import Style
from textual.widgets import DataTable

TABLE_COMPONENTS = set(DataTable.COMPONENT_CLASSES)
"""DataTable's component classes, so that the app's CSS for them applies here too."""


def default_css(selector: str) -> str:
    """DataTable's own default CSS, for the widgets that `selector` names: the table looks as
    Textual's DataTable does in whichever Textual is installed."""
    return DataTable.DEFAULT_CSS.replace("DataTable", selector)


def cell_meta(row: int, column: int) -> Style:
    """The meta a drawn cell carries: a click or the mouse over it says which cell it is."""
    return Style.from_meta({"row": row, "column": column})


def beyond_meta(row: int) -> Style:
    """The meta of the blank to the right of the last column (still the row, for a click)."""
    return Style.from_meta({"row": row, "column": 0, "out_of_bounds": True})

"""How Textual's DataTable looks, for a line-API table drawn the same: its CSS, component classes,
cell styles and the crop of a line to the scrolled window."""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style

TABLE_COMPONENTS = {
    "datatable--cursor",
    "datatable--hover",
    "datatable--fixed",
    "datatable--fixed-cursor",
    "datatable--header",
    "datatable--header-cursor",
    "datatable--header-hover",
    "datatable--odd-row",
    "datatable--even-row",
}
"""DataTable's component classes, so that the app's CSS for them applies here too."""


def default_css(selector: str) -> str:
    """DataTable's default CSS (Textual 8.2) for the widgets that `selector` names."""
    return (
        """
    SELECTOR {
        background: $surface;
        color: $foreground;
        height: auto;
        max-height: 100%;
        &.datatable--fixed-cursor {
            background: $block-cursor-blurred-background;
        }

        &:focus {
            background-tint: $foreground 5%;
            & > .datatable--cursor {
                background: $block-cursor-background;
                color: $block-cursor-foreground;
                text-style: $block-cursor-text-style;
            }

            & > .datatable--header {
                background-tint: $foreground 5%;
            }

            & > .datatable--fixed-cursor {
                color: $block-cursor-foreground;
                background: $block-cursor-background;
            }
        }

        &:dark {
            & > .datatable--even-row {
                background: $surface-darken-1 40%;
            }
        }

        & > .datatable--header {
            text-style: bold;
            background: $panel;
            color: $foreground;
        }
        &:ansi > .datatable--header {
            background: ansi_bright_blue;
            color: ansi_default;
        }

        & > .datatable--fixed {
            background: $secondary-muted;
            color: $foreground;
        }

        & > .datatable--odd-row {

        }

        & > .datatable--even-row {
            background: $surface-lighten-1 50%;
        }

        & > .datatable--cursor {
            background: $block-cursor-blurred-background;
            color: $block-cursor-blurred-foreground;
            text-style: $block-cursor-blurred-text-style;
        }

        & > .datatable--fixed-cursor {
            background: $block-cursor-blurred-background;
            color: $foreground;
        }

        & > .datatable--header-cursor {
            background: $accent-darken-1;
            color: $foreground;
        }

        & > .datatable--header-hover {
            background: $accent 30%;
        }

        & > .datatable--hover {
            background: $block-hover-background;
        }
    }
    """
    ).replace("SELECTOR", selector)


def cell_meta(row: int, column: int) -> Style:
    """The meta a drawn cell carries: a click or the mouse over it says which cell it is."""
    return Style.from_meta({"row": row, "column": column})


def beyond_meta(row: int) -> Style:
    """The meta of the blank to the right of the last column (still the row, for a click)."""
    return Style.from_meta({"row": row, "column": 0, "out_of_bounds": True})


def crop_line(segments: list[Segment], start: int, end: int, total: int) -> list[Segment]:
    """The cells from `start` to `end` (exclusive) of a line `total` cells long, as DataTable
    crops its lines: segments before `start` are dropped, even empty ones, and a line kept to
    its end keeps its segments as they are."""
    pos = 0
    output: list[Segment] = []
    remaining = iter(segments)
    segment: Segment | None = None
    for segment in remaining:
        end_pos = pos + cell_len(segment.text)
        if end_pos > start:
            segment = segment.split_cells(start - pos)[1]
            break
        pos = end_pos
    else:
        return []
    if end >= total:
        if segment:
            output.append(segment)
        output.extend(remaining)
        return output
    pos = start
    while segment is not None:
        end_pos = pos + cell_len(segment.text)
        if end_pos < end:
            output.append(segment)
        else:
            output.append(segment.split_cells(end - pos)[0])
            break
        pos = end_pos
        segment = next(remaining, None)
    return output

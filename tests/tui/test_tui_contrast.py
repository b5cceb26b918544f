"""Every text the dashboard draws meets WCAG AA (4.5:1) in every theme, and under NO_COLOR."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.filter import monochrome_style
from textual.theme import BUILTIN_THEMES
from textual.widgets import Input

from bcfleet.tui.contrast import MINIMUM, contrast_ratio, readable, readable_style
from tests.support.tui import local_app, settle

pytestmark = pytest.mark.anyio

NEAR_BLACK = Color(18, 18, 18)
VIEWS = ["hosts", "degraded", "reservations", "preview", "compute", "usage", "events", "jobs"]
THEMES = [name for name in BUILTIN_THEMES if not name.startswith("ansi-")]
"""The ansi-* themes leave colours to the terminal's own palette: nothing to measure."""


def test_the_ratio_is_wcags() -> None:
    assert contrast_ratio(Color(0, 0, 0), Color(255, 255, 255)) == pytest.approx(21.0)
    assert contrast_ratio(Color(119, 119, 119), Color(255, 255, 255)) == pytest.approx(4.48, 0.01)
    assert contrast_ratio(Color(90, 90, 90), Color(90, 90, 90)) == 1.0


def test_readable_keeps_good_colours_and_moves_poor_ones_just_enough() -> None:
    white, grey = Color(255, 255, 255), Color(60, 60, 60)
    assert readable(white, NEAR_BLACK) == white
    moved = readable(grey, NEAR_BLACK)
    assert contrast_ratio(moved, NEAR_BLACK) >= MINIMUM
    assert contrast_ratio(moved, NEAR_BLACK) < MINIMUM + 0.2  # no further than needed
    assert contrast_ratio(readable(Color(200, 200, 200), white), white) >= MINIMUM


def test_over_in_bold_red_under_no_color_is_readable() -> None:
    """Textual's own grey for red on near-black was about 1.3:1; ours is at least 4.5:1."""
    over = Style(color="#ff0000", bgcolor=NEAR_BLACK.rich_color, bold=True)
    theirs = monochrome_style(over)
    assert theirs.color is not None and theirs.bgcolor is not None
    before = contrast_ratio(Color.from_rich_color(theirs.color), NEAR_BLACK)
    assert before < 2.0
    ours = readable_style(over, NEAR_BLACK, True)
    assert ours.bold and ours.color is not None and ours.bgcolor is not None
    fg, bg = Color.from_rich_color(ours.color), Color.from_rich_color(ours.bgcolor)
    assert fg.r == fg.g == fg.b  # grey: no colour under NO_COLOR
    assert contrast_ratio(fg, bg) >= MINIMUM


def test_dim_text_is_drawn_dimmed_yet_readable() -> None:
    dim = Style(color="#888888", bgcolor=NEAR_BLACK.rich_color, dim=True)
    drawn = readable_style(dim, NEAR_BLACK, False)
    assert not drawn.dim and drawn.color is not None
    assert contrast_ratio(Color.from_rich_color(drawn.color), NEAR_BLACK) >= MINIMUM


def drawn(app: Any) -> list[Segment]:
    """Every segment on screen, as the terminal gets it (after the app's line filters)."""
    return [
        segment
        for line in app.screen._compositor.render_update(full=True).strips
        for strip in line
        for segment in strip
    ]


def poor_contrast(app: Any) -> list[tuple[str, float]]:
    """Every piece of text on screen whose contrast with its background is under 4.5:1."""
    found = []
    for text, style, control in drawn(app):
        if control or style is None or not text.strip():
            continue
        if style.color is None or style.bgcolor is None:
            continue  # the terminal's own colours
        if style.color.triplet is None or style.bgcolor.triplet is None:
            continue
        fg, bg = Color.from_rich_color(style.color), Color.from_rich_color(style.bgcolor)
        if style.reverse:
            fg, bg = bg, fg
        if style.dim:
            fg = bg.blend(fg, 0.66)
        ratio = contrast_ratio(fg, bg)
        if ratio < MINIMUM:
            found.append((text.strip(), round(ratio, 2)))
    return found


@pytest.mark.parametrize("view", VIEWS)
async def test_every_view_is_readable_in_the_default_theme(fleet_db: Path, view: str) -> None:
    app, _ = local_app(fleet_db, start=view)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert poor_contrast(app) == []


@pytest.mark.parametrize("theme", THEMES)
async def test_hosts_and_reservations_are_readable_in_every_theme(
    fleet_db: Path, theme: str
) -> None:
    app, _ = local_app(fleet_db, start="reservations")
    async with app.run_test(size=(120, 40)) as pilot:
        app.theme = theme
        await settle(pilot)
        assert poor_contrast(app) == []
        await pilot.press("1")
        await settle(pilot)
        assert poor_contrast(app) == []


async def test_under_no_color_everything_is_grey_and_readable(
    fleet_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app, _ = local_app(fleet_db, start="reservations")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        assert poor_contrast(app) == []
        for _text, style, _control in drawn(app):
            if style is not None and style.color is not None and style.color.triplet:
                red, green, blue = style.color.triplet
                assert red == green == blue


def test_no_color_snapshot_at_80x24(
    snap_compare: Any, fleet_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app, _ = local_app(fleet_db, start="hosts")
    assert snap_compare(app, terminal_size=(80, 24), run_before=settle)


async def test_the_focused_form_field_is_underlined_without_colour(
    fleet_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NO_COLOR: the field with the focus is drawn underlined, the others not."""
    monkeypatch.setenv("NO_COLOR", "1")
    app, _ = local_app(fleet_db, start="compute", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        fields = list(app.screen.query(Input))
        assert len(fields) >= 2
        fields[0].focus()
        await pilot.pause()
        assert fields[0].styles.text_style.underline
        assert not any(f.styles.text_style.underline for f in fields[1:])

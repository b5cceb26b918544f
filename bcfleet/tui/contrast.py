"""Text the dashboard draws stays readable: WCAG 2.x contrast of at least 4.5:1, with or without colour.

`contrast_ratio` is WCAG's formula (relative luminance of sRGB). `readable` moves a
foreground that is too close to its background towards white or black, just far
enough. `ReadableText` applies it to every segment drawn, in every theme, after
resolving `dim` and `reverse` into real colours (the terminal would otherwise dim
by its own rules); under NO_COLOR it first turns each colour into its grey, so a
red "over" on black becomes a light grey, not the 1.3:1 dark grey it was.
"""

from __future__ import annotations

from functools import lru_cache

from rich.segment import Segment
from rich.style import Style
from textual.color import Color
from textual.constants import DIM_FACTOR
from textual.filter import LineFilter

MINIMUM = 4.5
"""WCAG AA for text of normal size."""
WHITE, BLACK = Color(255, 255, 255), Color(0, 0, 0)


def _channel(value: int) -> float:
    c = value / 255
    return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4


def luminance(color: Color) -> float:
    """WCAG 2.x relative luminance of an sRGB colour (0 black … 1 white)."""
    return 0.2126 * _channel(color.r) + 0.7152 * _channel(color.g) + 0.0722 * _channel(color.b)


def contrast_ratio(a: Color, b: Color) -> float:
    """(lighter + 0.05) / (darker + 0.05): 1 for the same colour, 21 for black on white."""
    la, lb = luminance(a), luminance(b)
    return (max(la, lb) + 0.05) / (min(la, lb) + 0.05)


@lru_cache(maxsize=4096)
def readable(foreground: Color, background: Color, minimum: float = MINIMUM) -> Color:
    """The foreground, or the least change of it towards white or black that meets `minimum`."""
    if contrast_ratio(foreground, background) >= minimum:
        return foreground
    white, black = contrast_ratio(WHITE, background), contrast_ratio(BLACK, background)
    target = WHITE if white >= black else BLACK
    low, high = 0.0, 1.0
    for _ in range(12):
        middle = (low + high) / 2
        if contrast_ratio(foreground.blend(target, middle), background) >= minimum:
            high = middle
        else:
            low = middle
    return foreground.blend(target, high)


@lru_cache(maxsize=4096)
def readable_style(style: Style, background: Color, monochrome: bool) -> Style:
    """The style with dim and reverse drawn as colours and its text at least MINIMUM contrast."""
    if style.color is None and style.bgcolor is None:
        return style
    fg = Color.from_rich_color(style.color) if style.color is not None else None
    bg = Color.from_rich_color(style.bgcolor) if style.bgcolor is not None else background
    if style.reverse and fg is not None:
        fg, bg = bg, fg
    if fg is None:  # the terminal's own foreground
        return style + Style(bgcolor=bg.monochrome.rich_color) if monochrome else style
    if style.dim:
        fg = bg.blend(fg, DIM_FACTOR)
    if monochrome:
        fg, bg = fg.monochrome, bg.monochrome
    fg = readable(fg, bg)
    plain = Style(dim=False, reverse=False) if style.dim or style.reverse else Style()
    return style + plain + Style.from_color(fg.rich_color, bg.rich_color)


class ReadableText(LineFilter):
    """A line filter that keeps every segment's text readable on its background."""

    def __init__(self, *, monochrome: bool = False, enabled: bool = True) -> None:
        super().__init__(enabled)
        self.monochrome = monochrome

    def apply(self, segments: list[Segment], background: Color) -> list[Segment]:
        mono = self.monochrome
        return [
            Segment(text, readable_style(style, background, mono), control)
            if style is not None and not control
            else Segment(text, style, control)
            for text, style, control in segments
        ]

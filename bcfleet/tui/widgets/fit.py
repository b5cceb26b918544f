"""Which table columns fit a width, pure: less important ones give way, a long text one is cropped.

Each column has its natural width (the widest of its label and cells), a `give_way`
rank (0: always kept; otherwise the highest rank is hidden first) and, for a column of
long free text (a reason, an event's data), a `crop_to` width it may be cropped down to
before any column is hidden. A name column has a `name_to` width it is cropped down to
only when hiding every column that gives way is not enough: a long host name never hides
a host's state or numbers. The table shows what is left at those widths.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Fit:
    """One column's rules: its natural width, its give-way rank, the width it may crop to."""

    natural: int
    give_way: int = 0
    crop_to: int | None = None
    name_to: int | None = None

    @property
    def least(self) -> int:
        return self.natural if self.crop_to is None else min(self.natural, self.crop_to)

    @property
    def named_least(self) -> int:
        return self.least if self.name_to is None else min(self.least, self.name_to)


def fit_columns(columns: Sequence[Fit], available: int, padding: int) -> list[int | None]:
    """Each column's content width in `available` cells (None: hidden).

    Hides columns by give-way rank (highest first, the rightmost of a rank first) until the
    kept ones fit with cropped columns at their `crop_to`; when none is left to hide, names
    go down to their `name_to`. Then gives cropped columns the room that is left, up to
    their natural width, in order from the left.
    """
    kept = list(range(len(columns)))

    def total(least: list[int]) -> int:
        return sum(least[i] + 2 * padding for i in kept)

    least = [c.least for c in columns]
    while total(least) > available:
        ranked = [i for i in kept if columns[i].give_way > 0]
        if not ranked:
            least = [c.named_least for c in columns]
            break
        drop = max(ranked, key=lambda i: (columns[i].give_way, i))
        kept.remove(drop)
    widths: list[int | None] = [None] * len(columns)
    for i in kept:
        widths[i] = least[i]
    spare = available - total(least)
    for i in kept:
        column = columns[i]
        if spare <= 0:
            break
        grow = min(column.natural - least[i], spare)
        if grow > 0:
            widths[i] = least[i] + grow
            spare -= grow
    return widths

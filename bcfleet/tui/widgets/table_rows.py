"""The rows of a keyed table and its filter, pure: columns, rows kept by key, filter terms, sort keys.

The filter is words, all of which must match somewhere in the row; `column:word`
matches one column (`pool:fra`, `state:draining`), `~regex` is a regular expression
(`~^fra-0[1-3]$`, `name:~^gpu`), and a leading `!` inverts a term (`!state:ready`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.cells import cell_len
from rich.text import Text

from bcfleet.domain.bounds import printable

Cell = Text | str


NAME_CROP = 14
"""A name column (a host, a tenant, a pool) is cropped with … down to this many cells rather
than hide a column that may not give way; it has its whole width when there is room."""


@dataclass(frozen=True)
class Column:
    """A column: `give_way` > 0 lets it be hidden on a narrow screen (the highest rank first);
    `crop_to` lets long free text be cropped to that width before anything is hidden; a
    `name` is cropped to NAME_CROP only when the columns that give way are hidden already."""

    key: str
    label: str
    width: int | None = None
    give_way: int = 0
    crop_to: int | None = None
    name: bool = False


def cell_width(cell: Cell) -> int:
    """Cells here are one line of printable text: their width is their length in cells,
    which for ASCII (most cells) is their length."""
    text = cell.plain if isinstance(cell, Text) else cell
    return len(text) if text.isascii() else cell_len(text)


def widest(rows: Sequence[Sequence[Cell]], columns: int) -> list[int]:
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


def printable_cell(cell: Cell) -> Cell:
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
            object.__setattr__(self, "cells", tuple(printable_cell(c) for c in self.cells))

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


_DIGITS = re.compile(r"([0-9]+)")


def natural(text: str) -> tuple[tuple[int, int | str], ...]:
    """'ams-10' → its parts with runs of digits as numbers, so ams-9 < ams-10 < ams-99 < ams-100."""
    return tuple(
        (0, int(part)) if part.isascii() and part.isdigit() else (1, part.lower())
        for part in _DIGITS.split(text)
        if part
    )


def sort_key(value: Any) -> tuple[int, Any]:
    """Numbers before text, None last, so a mixed column still sorts; text sorts naturally."""
    if value is None:
        return (2, 0)
    if isinstance(value, int | float):
        return (0, value)
    return (1, natural(str(value)))

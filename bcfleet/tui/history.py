"""Where the console has been, as k9s keeps it: `[` goes back, `]` forward; pure, the app calls it.

A place is a view with the filter it had when it was left, and the host drilled into
over it, if any. Visiting a new place drops the places ahead of the current one, as a
browser does; walking back and forth moves through them and changes none but the
current place's filter, noted when it is left.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

KEPT = 100
"""Places remembered; the oldest go first."""

_SPECIAL = re.compile(r"([.^$*+?{}\[\]\\|()])")


@dataclass(frozen=True)
class Place:
    """A view, its filter, and the host (id, name) opened over it."""

    view: str
    filter: str = ""
    host: tuple[str, str] | None = None


def exactly(column: str, value: str) -> str:
    """The filter term that matches one column's whole text, no more: 'pool:~^vps-fra$'."""
    escaped = _SPECIAL.sub(r"\\\1", value)
    return f"{column}:~^{escaped}$"


def exact_value(value: str) -> str | None:
    """The text a term's value made by `exactly` matches whole ('~^vps-fra$' → 'vps-fra');
    None for any other value."""
    if not (value.startswith("~^") and value.endswith("$")):
        return None
    body = value[2:-1]
    plain = re.sub(r"\\(.)", r"\1", body)
    return plain if _SPECIAL.sub(r"\\\1", plain) == body else None


class History:
    """The places visited, and which of them the console shows now."""

    def __init__(self) -> None:
        self.places: list[Place] = []
        self.index = -1

    @property
    def current(self) -> Place | None:
        return self.places[self.index] if self.places else None

    def visit(self, place: Place) -> None:
        """A place reached by a key, a command or a drill-down: the places ahead are dropped."""
        if place == self.current:
            return
        del self.places[self.index + 1 :]
        self.places.append(place)
        if len(self.places) > KEPT:
            del self.places[0]
        self.index = len(self.places) - 1

    def note_filter(self, text: str) -> None:
        """The current place is being left with this filter: coming back restores it."""
        current = self.current
        if current is not None and current.filter != text:
            self.places[self.index] = replace(current, filter=text)

    def ahead(self, by: int) -> int | None:
        """The index of the place `by` steps back (-1) or forward (+1); None at either end."""
        target = self.index + by
        return target if self.places and 0 <= target < len(self.places) else None

    def step(self, by: int) -> Place | None:
        """The place `by` steps back (-1) or forward (+1), now current; None at either end."""
        target = self.ahead(by)
        if target is None:
            return None
        self.index = target
        return self.places[target]

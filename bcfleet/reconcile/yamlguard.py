"""Refuse YAML that nests too deeply or whose aliases expand too far, before anything composes it.

``yamldoc.parse_yaml`` calls ``guard`` first. It reads the parser's events (``yaml.parse``):
the parser and scanner keep their own stacks and do not recurse, whereas the composer recurses
once per level (the C composer overflows the C stack and the process dies with SIGSEGV at about
50,000 levels). The pass stops at the first event past a limit, so a 100,000-level document
costs a few hundred events; libyaml's flow scanner is quadratic in the nesting depth, which
the early stop also keeps small.

Alias expansion is counted without building anything: each anchor's value count is the number
of values written between its start and end, aliases included, and an alias adds its anchor's
count. An alias to a collection still open (a cycle) is refused outright.
"""

from __future__ import annotations

from typing import Any

import yaml

from bcfleet.domain.document_limits import MAX_DEPTH, MAX_VALUES, too_deep, too_many_values


class Refused(Exception):
    """The document breaks a limit at ``mark`` (a yaml Mark)."""

    def __init__(self, mark: Any, message: str) -> None:
        super().__init__(message)
        self.mark = mark
        self.message = message


_STARTS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_ENDS = (yaml.SequenceEndEvent, yaml.MappingEndEvent)


def guard(text: str, loader_class: Any) -> None:
    """Raise Refused at the first value nested past MAX_DEPTH or expanded past MAX_VALUES;
    YAML syntax errors propagate as yaml.YAMLError for the caller to report."""
    loader = loader_class(text)
    try:
        _walk(loader)
    finally:
        loader.dispose()


def _walk(loader: Any) -> None:
    """One loop over the events, written for speed: it runs over every event of every file."""
    scalar, alias, end = yaml.ScalarEvent, yaml.AliasEvent, yaml.StreamEndEvent
    values = 0
    counts: dict[str, int] = {}  # anchor -> values it stands for
    open_collections: list[tuple[int, str | None]] = []  # (values before it, its anchor)
    get_event = loader.get_event
    while True:
        event = get_event()
        kind = type(event)
        if kind is scalar:
            values += 1
            if event.anchor is not None:
                counts[event.anchor] = 1
        elif kind in _STARTS:
            if len(open_collections) >= MAX_DEPTH:
                raise Refused(event.start_mark, too_deep())
            open_collections.append((values, event.anchor))
            values += 1
        elif kind in _ENDS:
            before, anchor = open_collections.pop()
            if anchor is not None:
                counts[anchor] = values - before
        elif kind is alias:
            if any(anchor == event.anchor for _, anchor in open_collections):
                raise Refused(event.start_mark, f"alias *{event.anchor} is inside its own anchor")
            values += counts.get(event.anchor, 1)
        elif kind is end:
            return
        if values > MAX_VALUES:
            raise Refused(event.start_mark, too_many_values())

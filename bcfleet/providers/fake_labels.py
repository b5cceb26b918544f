"""Hetzner label rules and label selectors, as the fake provider server enforces and evaluates them.

Keys are an optional DNS-subdomain prefix and ``/`` followed by a name of at
most 63 characters; values are empty or at most 63 characters; both start and
end with a letter or digit and may hold ``-``, ``_`` and ``.`` inside.
Selectors are comma-separated terms: ``k=v``, ``k==v``, ``k!=v``, ``k``,
``!k``, ``k in (a,b)`` and ``k notin (a,b)``; a server matches when every
term holds.
"""

from __future__ import annotations

import re
from typing import Any

_NAME = r"[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?"
_KEY = re.compile(rf"^([a-z0-9]([a-z0-9.-]{{0,251}}[a-z0-9])?/)?{_NAME}$")
_VALUE = re.compile(rf"^({_NAME})?$")
_SET_TERM = re.compile(r"^(?P<key>[^\s!=()]+)\s+(?P<op>in|notin)\s+\((?P<values>[^()]*)\)$")


class LabelError(ValueError):
    """A label or selector that breaks Hetzner's rules."""


def validate_labels(labels: Any) -> None:
    """LabelError unless ``labels`` is a string → string mapping within Hetzner's rules."""
    if not isinstance(labels, dict):
        raise LabelError("labels must be an object of strings")
    for key, value in labels.items():
        if not isinstance(key, str) or not _KEY.match(key):
            raise LabelError(f"invalid label key {key!r}")
        if not isinstance(value, str) or not _VALUE.match(value):
            raise LabelError(f"invalid label value {value!r} for key {key!r}")


def matches_selector(labels: dict[str, str], selector: str) -> bool:
    """Whether ``labels`` satisfy every term of ``selector``."""
    return all(_term_holds(labels, term) for term in split_terms(selector))


def split_terms(selector: str) -> list[str]:
    """The terms of a selector: commas inside ``( … )`` do not split."""
    terms: list[str] = []
    depth = 0
    current = ""
    for char in selector:
        if char == "," and depth == 0:
            terms.append(current.strip())
            current = ""
            continue
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            raise LabelError(f"unbalanced parenthesis in selector {selector!r}")
        current += char
    terms.append(current.strip())
    if depth != 0 or any(not term for term in terms):
        raise LabelError(f"invalid label selector {selector!r}")
    return terms


def _term_holds(labels: dict[str, str], term: str) -> bool:
    set_term = _SET_TERM.match(term)
    if set_term:
        values = {v.strip() for v in set_term.group("values").split(",")}
        inside = labels.get(set_term.group("key")) in values
        return inside if set_term.group("op") == "in" else not inside
    for operator in ("!=", "==", "="):
        key, found, value = term.partition(operator)
        if found:
            _check_key(key.strip())
            actual = labels.get(key.strip())
            wanted = value.strip()
            return actual != wanted if operator == "!=" else actual == wanted
    if term.startswith("!"):
        _check_key(term[1:].strip())
        return term[1:].strip() not in labels
    _check_key(term)
    return term in labels


def _check_key(key: str) -> None:
    if not _KEY.match(key):
        raise LabelError(f"invalid label key {key!r} in selector")

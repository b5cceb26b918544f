"""The bounds, patterns and enums of request schemas, generated from the rules the server checks.

The route modules build their request schemas (bodies, query and path parameters) from these,
so the OpenAPI document states what the API enforces: printable names (bounds.forbidden), slugs
(bounds.SLUG), durations (domain/durations.py), times (clock.EARLIEST..LATEST), sizes
(domain/sizes.py). Nothing here holds a number or a pattern of its own: each one is read from
the module that checks it. What no JSON Schema can say (a duration's total, a time's offset
pushing it out of range) is said in the ``description``.
"""

from __future__ import annotations

import re
import sys
from functools import cache
from typing import Any

from bcfleet.clock import EARLIEST, LATEST, format_time
from bcfleet.domain.bounds import (
    NAME_MAX,
    SLUG,
    SLUG_MAX,
    URL_WORDS,
    forbidden,
    url_pattern,
)
from bcfleet.domain.durations import MAX_DURATION, UNIT_ORDER, format_duration
from bcfleet.domain.sizes import SIZE_NAMES

Schema = dict[str, Any]

STORABLE_PATTERN = "^[^\\u0000]*$"
"""Text any database stores: no NUL (bounds.check_storable refuses it in bodies, paths, queries)."""


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    if pattern.endswith("$") and not pattern.endswith("\\$"):
        pattern = pattern[:-1] + "\\Z"
    return re.compile(pattern)


def matches(pattern: str, value: str) -> bool:
    """Whether ``value`` matches a JSON Schema pattern as ECMA-262 reads it: a final ``$`` is the
    end of the text (Python's ``$`` also matches before a final newline, ECMA's does not)."""
    return _compiled(pattern).search(value) is not None


def _escape(code: int) -> str:
    """A code point as a character class writes it: \\uXXXX in the BMP, else the character."""
    return f"\\u{code:04x}" if code <= 0xFFFF else chr(code)


def _is_surrogate(code: int) -> bool:
    return 0xD800 <= code <= 0xDFFF


@cache
def forbidden_class() -> str:
    """The characters bounds.forbidden refuses, as the inside of a regex character class.

    Read from the running Python's Unicode database (the one the server checks with), as
    ranges: the C0 and C1 controls, format characters, line and paragraph separators. Lone
    surrogates are left out: they are not Unicode text, so no JSON Schema string holds one
    (bounds.check_storable refuses them), and a class naming them breaks pattern-driven generators.
    """
    ranges: list[tuple[int, int]] = []
    start: int | None = None
    for code in range(sys.maxunicode + 2):
        bad = code <= sys.maxunicode and not _is_surrogate(code) and forbidden(chr(code))
        if bad and start is None:
            start = code
        elif not bad and start is not None:
            ranges.append((start, code - 1))
            start = None
    return "".join(
        _escape(low) if low == high else f"{_escape(low)}-{_escape(high)}" for low, high in ranges
    )


def anchored(pattern: str) -> str:
    """A pattern the server uses with fullmatch, anchored for JSON Schema's search semantics."""
    return pattern if pattern.startswith("^") and pattern.endswith("$") else f"^(?:{pattern})$"


def text(max_length: int | None = NAME_MAX, *, min_length: int = 1) -> Schema:
    """bounds.check_text: min_length..max_length printable characters (no maximum: None)."""
    body: Schema = {"type": "string", "minLength": min_length}
    if max_length is not None:
        body["maxLength"] = max_length
    body["pattern"] = f"^[^{forbidden_class()}]*$"
    return body


def identifier(max_length: int = NAME_MAX, *, nonblank: bool = False) -> Schema:
    """bounds.check_identifier: printable text whose letters come from one script, with no
    compatibility forms (what no pattern can say is said in the description)."""
    body = nonblank_text(max_length) if nonblank else text(max_length)
    return {
        **body,
        "description": "Letters of one script (Latin may go with Han, Hiragana, Katakana, "
        "Bopomofo or Hangul), no full-width or other compatibility forms: INVALID_INPUT "
        "otherwise, so that no name passes for another.",
    }


def nonblank_text(max_length: int) -> Schema:
    """Printable text with at least one character that is not white space."""
    inside = forbidden_class()
    return {
        **text(max_length),
        "pattern": f"^[^{inside}]*[^{inside}\\s][^{inside}]*$",
    }


def matching(pattern: str | re.Pattern[str], max_length: int | None = None) -> Schema:
    """A string the server checks with ``pattern.fullmatch``."""
    raw = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
    body: Schema = {"type": "string", "pattern": anchored(raw)}
    if max_length is not None:
        body["maxLength"] = max_length
    return body


def slug() -> Schema:
    """A pool, host, flavor or environment name (bounds.SLUG)."""
    return matching(SLUG, SLUG_MAX)


def reference(description: str = "") -> Schema:
    """Storable text of one or more characters (no NUL) that the server looks up or filters by:
    an unknown id or name is NOT_FOUND, an unknown filter value (a state, a meter) matches
    nothing; neither is a schema error. Free texts with bounds of their own (a webhook's event
    types and secret) start from it too."""
    body: Schema = {"type": "string", "minLength": 1, "pattern": STORABLE_PATTERN}
    if description:
        body["description"] = description
    return body


def http_url(max_length: int) -> Schema:
    """A URL as bounds.url_problem accepts it: bounds.url_pattern, with the characters
    bounds.forbidden refuses spelled out as ranges; what the URL parser adds is said in the
    description."""
    return {
        "type": "string",
        "maxLength": max_length,
        "pattern": url_pattern(forbidden_class()),
        "description": f"{URL_WORDS[0].upper()}{URL_WORDS[1:]} (INVALID_INPUT otherwise).",
    }


def secret(max_length: int, description: str) -> Schema:
    """A credential: writeOnly, so schema errors never quote it (serving.validate_body). The
    characters are provider_accounts._token's: printable ASCII, no spaces (33..126)."""
    return {
        "type": "string",
        "writeOnly": True,
        "minLength": 1,
        "maxLength": max_length,
        "pattern": "^[!-~]*$",
        "description": description,
    }


def one_of(values: tuple[str, ...] | list[str], description: str = "") -> Schema:
    body: Schema = {"type": "string", "enum": list(values)}
    if description:
        body["description"] = description
    return body


def size() -> Schema:
    """An instance size of document 004, as sizes.parse_size reads it (any case, blanks around)."""
    names = "|".join("".join(f"[{c}{c.upper()}]" for c in name) for name in SIZE_NAMES)
    return {
        "type": "string",
        "pattern": f"^ *(?:{names}) *$",
        "description": f"An instance size: {', '.join(SIZE_NAMES)}.",
    }


def _duration_pattern() -> str:
    """durations.parse_duration's grammar: whole-number terms largest unit first, each unit at
    most once, blanks around and upper case allowed, a total above zero (some digit is not 0)."""
    terms = "".join(f"(?:[0-9]+[{u}{u.upper()}])?" for u in UNIT_ORDER)
    return f"^(?=[^1-9]*[1-9]) *{terms} *$"


def duration(most: Any = MAX_DURATION, what: str = "") -> Schema:
    """A duration such as 12h, 90m, 2h30m, 1d, 45s, at most ``most`` (a timedelta) in total."""
    example = "e.g. 12h, 90m, 2h30m, 1d, 45s"
    return {
        "type": "string",
        "pattern": _duration_pattern(),
        "maxLength": 40,
        "description": f"{what or 'A duration'}, {example}: units d, h, m, s, largest first, "
        f"each once; at most {format_duration(most)} in total (INVALID_INPUT beyond).",
    }


def time(what: str = "An RFC 3339 time") -> Schema:
    """clock.parse_time: RFC 3339 within EARLIEST..LATEST."""
    first, last = EARLIEST.year, LATEST.year - 1
    years = _year_pattern(first, last)
    return {
        "type": "string",
        "format": "date-time",
        "pattern": f"^{years}-",
        "description": f"{what}, from {format_time(EARLIEST)} up to {format_time(LATEST)} "
        "(an offset that moves it outside is INVALID_INPUT).",
    }


def _year_pattern(first: int, last: int) -> str:
    """A regex of the four-digit years first..last, by century (2000..2199: 20[0-9]{2}|21…)."""
    if first % 100 or (last + 1) % 100:
        raise ValueError("EARLIEST and LATEST are whole centuries")
    centuries = "|".join(str(c) for c in range(first // 100, (last + 1) // 100))
    return f"(?:{centuries})[0-9]{{2}}"

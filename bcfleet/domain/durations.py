"""Durations like '12h', '90m', '2h30m', '1d', '45s': parsed for the API and CLI, formatted back.

Grammar: one or more whole-number terms, each a unit from d, h, m, s, every unit
at most once and largest first ('1d12h', '2h30m15s'). A term may exceed its
next unit ('90m', '36h'). Surrounding blanks and upper case are accepted;
fractions, signs, inner blanks, a repeated or out-of-order unit, and a zero
total are INVALID_INPUT. The formatted form is the canonical spelling of the
same grammar, so parse_duration(format_duration(d)) == d for whole seconds.
"""

from __future__ import annotations

import re
from datetime import timedelta

from bcfleet.errors import InvalidInputError

UNIT_SECONDS: dict[str, int] = {"d": 86_400, "h": 3_600, "m": 60, "s": 1}
UNIT_ORDER = tuple(UNIT_SECONDS)

_TERM = re.compile(r"([0-9]+)([a-z])")
_EXAMPLES = "'12h', '90m', '2h30m', '1d', '45s'"
# timedelta's own ceiling is 999,999,999 days; anything near it is a typo, not a lease. A
# reservation keeps its length in seconds in an INTEGER column (bounds.INT32_MAX, about 68
# years), so the maximum is 50 years of 365 days.
MAX_DURATION = timedelta(days=50 * 365)


def _invalid(text: object, why: str, field: str) -> InvalidInputError:
    return InvalidInputError(
        f"invalid {field} {text!r}: {why}; use whole numbers with units d, h, m, s, "
        f"largest first, e.g. {_EXAMPLES}",
        {"field": field, "value": text if isinstance(text, str) else repr(text)},
    )


def _terms(candidate: str, original: str, field: str) -> list[tuple[int, str]]:
    terms: list[tuple[int, str]] = []
    position = 0
    for match in _TERM.finditer(candidate):
        if match.start() != position:
            break
        terms.append((int(match.group(1)), match.group(2)))
        position = match.end()
    if not terms or position != len(candidate):
        raise _invalid(original, "not a duration", field)
    return terms


def _check_units(terms: list[tuple[int, str]], original: str, field: str) -> None:
    last_rank = -1
    for _value, unit in terms:
        if unit not in UNIT_SECONDS:
            raise _invalid(original, f"unknown unit {unit!r}", field)
        rank = UNIT_ORDER.index(unit)
        if rank == last_rank:
            raise _invalid(original, f"unit {unit!r} appears twice", field)
        if rank < last_rank:
            raise _invalid(original, "units must go from largest to smallest", field)
        last_rank = rank


def parse_duration(text: str, *, field: str = "duration") -> timedelta:
    """Parse '12h', '90m', '2h30m', '1d', '45s' into a positive timedelta; INVALID_INPUT otherwise.

    `field` names the input in the error message and details (e.g. 'duration').
    """
    if not isinstance(text, str):
        raise _invalid(text, "expected a string", field)
    candidate = text.strip().lower()
    if not candidate:
        raise _invalid(text, "empty", field)
    terms = _terms(candidate, text, field)
    _check_units(terms, text, field)
    seconds = sum(value * UNIT_SECONDS[unit] for value, unit in terms)
    if seconds == 0:
        raise _invalid(text, "must be longer than zero", field)
    if seconds > MAX_DURATION.total_seconds():
        raise _invalid(text, f"longer than the maximum of {format_duration(MAX_DURATION)}", field)
    return timedelta(seconds=seconds)


def format_duration(value: timedelta) -> str:
    """The canonical spelling of a duration: '1d2h30m', '90s' → '1m30s', zero → '0s'.

    Fractions of a second are dropped; a negative duration is a programming error (ValueError).
    """
    if value < timedelta(0):
        raise ValueError(f"negative duration: {value!r}")
    remaining = value.days * UNIT_SECONDS["d"] + value.seconds
    if remaining == 0:
        return "0s"
    parts: list[str] = []
    for unit in UNIT_ORDER:
        amount, remaining = divmod(remaining, UNIT_SECONDS[unit])
        if amount:
            parts.append(f"{amount}{unit}")
    return "".join(parts)

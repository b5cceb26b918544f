"""Reservation durations: what parses, what is INVALID_INPUT, and the canonical spelling."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bcfleet.domain.durations import MAX_DURATION, format_duration, parse_duration
from bcfleet.errors import InvalidInputError


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("12h", timedelta(hours=12), id="hours"),
        pytest.param("90m", timedelta(minutes=90), id="minutes-beyond-an-hour"),
        pytest.param("2h30m", timedelta(hours=2, minutes=30), id="hours-and-minutes"),
        pytest.param("1d", timedelta(days=1), id="days"),
        pytest.param("45s", timedelta(seconds=45), id="seconds"),
        pytest.param("1d12h30m15s", timedelta(days=1, hours=12, minutes=30, seconds=15), id="all"),
        pytest.param("36h", timedelta(hours=36), id="hours-beyond-a-day"),
        pytest.param(" 12H ", timedelta(hours=12), id="blanks-and-upper-case"),
        pytest.param("0h5m", timedelta(minutes=5), id="a-zero-term"),
    ],
)
def test_parses(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        pytest.param("", "empty", id="empty"),
        pytest.param("12", "not a duration", id="no-unit"),
        pytest.param("h", "not a duration", id="no-number"),
        pytest.param("1.5h", "not a duration", id="fraction"),
        pytest.param("-1h", "not a duration", id="negative"),
        pytest.param("1 h", "not a duration", id="inner-blank"),
        pytest.param("12hours", "not a duration", id="unit-spelled-out"),
        pytest.param("12w", "unknown unit 'w'", id="unknown-unit"),
        pytest.param("30m2h", "largest to smallest", id="units-out-of-order"),
        pytest.param("2h2h", "appears twice", id="unit-twice"),
        pytest.param("0s", "longer than zero", id="zero"),
        pytest.param("0h0m", "longer than zero", id="zero-terms"),
        pytest.param("999999999d", "maximum", id="absurdly-long"),
    ],
)
def test_refuses_with_a_clear_message(text: str, why: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_duration(text)
    error = caught.value
    assert error.code == "INVALID_INPUT"
    assert why in error.message
    assert repr(text) in error.message
    assert "'12h'" in error.message
    assert error.details == {"field": "duration", "value": text}


def test_names_the_field_it_was_given() -> None:
    with pytest.raises(InvalidInputError) as caught:
        parse_duration("soon", field="notice")
    assert caught.value.message.startswith("invalid notice 'soon'")
    assert caught.value.details["field"] == "notice"


def test_refuses_a_non_string() -> None:
    with pytest.raises(InvalidInputError, match="expected a string"):
        parse_duration(12)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        pytest.param(timedelta(hours=12), "12h", id="hours"),
        pytest.param(timedelta(minutes=90), "1h30m", id="minutes-carry-into-hours"),
        pytest.param(timedelta(days=1, seconds=1), "1d1s", id="gaps-are-skipped"),
        pytest.param(timedelta(seconds=45, milliseconds=900), "45s", id="fractions-dropped"),
        pytest.param(timedelta(0), "0s", id="zero"),
    ],
)
def test_formats_canonically(value: timedelta, text: str) -> None:
    assert format_duration(value) == text


def test_formatting_a_negative_duration_is_a_bug() -> None:
    with pytest.raises(ValueError, match="negative"):
        format_duration(timedelta(seconds=-1))


@given(st.integers(min_value=1, max_value=int(MAX_DURATION.total_seconds())))
def test_formatting_then_parsing_gives_the_same_duration(seconds: int) -> None:
    value = timedelta(seconds=seconds)
    assert parse_duration(format_duration(value)) == value

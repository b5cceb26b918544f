"""check_storable refuses exactly the texts storable_problem names (a NUL, a lone surrogate),
whether it answers from its ASCII shortcut or walks the value."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bcfleet.domain.bounds import check_storable, storable_problem
from bcfleet.errors import InvalidInputError

# Every code point, lone surrogates included, ASCII and NUL drawn often.
_TEXTS = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()))
_MOSTLY_ASCII = st.text(st.sampled_from(["a", "Z", "0", "-", "\x00", "\x7f", "é", "\ud800"]))


def _refused(value: object) -> bool:
    try:
        check_storable(value, "name")
    except InvalidInputError:
        return True
    return False


@given(st.one_of(_TEXTS, _MOSTLY_ASCII))
def test_a_text_is_refused_exactly_when_no_database_can_store_it(text: str) -> None:
    assert _refused(text) == (storable_problem(text) is not None)
    assert _refused([text]) == _refused(text)  # walked, not answered by the shortcut


@pytest.mark.parametrize("text", ["a\x00b", "\x00", "\ud800", "ok\udfff"])
def test_a_nul_or_a_lone_surrogate_is_invalid_input_naming_the_parameter(text: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        check_storable(text, "name")
    assert raised.value.details == {"path": "name"}

"""stored_json.dump, every JSON column's serializer, writes what json.dumps writes: the standard
library's encoder is the judge."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcfleet.store import stored_json
from bcfleet.store.engine import make_engine

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=8), inner, max_size=5)
    ),
    max_leaves=40,
)


@settings(max_examples=300, deadline=None)
@given(DOCUMENTS)
def test_dump_writes_what_json_dumps_writes(document: Any) -> None:
    assert stored_json.dump(document) == json.dumps(document)


def test_a_value_json_cannot_hold_fails_as_json_dumps_fails() -> None:
    with pytest.raises(TypeError, match="is not JSON serializable"):
        stored_json.dump({"at": object()})


@pytest.mark.parametrize("url", ["sqlite://", "postgresql://bcfleet@db.invalid/fleet"])
def test_either_engine_serializes_json_columns_with_it(url: str) -> None:
    engine = make_engine(url)  # made, not connected
    try:
        assert engine.dialect._json_serializer is stored_json.dump
    finally:
        engine.dispose()

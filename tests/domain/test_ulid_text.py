"""An id's ULID text is the ULID library's own string, in lower case."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from ulid import ULID

from bcfleet import ids
from bcfleet.ids import ULID_TEXT, IdFactory, has_prefix, ulid_text


@pytest.mark.parametrize("seed", range(5))
def test_the_text_is_the_librarys(seed: int) -> None:
    source = random.Random(seed)
    for raw in (bytes(16), b"\xff" * 16, *(source.randbytes(16) for _ in range(200))):
        assert ulid_text(raw) == str(ULID(raw)).lower()
        assert ULID_TEXT.fullmatch(ulid_text(raw))


def test_an_id_is_its_time_and_entropy() -> None:
    at = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    made = IdFactory(seed=3).new("ins", at)
    raw = int(at.timestamp() * 1000).to_bytes(6, "big") + random.Random(3).randbytes(10)
    assert made == "ins_" + str(ULID(raw)).lower()
    assert ULID.from_str(made.removeprefix("ins_").upper()).datetime == at


def test_sixteen_bytes_only() -> None:
    with pytest.raises(ValueError, match="16 bytes"):
        ulid_text(bytes(15))


def test_new_many_makes_the_ids_new_makes_one_by_one() -> None:
    at = datetime(2026, 12, 6, 12, 0, tzinfo=UTC)
    one_by_one = IdFactory(seed=3)
    assert IdFactory(seed=3).new_many("ins", at, 4) == [one_by_one.new("ins", at) for _ in range(4)]
    unseeded = IdFactory().new_many("evt", at, 3)
    assert len(set(unseeded)) == 3 and all(has_prefix(i, "evt") for i in unseeded)
    with pytest.raises(ValueError):
        IdFactory().new_many("nope", at, 1)


@pytest.mark.parametrize("seed", range(3))
def test_new_many_is_new_at_any_time_and_count(seed: int) -> None:
    source = random.Random(seed)
    for _ in range(20):
        at = datetime.fromtimestamp(source.randrange(0, 2**42) / 1000, tz=UTC)
        count = source.randrange(0, 40)
        one_by_one = IdFactory(seed=seed)
        expected = [one_by_one.new("alloc", at) for _ in range(count)]
        assert IdFactory(seed=seed).new_many("alloc", at, count) == expected


def test_ids_of_one_time_reuse_its_letters_and_another_time_has_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[int] = []
    time_letters = ids._time_letters

    def counted(millis: int) -> str:
        made.append(millis)
        return time_letters(millis)

    monkeypatch.setattr(ids, "_time_letters", counted)
    first, second = (
        datetime(2026, 12, 6, 12, 0, tzinfo=UTC),
        datetime(2026, 12, 6, 12, 1, tzinfo=UTC),
    )
    factory, source = IdFactory(seed=5), random.Random(5)
    for at in (first, first, second, first, first):
        raw = int(at.timestamp() * 1000).to_bytes(6, "big") + source.randbytes(10)
        assert factory.new("ins", at) == "ins_" + str(ULID(raw)).lower()
    assert made == [int(t.timestamp() * 1000) for t in (first, second, first)]


def test_a_time_before_1970_makes_no_id() -> None:
    with pytest.raises(OverflowError):
        IdFactory().new("ins", datetime(1969, 12, 31, tzinfo=UTC))


@given(
    st.datetimes(
        min_value=datetime(1970, 1, 1), max_value=datetime(2100, 12, 31), timezones=st.just(UTC)
    ),
    st.integers(min_value=0, max_value=2**32),
)
def test_an_id_of_any_time_to_2100_is_the_librarys_ulid_of_it(at: datetime, seed: int) -> None:
    """The time's milliseconds as timestamp() counts them, and the seeded stream's bytes as
    randbytes takes them, id after id."""
    factory, stream = IdFactory(seed=seed), random.Random(seed)
    for _ in range(3):
        raw = int(at.timestamp() * 1000).to_bytes(6, "big") + stream.randbytes(10)
        assert factory.new("alloc", at) == "alloc_" + str(ULID(raw)).lower()

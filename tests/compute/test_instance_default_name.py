"""An instance created without a name is named for its flavor and the time, as strftime's
%H%M%S writes the time (the judge)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given
from hypothesis import strategies as st

from bcfleet.api.instances import default_name


@given(st.datetimes(timezones=st.sampled_from([None, UTC])), st.text(min_size=1, max_size=20))
def test_the_default_name_is_the_flavor_and_the_time_as_strftime_writes_it(
    at: datetime, flavor: str
) -> None:
    assert default_name(flavor, at) == f"{flavor}-{at:%H%M%S}"


def test_a_morning_time_keeps_its_zeros() -> None:
    assert default_name("b1.small", datetime(2026, 12, 6, 7, 5, 9, tzinfo=UTC)) == "b1.small-070509"

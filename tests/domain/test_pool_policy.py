"""A pool's effective policy: ratios as placement reads them, the reserve over the fleet's default."""

from __future__ import annotations

import pytest

from bcfleet.domain.host_reserve import HostReserve
from bcfleet.domain.pool_policy import effective_ratios, effective_reserve, effective_reserve_json


def test_ratios_left_out_are_1_and_the_others_clamped_to_the_documents_range() -> None:
    assert effective_ratios(None) == {"vcpu": 1.0, "memoryGiB": 1.0, "diskGiB": 1.0}
    assert effective_ratios({"vcpu": 0.05, "memoryGiB": 1.5, "diskGiB": 500}) == {
        "vcpu": 0.1, "memoryGiB": 1.5, "diskGiB": 100.0
    }  # fmt: skip
    assert effective_ratios({"vcpu": float("nan")})["vcpu"] == 1.0


def test_the_reserve_is_the_pools_own_over_the_fleets_default() -> None:
    fleet_default = HostReserve(vcpu=4)
    assert effective_reserve({}, fleet_default) == HostReserve(4, 8, 100)
    assert effective_reserve({"diskGiB": 50}, fleet_default) == HostReserve(4, 8, 50)
    assert effective_reserve_json({"vcpu": 1}, fleet_default) == {
        "vcpu": 1, "memoryGiB": 8, "diskGiB": 100
    }  # fmt: skip


@pytest.mark.parametrize("stored", [float("nan"), float("inf"), None, "x"])
def test_a_stored_reserve_that_is_no_number_is_refused_and_shown_as_nulls(stored: object) -> None:
    with pytest.raises(ValueError, match="hostReserve"):
        effective_reserve({"vcpu": stored})
    assert effective_reserve_json({"vcpu": stored}) == {
        "vcpu": None, "memoryGiB": None, "diskGiB": None
    }  # fmt: skip

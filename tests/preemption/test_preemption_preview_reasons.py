"""capacity.preview's preemptReason: why preempting spot work would not make a request fit."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bcfleet.cli.capacity import preview_text
from bcfleet.domain.gpu_plan import AtomBooking, GpuNode, GpuRequest, GpuSnapshot
from bcfleet.domain.preemption import preview, why_no_preemption

NOW = datetime(2026, 9, 21, 10, 0, tzinfo=UTC)
H = timedelta(hours=1)
NOTICE = timedelta(minutes=2)


def node(name: str) -> GpuNode:
    return GpuNode(f"node_{name}", name, tuple(f"{name}-gpu{i}" for i in range(4)), False)


def held(
    name: str, atoms: list[int], holder: str, *, spot: bool, end: datetime
) -> list[AtomBooking]:
    return [AtomBooking(f"{name}-gpu{i}", holder, NOW - H, end, spot) for i in atoms]


def request(count: int = 4, **kwargs: object) -> GpuRequest:
    return GpuRequest(count, NOW, NOW + 12 * H, **kwargs)  # type: ignore[arg-type]


def four_spot_on_half_full_nodes(spot_end: datetime = NOW + 11 * H) -> GpuSnapshot:
    """Two 4-GPU nodes, each with 2 GPUs of regular work and 2 spot reservations of 1 GPU."""
    bookings: list[AtomBooking] = []
    for name in ("a", "b"):
        bookings += held(name, [0, 1], f"rsv_reg_{name}", spot=False, end=NOW + 11 * H)
        bookings += held(name, [2], f"rsv_spot_{name}2", spot=True, end=spot_end)
        bookings += held(name, [3], f"rsv_spot_{name}3", spot=True, end=spot_end)
    return GpuSnapshot([node("a"), node("b")], bookings)


def test_preempting_all_four_spot_reservations_still_would_not_fit() -> None:
    answer = preview(four_spot_on_half_full_nodes(), request(4), NOW, NOTICE)
    assert answer["fits"] is False and "preemptible" not in answer
    assert answer["preemptReason"] == (
        "preempting all 4 spot reservations in its window still would not make it fit"
    )


def test_the_only_spot_reservation_is_named_as_such() -> None:
    bookings = held("a", [0, 1, 2], "rsv_reg", spot=False, end=NOW + 11 * H)
    bookings += held("a", [3], "rsv_spot", spot=True, end=NOW + 11 * H)
    answer = preview(GpuSnapshot([node("a")], bookings), request(4), NOW, NOTICE)
    assert answer["preemptReason"] == (
        "preempting the only spot reservation in its window still would not make it fit"
    )


def test_spot_work_ending_before_the_deadline_leaves_nothing_to_preempt() -> None:
    snapshot = four_spot_on_half_full_nodes(spot_end=NOW + timedelta(minutes=1))
    answer = preview(snapshot, request(4), NOW, NOTICE)
    assert answer["preemptReason"] == (
        "no spot reservation in the pool overlaps the request's window: nothing to preempt"
    )


@pytest.mark.parametrize(
    ("kind", "reason"),
    [
        pytest.param({"spot": True}, "a spot request never preempts", id="spot"),
        pytest.param({"binding": "node"}, "a node lease never preempts", id="node-lease"),
    ],
)
def test_requests_that_never_preempt_say_so(kind: dict[str, object], reason: str) -> None:
    snapshot = four_spot_on_half_full_nodes()
    answer = preview(snapshot, request(4, **kind), NOW, NOTICE)
    assert answer["preemptReason"] == reason
    assert why_no_preemption(snapshot, request(4, **kind), NOW, NOTICE) == reason


def test_a_preemptible_or_fitting_request_has_no_preempt_reason() -> None:
    bookings = held("a", [0, 1, 2, 3], "rsv_spot", spot=True, end=NOW + 11 * H)
    snapshot = GpuSnapshot([node("a"), node("b")], bookings)
    fits = preview(snapshot, request(4), NOW, NOTICE)
    assert fits["fits"] is True and "preemptReason" not in fits
    full = GpuSnapshot(
        [node("a")], held("a", [0, 1, 2, 3], "rsv_spot", spot=True, end=NOW + 11 * H)
    )
    preempting = preview(full, request(4), NOW, NOTICE)
    assert preempting["preemptible"]["reservations"] == 1 and "preemptReason" not in preempting


def test_the_cli_prints_the_reason() -> None:
    answer = preview(four_spot_on_half_full_nodes(), request(4), NOW, NOTICE)
    assert preview_text(answer).splitlines()[1] == (
        "no preemption would make it fit: preempting all 4 spot reservations in its window "
        "still would not make it fit"
    )

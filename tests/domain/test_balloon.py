"""The balloon decider (domain/balloon.py) with document 000's numbers: short under 10 %
available or at 10 % memory pressure, free above 20 %, floors of 50 % or use plus 10 %."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcfleet.domain.balloon import (
    BalloonDecision,
    GuestBalloon,
    HostMemory,
    HostState,
    Reason,
    decide_balloons,
    guest_is_idle,
    guest_use_bytes,
)
from bcfleet.errors import InvalidInputError

GIB = 1 << 30
KIB = 1024


def host(total_gib: float, available_gib: float, pressure: float | None = None) -> HostMemory:
    return HostMemory(int(total_gib * GIB), int(available_gib * GIB), pressure)


def guest(
    guest_id: str,
    memory_gib: int = 16,
    target_gib: float | None = None,
    used_gib: float | None = 2,
    *,
    idle: bool = False,
    huge_pages: bool = False,
    vfio: bool = False,
    balloon: bool = True,
    floor_percent: int = 50,
) -> GuestBalloon:
    """A guest of memory_gib whose balloon target is target_gib (default: not inflated)."""
    target = memory_gib if target_gib is None else target_gib
    return GuestBalloon(
        guest_id=guest_id,
        memory_bytes=memory_gib * GIB,
        target_bytes=int(target * GIB),
        used_bytes=None if used_gib is None else int(used_gib * GIB),
        idle=idle,
        huge_pages=huge_pages,
        vfio=vfio,
        balloon=balloon,
        floor_percent=floor_percent,
    )


def targets(decision: BalloonDecision) -> dict[str, tuple[int, str]]:
    """guest id → (new target in KiB, reason)."""
    return {c.guest_id: (c.target_kib, c.reason.value) for c in decision.changes}


def gib_kib(gib: float) -> int:
    return int(gib * GIB) // KIB


@pytest.mark.parametrize(
    ("memory", "guests", "state", "expected"),
    [
        pytest.param(
            host(100, 8),
            [guest("busy"), guest("idle", idle=True)],
            HostState.SHORT,
            # 8 % available: reclaim up to 10 % + the 1 % step, 3 GiB, all from the idle guest
            {"idle": (gib_kib(13), "inflate")},
            id="a-short-host-inflates-the-idle-guest-first",
        ),
        pytest.param(
            host(100, 2),
            [guest("busy"), guest("idle", idle=True)],
            HostState.SHORT,
            # 9 GiB to reclaim: the idle guest down to its 50 % floor (8), then 1 from the busy one
            {"idle": (gib_kib(8), "inflate"), "busy": (gib_kib(15), "inflate")},
            id="a-busy-guest-gives-only-after-the-idle-ones-reach-their-floor",
        ),
        pytest.param(
            host(100, 5),
            [guest("idle-a", idle=True), guest("idle-b", 16, 10, idle=True)],
            HostState.SHORT,
            # 6 GiB: the idle guest with the most room above its floor gives first
            {"idle-a": (gib_kib(10), "inflate")},
            id="among-idle-guests-the-one-with-most-room-gives-first",
        ),
        pytest.param(
            host(100, 0),
            [guest("half", 8, used_gib=1, idle=True), guest("used", 8, used_gib=6, idle=True)],
            HostState.SHORT,
            # 11 GiB wanted, 7.4 available: 50 % of 8 GiB is 4; 6 GiB used + 10 % is 6.6 GiB
            {"half": (gib_kib(4), "inflate"), "used": (6_920_602, "inflate")},
            id="never-below-the-floor-of-50-percent-or-use-plus-10-percent",
        ),
        pytest.param(
            host(100, 0),
            [guest("eighty", 10, used_gib=1, idle=True, floor_percent=80)],
            HostState.SHORT,
            {"eighty": (gib_kib(8), "inflate")},
            id="the-floor-percent-is-the-guests-own",
        ),
        pytest.param(
            host(100, 0),
            [
                guest("hugepages", huge_pages=True, idle=True),
                guest("gpu", vfio=True, idle=True),
                guest("no-balloon", balloon=False, idle=True),
            ],
            HostState.SHORT,
            {},
            id="huge-page-gpu-and-balloonless-guests-are-never-touched",
        ),
        pytest.param(
            host(100, 0),
            [guest("gpu", 16, 8, vfio=True, idle=True)],
            HostState.SHORT,
            {},
            id="a-gpu-guest-is-not-even-raised-to-a-floor",
        ),
        pytest.param(
            host(100, 0),
            [guest("no-stats", used_gib=None, idle=True)],
            HostState.SHORT,
            {},
            id="a-guest-whose-use-is-unknown-is-never-inflated",
        ),
        pytest.param(
            host(100, 15),
            [guest("inflated", 16, 8, idle=True), guest("full", idle=True)],
            HostState.HOLD,
            {},
            id="between-10-and-20-percent-nothing-moves",
        ),
        pytest.param(
            host(100, 10),
            [guest("inflated", 16, 8), guest("full", idle=True)],
            HostState.HOLD,
            {},
            id="exactly-10-percent-is-not-short",
        ),
        pytest.param(
            host(100, 20),
            [guest("inflated", 16, 8)],
            HostState.HOLD,
            {},
            id="exactly-20-percent-is-not-free",
        ),
        pytest.param(
            host(100, 30),
            [guest("idle", 16, 10, idle=True), guest("busy", 16, 12), guest("full")],
            HostState.FREE,
            # 10 GiB above 20 %: the busy guest gets its 4 back first, the idle one 6
            {"busy": (gib_kib(16), "deflate"), "idle": (gib_kib(16), "deflate")},
            id="above-20-percent-balloons-deflate",
        ),
        pytest.param(
            host(100, 25),
            [guest("idle", 16, 10, idle=True), guest("busy", 16, 12)],
            HostState.FREE,
            # 5 GiB above 20 %: the busy guest's 4, then 1 of the idle guest's 6
            {"busy": (gib_kib(16), "deflate"), "idle": (gib_kib(11), "deflate")},
            id="deflating-keeps-20-percent-available",
        ),
        pytest.param(
            host(100, 50, pressure=12.5),
            [guest("busy"), guest("idle", idle=True)],
            HostState.SHORT,
            # plenty available, but 12.5 % of the last 10 s stalled on memory: the 1 GiB step
            {"idle": (gib_kib(15), "inflate")},
            id="memory-pressure-alone-makes-the-host-short",
        ),
        pytest.param(
            host(100, 30, pressure=10.0),
            [guest("inflated", 16, 10, idle=True)],
            HostState.SHORT,
            {"inflated": (gib_kib(9), "inflate")},
            id="pressure-of-exactly-10-percent-is-short-and-blocks-deflating",
        ),
        pytest.param(
            host(100, 15, pressure=9.99),
            [guest("idle", idle=True)],
            HostState.HOLD,
            {},
            id="pressure-under-10-percent-is-not-short",
        ),
        pytest.param(
            host(100, 15),
            [guest("grown", 16, 8, used_gib=10), guest("idle", idle=True)],
            HostState.HOLD,
            # 10 GiB used + 10 % is 11 GiB: raised to it even in the band
            {"grown": (gib_kib(11), "floor")},
            id="a-guest-whose-use-grew-is-raised-to-its-floor",
        ),
        pytest.param(
            host(100, 8),
            [guest("grown", 16, 8, used_gib=10), guest("idle", idle=True)],
            HostState.SHORT,
            # 3 GiB to reclaim plus the 3 GiB the raise takes: 6 from the idle guest
            {"grown": (gib_kib(11), "floor"), "idle": (gib_kib(10), "inflate")},
            id="a-raise-on-a-short-host-is-taken-from-the-others",
        ),
        pytest.param(
            host(16, 1),
            [guest("idle", 8, used_gib=1, idle=True)],
            HostState.SHORT,
            # 16 GiB host: 11 % is 1.76 GiB, 0.76 GiB to reclaim, rounded up to a whole KiB
            {"idle": (7_591_691, "inflate")},
            id="a-16-gib-host-reclaims-to-11-percent",
        ),
        pytest.param(
            host(256, 20),
            [guest("idle", 64, used_gib=4, idle=True), guest("busy", 64, used_gib=4)],
            HostState.SHORT,
            # 256 GiB host at 7.8 %: 28.16 − 20 = 8.16 GiB from the idle guest
            {"idle": (58_552_484, "inflate")},
            id="a-256-gib-host-reclaims-to-11-percent",
        ),
        pytest.param(
            host(1024, 200),
            [guest("idle", 64, 32, idle=True)],
            HostState.HOLD,
            {},
            id="a-1-tib-host-at-19-5-percent-holds",
        ),
        pytest.param(
            host(1024, 250),
            [guest("idle", 64, 32, idle=True)],
            HostState.FREE,
            # 1 TiB host at 24.4 %: 45.2 GiB above 20 %, the guest's 32 all given back
            {"idle": (gib_kib(64), "deflate")},
            id="a-1-tib-host-above-20-percent-deflates",
        ),
    ],
)
def test_balloon_targets(
    memory: HostMemory,
    guests: list[GuestBalloon],
    state: HostState,
    expected: dict[str, tuple[int, str]],
) -> None:
    decision = decide_balloons(memory, guests)
    assert decision.state is state
    assert targets(decision) == expected


@pytest.mark.parametrize(
    ("memory", "guests"),
    [
        pytest.param(host(16, 1), [guest("g", 8, used_gib=1, idle=True)], id="inflating"),
        pytest.param(host(100, 0), [guest("g", 8, used_gib=6.123, idle=True)], id="at-a-floor"),
        pytest.param(host(100, 20.5), [guest("g", 8, 4, idle=True)], id="deflating-by-part"),
        pytest.param(
            HostMemory(100 * GIB + 7, 21 * GIB + 3), [guest("g", 8, 4)], id="odd-host-bytes"
        ),
    ],
)
def test_targets_are_whole_kib_for_set_memory(
    memory: HostMemory, guests: list[GuestBalloon]
) -> None:
    (change,) = decide_balloons(memory, guests).changes
    assert change.target_bytes % KIB == 0
    assert change.target_kib * KIB == change.target_bytes
    floor = guests[0].floor_bytes()
    assert floor is not None and floor <= change.target_bytes <= guests[0].memory_bytes


def test_deflating_by_part_gives_back_the_budget_in_whole_kib() -> None:
    memory = HostMemory(100 * GIB, 20 * GIB + 1_000_000)  # 1,000,000 bytes above 20 %
    (change,) = decide_balloons(memory, [guest("g", 8, 4)]).changes
    assert (change.target_bytes, change.reason) == (4 * GIB + 999_424, Reason.DEFLATE)


@pytest.mark.parametrize(
    ("total", "available"),
    [
        pytest.param(0, 0, id="no-memtotal"),
        pytest.param(GIB, -1, id="negative-available"),
    ],
)
def test_nonsense_host_memory_is_invalid_input(total: int, available: int) -> None:
    with pytest.raises(InvalidInputError, match="MemTotal"):
        HostMemory(total, available)


@pytest.mark.parametrize(
    ("stats", "used"),
    [
        pytest.param({"available": 8_000_000, "usable": 6_000_000}, 2_000_000 * KIB, id="usable"),
        pytest.param({"available": 8_000_000, "unused": 7_000_000}, 1_000_000 * KIB, id="unused"),
        pytest.param(
            {"available": 8_000_000, "usable": 6_000_000, "unused": 7_000_000},
            2_000_000 * KIB,
            id="usable-wins-over-unused",
        ),
        pytest.param({"actual": 8_000_000, "rss": 900_000}, None, id="no-guest-statistics"),
    ],
)
def test_a_guests_use_from_its_memory_statistics(stats: dict[str, int], used: int | None) -> None:
    assert guest_use_bytes(stats) == used


SAMPLE = {"major_fault": 1000, "swap_in": 0, "last_update": 100}


@pytest.mark.parametrize(
    ("after", "idle"),
    [
        pytest.param({"major_fault": 1005, "swap_in": 0, "last_update": 110}, True, id="quiet"),
        pytest.param({"major_fault": 1010, "swap_in": 0, "last_update": 110}, False, id="faults"),
        pytest.param({"major_fault": 1000, "swap_in": 4, "last_update": 110}, False, id="swap-in"),
        pytest.param({"major_fault": 1000, "swap_in": 0, "last_update": 100}, False, id="no-time"),
        pytest.param({"major_fault": 1000, "last_update": 110}, False, id="no-figures"),
    ],
)
def test_a_guest_is_idle_when_its_memory_is_not_in_demand(
    after: dict[str, int], idle: bool
) -> None:
    assert guest_is_idle(SAMPLE, after) is idle


guests_strategy = st.lists(
    st.builds(
        GuestBalloon,
        guest_id=st.uuids().map(str),
        memory_bytes=st.integers(1, 64).map(lambda gib: gib * GIB),
        target_bytes=st.integers(0, 64 * GIB // KIB).map(lambda kib: kib * KIB),
        used_bytes=st.none() | st.integers(0, 64 * GIB),
        idle=st.booleans(),
        huge_pages=st.booleans(),
        vfio=st.booleans(),
        balloon=st.booleans(),
        floor_percent=st.integers(1, 100),
    ),
    max_size=8,
)


@settings(max_examples=300, deadline=None)
@given(
    total=st.integers(1, 1 << 42),
    share=st.floats(0, 1),
    pressure=st.none() | st.floats(0, 100),
    guests=guests_strategy,
)
def test_any_decision_keeps_the_rules(
    total: int, share: float, pressure: float | None, guests: list[GuestBalloon]
) -> None:
    decision = decide_balloons(HostMemory(total, int(total * share), pressure), guests)
    by_id = {g.guest_id: g for g in guests}
    for change in decision.changes:
        moved = by_id[change.guest_id]
        floor = moved.floor_bytes()
        assert moved.ballooned and change.target_bytes != moved.target
        assert change.target_bytes <= moved.memory_bytes
        assert change.target_bytes % KIB == 0 or change.target_bytes == moved.memory_bytes
        assert floor is None or change.target_bytes >= floor
        assert change.reason is not Reason.INFLATE or decision.state is HostState.SHORT
        assert change.reason is not Reason.DEFLATE or decision.state is HostState.FREE

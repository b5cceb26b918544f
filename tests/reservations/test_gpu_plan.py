"""GPU placement plans: free atoms in a window, packing, gangs, node leases, each "no" explained."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcfleet.domain.gpu_plan import (
    AtomBooking,
    GpuNode,
    GpuRequest,
    GpuSnapshot,
    plan_placement,
    window_masks,
)
from bcfleet.errors import InvalidInputError

NOW = datetime(2026, 9, 21, 10, 0, tzinfo=UTC)
H = timedelta(hours=1)


def node(name: str, gpus: int = 4, *, draining: bool = False) -> GpuNode:
    return GpuNode(f"node_{name}", name, tuple(f"{name}-gpu{i}" for i in range(gpus)), draining)


def booked(
    name: str,
    atoms: range | list[int],
    holder: str,
    *,
    start: datetime = NOW - H,
    end: datetime | None = NOW + 11 * H,
    spot: bool = False,
    state: str = "active",
) -> list[AtomBooking]:
    return [AtomBooking(f"{name}-gpu{i}", holder, start, end, spot, state) for i in atoms]


def request(count: int = 4, **kwargs: object) -> GpuRequest:
    return GpuRequest(count, NOW, NOW + 12 * H, **kwargs)  # type: ignore[arg-type]


def atoms_of(result_plan: object) -> list[tuple[str, tuple[str, ...]]]:
    return [(p.node_id, p.atom_ids) for p in result_plan.picks]  # type: ignore[attr-defined]


# --- what is free --------------------------------------------------------------------------


def test_a_free_node_takes_its_first_atoms() -> None:
    result = plan_placement(GpuSnapshot([node("a", 8)], []), request(2))
    assert result.fits and result.reason is None and result.best == result.plans[0]
    assert atoms_of(result.plans[0]) == [("node_a", ("a-gpu0", "a-gpu1"))]
    assert result.plans[0].score == 6


def test_booked_atoms_are_skipped() -> None:
    snapshot = GpuSnapshot([node("a", 4)], booked("a", [0, 2], "ins_1"))
    result = plan_placement(snapshot, request(2))
    assert atoms_of(result.plans[0]) == [("node_a", ("a-gpu1", "a-gpu3"))]


@pytest.mark.parametrize(
    ("start", "end", "fits"),
    [
        pytest.param(NOW - 2 * H, NOW, True, id="booking-ending-at-window-start-is-free"),
        pytest.param(NOW + 12 * H, NOW + 13 * H, True, id="booking-starting-at-window-end-is-free"),
        pytest.param(NOW + 11 * H, NOW + 13 * H, False, id="booking-inside-the-window-blocks"),
        pytest.param(NOW - 2 * H, None, False, id="open-ended-instance-blocks"),
        pytest.param(NOW + 13 * H, None, True, id="open-ended-after-the-window-is-free"),
    ],
)
def test_half_open_windows(start: datetime, end: datetime | None, fits: bool) -> None:
    snapshot = GpuSnapshot([node("a", 4)], booked("a", range(4), "x", start=start, end=end))
    assert plan_placement(snapshot, request(4)).fits is fits


@pytest.mark.parametrize(
    ("state", "free_spot", "fits"),
    [
        pytest.param("active", False, False, id="live-spot-blocks-by-default"),
        pytest.param("active", True, True, id="active-spot-is-free-with-free-spot"),
        pytest.param("placed", True, True, id="placed-spot-is-free-with-free-spot"),
        pytest.param("binding", True, True, id="binding-spot-is-free-with-free-spot"),
        pytest.param("released", True, False, id="spot-not-live-still-blocks"),
    ],
)
def test_free_spot(state: str, free_spot: bool, fits: bool) -> None:
    bookings = booked("a", range(4), "rsv_s", spot=True, state=state)
    result = plan_placement(GpuSnapshot([node("a")], bookings), request(4), free_spot=free_spot)
    assert result.fits is fits


def test_free_spot_never_frees_regular_bookings() -> None:
    bookings = booked("a", range(2), "rsv_s", spot=True) + booked("a", range(2, 4), "rsv_r")
    result = plan_placement(GpuSnapshot([node("a")], bookings), request(4), free_spot=True)
    assert result.reason == "no node fits (1 node): 1 × fits: 2 of 4 gpu free"


def test_the_snapshot_knows_each_atoms_node() -> None:
    snapshot = GpuSnapshot([node("b"), node("a")], [])
    assert [n.id for n in snapshot.nodes] == ["node_a", "node_b"]
    assert snapshot.node_of_atom("b-gpu3") == node("b")
    assert snapshot.node_of_atom("zz-gpu0") is None


def test_an_atom_on_two_nodes_is_a_bug() -> None:
    with pytest.raises(ValueError, match="listed twice"):
        GpuSnapshot([node("a"), GpuNode("node_x", "x", ("a-gpu0",))], [])


def test_replacing_one_nodes_bookings_matches_a_fresh_snapshot() -> None:
    nodes = [node("a"), node("b"), node("c")]
    before = booked("a", range(4), "i1") + booked("b", [0, 1], "i2") + booked("c", [3], "i3")
    after = booked("a", range(4), "i1") + booked("b", range(4), "i4") + booked("c", [3], "i3")
    updated = GpuSnapshot(nodes, before).with_bookings(["node_b"], booked("b", range(4), "i4"))
    fresh = GpuSnapshot(nodes, after)
    assert plan_placement(updated, request(1)) == plan_placement(fresh, request(1))
    assert plan_placement(updated, request(4)).reason == plan_placement(fresh, request(4)).reason


@pytest.mark.parametrize(
    ("node_ids", "bookings", "message"),
    [
        pytest.param(["node_x"], [], "does not have", id="unknown-node"),
        pytest.param(["node_a"], booked("b", [0], "i"), "not listed", id="booking-elsewhere"),
    ],
)
def test_replacing_bookings_refuses_mistakes(
    node_ids: list[str], bookings: list[AtomBooking], message: str
) -> None:
    snapshot = GpuSnapshot([node("a"), node("b")], [])
    with pytest.raises(ValueError, match=message):
        snapshot.with_bookings(node_ids, bookings)


def test_bookings_of_other_pools_atoms_are_ignored() -> None:
    snapshot = GpuSnapshot([node("a")], booked("zz", range(4), "ins_9"))
    assert snapshot.bookings_ignored == 4
    assert plan_placement(snapshot, request(4)).fits


# --- scoring ------------------------------------------------------------------------------


def test_packs_onto_the_node_with_the_fewest_free_gpus() -> None:
    snapshot = GpuSnapshot([node("a", 8), node("b", 8)], booked("b", range(5), "ins_1"))
    result = plan_placement(snapshot, request(2))
    assert [p.picks[0].node_id for p in result.plans] == ["node_b", "node_a"]
    assert [p.score for p in result.plans] == [1, 6]


def test_ties_go_to_the_lowest_node_id() -> None:
    snapshot = GpuSnapshot([node("c"), node("a"), node("b")], [])
    result = plan_placement(snapshot, request(4))
    assert [p.picks[0].node_id for p in result.plans] == ["node_a", "node_b", "node_c"]


def test_limit_caps_the_plans() -> None:
    snapshot = GpuSnapshot([node(str(i)) for i in range(10)], [])
    result = plan_placement(snapshot, request(4), limit=3)
    assert len(result.plans) == 3 and result.nodes_fit == 10


# --- explaining every no ------------------------------------------------------------------


def test_the_documents_reason() -> None:
    bookings = booked("a", range(4), "rsv_spot", spot=True) + booked("b", range(4), "rsv_reg")
    result = plan_placement(GpuSnapshot([node("a"), node("b")], bookings), request(4))
    assert not result.fits and result.plans == ()
    assert result.reason == "no node fits (2 nodes): 2 × fits: 0 of 4 gpu free"


def test_reasons_are_counted_most_frequent_first() -> None:
    nodes = [node("a"), node("b"), node("c"), node("d", draining=True), node("e", 2)]
    bookings = booked("a", [0], "i1") + booked("b", [0], "i2") + booked("c", range(4), "i3")
    result = plan_placement(GpuSnapshot(nodes, bookings), request(4))
    assert result.reason == (
        "no node fits (5 nodes): 2 × fits: 3 of 4 gpu free, 1 × draining, "
        "1 × fits: 0 of 4 gpu free, 1 × fits: 2 gpu, 4 needed"
    )


def test_an_empty_pool() -> None:
    assert plan_placement(GpuSnapshot([], []), request(1)).reason == "no node fits (0 nodes)"


def test_draining_nodes_take_nothing() -> None:
    result = plan_placement(GpuSnapshot([node("a", draining=True)], []), request(1))
    assert result.reason == "no node fits (1 node): 1 × draining"


# --- gangs and node leases ----------------------------------------------------------------


def test_a_gang_takes_distinct_nodes() -> None:
    snapshot = GpuSnapshot([node("a"), node("b"), node("c")], booked("c", [0], "i"))
    result = plan_placement(snapshot, request(2, nodes=2))
    best = result.plans[0]
    assert [p.node_id for p in best.picks] == ["node_c", "node_a"]
    assert all(len(p.atom_ids) == 2 for p in best.picks)


def test_gang_alternatives_are_disjoint() -> None:
    snapshot = GpuSnapshot([node(str(i)) for i in range(5)], [])
    result = plan_placement(snapshot, request(4, nodes=2))
    nodes = [p.node_id for plan in result.plans for p in plan.picks]
    assert len(result.plans) == 2 and len(nodes) == len(set(nodes)) == 4


def test_a_gang_is_all_or_nothing() -> None:
    snapshot = GpuSnapshot(
        [node("a"), node("b"), node("c")], booked("b", range(4), "i") + booked("c", range(4), "j")
    )
    result = plan_placement(snapshot, request(4, nodes=2))
    assert not result.fits and result.plans == ()
    assert result.reason == "only 1 of 2 nodes fit (3 nodes): 2 × fits: 0 of 4 gpu free"


def test_a_node_lease_takes_every_atom_of_a_whole_node() -> None:
    snapshot = GpuSnapshot([node("a", 8), node("b", 4)], [])
    result = plan_placement(snapshot, request(4, binding="node"))
    assert [(p.node_id, len(p.atom_ids)) for p in result.plans[0].picks] == [("node_b", 4)]
    assert [p.score for p in result.plans] == [0, 4]


def test_a_node_lease_needs_the_node_entirely_free() -> None:
    snapshot = GpuSnapshot([node("a", 8)], booked("a", [7], "ins_1"))
    result = plan_placement(snapshot, request(4, binding="node"))
    assert result.reason == "no node fits (1 node): 1 × fits: 7 of 8 gpu free, node lease needs all"


# --- requests ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        pytest.param({"binding": "node", "spot": True}, "cannot be spot", id="spot-node-lease"),
        pytest.param({"binding": "rack"}, "binding must be", id="unknown-binding"),
        pytest.param({"count": 0}, "at least 1", id="no-gpus"),
        pytest.param({"nodes": 0}, "at least 1", id="no-nodes"),
        pytest.param({"end": NOW}, "end after it starts", id="empty-window"),
    ],
)
def test_invalid_requests(kwargs: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {"count": 1, "start": NOW, "end": NOW + H, **kwargs}
    with pytest.raises(InvalidInputError, match=message):
        GpuRequest(**fields)  # type: ignore[arg-type]


def test_naive_times_are_taken_as_utc() -> None:
    naive = NOW.replace(tzinfo=None)
    bookings = [AtomBooking("a-gpu0", "i", naive - H, naive + H)]
    result = plan_placement(GpuSnapshot([node("a", 1)], bookings), request(1))
    assert not result.fits


# --- the index agrees with a plain overlap check -------------------------------------------

T0 = NOW.timestamp()


@st.composite
def spans(draw: st.DrawFn) -> list[AtomBooking]:
    found = []
    for i in range(draw(st.integers(0, 12))):
        start = draw(st.integers(-10, 20))
        length = draw(st.one_of(st.none(), st.integers(1, 15)))
        end = None if length is None else NOW + (start + length) * H
        spot, state = draw(st.booleans()), draw(st.sampled_from(["active", "placed", "released"]))
        found.append(
            AtomBooking(
                f"a-gpu{draw(st.integers(0, 7))}", f"h{i}", NOW + start * H, end, spot, state
            )
        )
    return found


@settings(max_examples=300, deadline=None)
@given(spans(), st.integers(-12, 22), st.integers(1, 12))
def test_window_masks_match_a_plain_overlap_check(
    bookings: list[AtomBooking], start: int, length: int
) -> None:
    window_start, window_end = NOW + start * H, NOW + (start + length) * H
    (index,) = GpuSnapshot([node("a", 8)], bookings).indexes()
    hard = soft = 0
    for b in bookings:
        if b.start < window_end and (b.end is None or b.end > window_start):
            bit = 1 << int(b.atom_id.removeprefix("a-gpu"))
            if b.freeable:
                soft |= bit
            else:
                hard |= bit
    expected = (hard, soft & ~hard)
    assert window_masks(index, window_start.timestamp(), window_end.timestamp()) == expected

"""Spot preemption (document 003): deadline, fewest victims, cut back/requeue, preview, privacy."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bcfleet.domain.gpu_plan import AtomBooking, GpuNode, GpuRequest, GpuSnapshot
from bcfleet.domain.notices import (
    ANONYMOUS_MESSAGE,
    Preemptor,
    condition,
    event_payload,
    notice,
    released_payload,
)
from bcfleet.domain.preemption import (
    CUT_BACK,
    REQUEUE,
    Victim,
    deadline,
    epoch_ms,
    plan_preemption,
    preview,
)

NOW = datetime(2026, 9, 21, 10, 0, tzinfo=UTC)
H = timedelta(hours=1)
M = timedelta(minutes=1)
TWO_MINUTES = 2 * M


def node(name: str, gpus: int = 4, *, draining: bool = False) -> GpuNode:
    return GpuNode(f"node_{name}", name, tuple(f"{name}-gpu{i}" for i in range(gpus)), draining)


def spot(
    name: str,
    atoms: range | list[int],
    holder: str,
    *,
    start: datetime = NOW - H,
    end: datetime = NOW + 11 * H,
    state: str = "active",
) -> list[AtomBooking]:
    return [AtomBooking(f"{name}-gpu{i}", holder, start, end, True, state) for i in atoms]


def regular(name: str, atoms: range | list[int], holder: str) -> list[AtomBooking]:
    return [AtomBooking(f"{name}-gpu{i}", holder, NOW - H, NOW + 11 * H) for i in atoms]


def request(count: int = 4, *, start: datetime = NOW, **kwargs: object) -> GpuRequest:
    return GpuRequest(count, start, start + 12 * H, **kwargs)  # type: ignore[arg-type]


def full_node_with_spot(**kwargs: object) -> GpuSnapshot:
    """The document's case: a 4-GPU spot reservation on a full 4-GPU node, a full regular one."""
    bookings = spot("a", range(4), "rsv_spot", **kwargs) + regular("b", range(4), "rsv_reg")  # type: ignore[arg-type]
    return GpuSnapshot([node("a"), node("b")], bookings)


# --- step 1: the deadline ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "notice", "expected"),
    [
        pytest.param(NOW, TWO_MINUTES, NOW + TWO_MINUTES, id="now-plus-notice"),
        pytest.param(NOW + H, TWO_MINUTES, NOW + H, id="a-later-start-wins"),
        pytest.param(NOW + M, 5 * M, NOW + 5 * M, id="configured-notice"),
        pytest.param(NOW - H, TWO_MINUTES, NOW + TWO_MINUTES, id="a-past-start"),
    ],
)
def test_deadline(start: datetime, notice: timedelta, expected: datetime) -> None:
    assert deadline(start, NOW, notice) == expected


# --- what the victim sees ------------------------------------------------------------------


def test_a_started_spot_reservation_is_cut_back_at_the_deadline() -> None:
    plan = plan_preemption(full_node_with_spot(), request(4), NOW, TWO_MINUTES)
    assert plan is not None
    assert plan.start == NOW + TWO_MINUTES and plan.end == NOW + TWO_MINUTES + 12 * H
    assert [(p.node_id, p.atom_ids) for p in plan.picks] == [
        ("node_a", ("a-gpu0", "a-gpu1", "a-gpu2", "a-gpu3"))
    ]
    assert plan.victims == (Victim("rsv_spot", CUT_BACK, NOW - H, NOW + TWO_MINUTES),)


def test_a_spot_reservation_starting_after_the_deadline_is_requeued() -> None:
    snapshot = full_node_with_spot(start=NOW + 10 * M)
    plan = plan_preemption(snapshot, request(4), NOW, TWO_MINUTES)
    assert plan is not None
    assert plan.victims == (Victim("rsv_spot", REQUEUE, NOW + 10 * M, None),)


@pytest.mark.parametrize(
    ("victim_start", "action"),
    [
        pytest.param(NOW + TWO_MINUTES, REQUEUE, id="starting-exactly-at-the-deadline-requeues"),
        pytest.param(NOW + 119 * timedelta(seconds=1), CUT_BACK, id="starting-before-it-is-cut"),
        pytest.param(NOW, CUT_BACK, id="starting-now-is-cut"),
    ],
)
def test_the_deadline_splits_cut_back_from_requeue(victim_start: datetime, action: str) -> None:
    plan = plan_preemption(full_node_with_spot(start=victim_start), request(4), NOW, TWO_MINUTES)
    assert plan is not None and plan.victims[0].action == action


def test_a_future_request_uses_its_own_start_as_deadline() -> None:
    plan = plan_preemption(full_node_with_spot(), request(4, start=NOW + 3 * H), NOW, TWO_MINUTES)
    assert plan is not None and plan.start == NOW + 3 * H
    assert plan.victims[0].action == CUT_BACK and plan.victims[0].new_end == NOW + 3 * H


def test_spot_work_ending_before_the_deadline_is_not_a_victim() -> None:
    snapshot = full_node_with_spot(end=NOW + M)
    plan = plan_preemption(snapshot, request(4), NOW, TWO_MINUTES)
    assert plan is not None and plan.victims == () and plan.start == NOW + TWO_MINUTES


# --- who may preempt and who may be preempted ----------------------------------------------


def test_a_spot_request_never_preempts() -> None:
    assert plan_preemption(full_node_with_spot(), request(4, spot=True), NOW, TWO_MINUTES) is None


def test_a_node_lease_never_preempts() -> None:
    snapshot = full_node_with_spot()
    assert plan_preemption(snapshot, request(4, binding="node"), NOW, TWO_MINUTES) is None


def test_regular_reservations_are_never_victims() -> None:
    snapshot = GpuSnapshot([node("b")], regular("b", range(4), "rsv_reg"))
    assert plan_preemption(snapshot, request(4), NOW, TWO_MINUTES) is None


@pytest.mark.parametrize("state", ["placed", "binding", "active"])
def test_every_live_spot_state_is_preemptible(state: str) -> None:
    plan = plan_preemption(full_node_with_spot(state=state), request(4), NOW, TWO_MINUTES)
    assert plan is not None and plan.victim_ids == ("rsv_spot",)


def test_spot_work_that_is_not_live_is_not_preemptible() -> None:
    snapshot = full_node_with_spot(state="released")
    assert plan_preemption(snapshot, request(4), NOW, TWO_MINUTES) is None


def test_draining_nodes_are_never_planned() -> None:
    snapshot = GpuSnapshot([node("a", draining=True)], spot("a", range(4), "rsv_spot"))
    assert plan_preemption(snapshot, request(4), NOW, TWO_MINUTES) is None


def test_a_mix_of_spot_and_regular_on_one_node_is_not_enough() -> None:
    bookings = spot("a", range(2), "rsv_spot") + regular("a", range(2, 4), "rsv_reg")
    snapshot = GpuSnapshot([node("a")], bookings)
    assert plan_preemption(snapshot, request(4), NOW, TWO_MINUTES) is None
    plan = plan_preemption(snapshot, request(2), NOW, TWO_MINUTES)
    assert plan is not None and plan.picks[0].atom_ids == ("a-gpu0", "a-gpu1")


# --- step 3: fewest victims, then score, at most `limit` compared ---------------------------


def test_fewest_victims_beat_a_better_score() -> None:
    bookings = (
        spot("a", [0, 1], "rsv_a1") + spot("a", [2, 3], "rsv_a2") + spot("b", range(8), "rsv_b")
    )
    plan = plan_preemption(GpuSnapshot([node("a"), node("b", 8)], bookings), request(4), NOW)
    assert plan is not None
    assert plan.picks[0].node_id == "node_b" and plan.victim_ids == ("rsv_b",)
    assert plan.score == 4


def test_with_equal_victims_the_better_score_wins() -> None:
    bookings = spot("a", range(8), "rsv_a") + spot("b", range(4), "rsv_b")
    plan = plan_preemption(GpuSnapshot([node("a", 8), node("b")], bookings), request(4), NOW)
    assert plan is not None and plan.victim_ids == ("rsv_b",) and plan.score == 0


def test_on_one_node_the_smaller_victim_is_preempted() -> None:
    bookings = spot("a", range(6), "rsv_big") + spot("a", [6, 7], "rsv_small")
    plan = plan_preemption(GpuSnapshot([node("a", 8)], bookings), request(2), NOW)
    assert plan is not None and plan.victim_ids == ("rsv_small",)
    assert plan.picks[0].atom_ids == ("a-gpu6", "a-gpu7")


def test_free_atoms_are_taken_before_preempting_more() -> None:
    bookings = spot("a", [0, 1], "rsv_1") + spot("a", [2, 3], "rsv_2")
    plan = plan_preemption(GpuSnapshot([node("a", 6)], bookings), request(4), NOW)
    assert plan is not None and len(plan.victims) == 1
    assert set(plan.picks[0].atom_ids) >= {"a-gpu4", "a-gpu5"}


def test_an_atom_held_twice_in_the_window_frees_only_with_both_holders() -> None:
    first = spot("a", [0], "rsv_now", end=NOW + H)
    second = spot("a", [0], "rsv_later", start=NOW + H, end=NOW + 5 * H)
    plan = plan_preemption(GpuSnapshot([node("a", 1)], first + second), request(1), NOW)
    assert plan is not None
    assert plan.victims == (
        Victim("rsv_later", REQUEUE, NOW + H, None),
        Victim("rsv_now", CUT_BACK, NOW - H, NOW + TWO_MINUTES),
    )


def two_victim_nodes_then_a_one_victim_node() -> GpuSnapshot:
    bookings = []
    for name in ("a", "b"):
        bookings += spot(name, [0, 1], f"rsv_{name}1") + spot(name, [2, 3], f"rsv_{name}2")
    bookings += spot("c", range(4), "rsv_c")
    return GpuSnapshot([node("a"), node("b"), node("c")], bookings)


@pytest.mark.parametrize(
    ("limit", "victims", "compared"),
    [
        pytest.param(1, ("rsv_a1", "rsv_a2"), 1, id="limit-1-takes-the-first-fitting-node"),
        pytest.param(2, ("rsv_a1", "rsv_a2"), 2, id="limit-2-never-sees-the-third-node"),
        pytest.param(3, ("rsv_c",), 3, id="limit-3-finds-the-single-victim"),
    ],
)
def test_at_most_limit_plans_are_compared(
    limit: int, victims: tuple[str, ...], compared: int
) -> None:
    plan = plan_preemption(two_victim_nodes_then_a_one_victim_node(), request(4), NOW, limit=limit)
    assert plan is not None and plan.victim_ids == victims and plan.compared == compared


def test_the_default_limit_is_64() -> None:
    nodes = [node(f"n{i:03d}") for i in range(100)]
    bookings = [b for i in range(100) for b in spot(f"n{i:03d}", range(4), f"rsv_{i:03d}")]
    plan = plan_preemption(GpuSnapshot(nodes, bookings), request(4), NOW)
    assert plan is not None and plan.compared == 64


# --- gangs --------------------------------------------------------------------------------


def test_a_gang_counts_a_victim_spanning_its_nodes_once() -> None:
    bookings = (
        spot("a", range(4), "rsv_a")
        + spot("b", range(4), "rsv_gang")
        + spot("c", range(4), "rsv_gang")
    )
    snapshot = GpuSnapshot([node("a"), node("b"), node("c")], bookings)
    plan = plan_preemption(snapshot, request(4, nodes=2), NOW)
    assert plan is not None
    assert [p.node_id for p in plan.picks] == ["node_b", "node_c"]
    assert plan.victim_ids == ("rsv_gang",)


def test_a_gang_reuses_a_victim_already_chosen_on_another_node() -> None:
    bookings = (
        spot("a", range(4), "rsv_gang") + spot("b", [0, 1], "rsv_gang") + spot("b", [2, 3], "rsv_b")
    )
    snapshot = GpuSnapshot([node("a"), node("b")], bookings)
    plan = plan_preemption(snapshot, request(2, nodes=2), NOW)
    assert plan is not None and plan.victim_ids == ("rsv_gang",)
    assert plan.picks[1].atom_ids == ("b-gpu0", "b-gpu1")


def test_a_gang_needs_every_member() -> None:
    bookings = spot("a", range(4), "rsv_a") + regular("b", range(4), "rsv_reg")
    snapshot = GpuSnapshot([node("a"), node("b")], bookings)
    assert plan_preemption(snapshot, request(4, nodes=2), NOW) is None


def test_a_gang_of_two_preempts_the_fewest() -> None:
    plan = plan_preemption(two_victim_nodes_then_a_one_victim_node(), request(4, nodes=2), NOW)
    assert plan is not None
    assert [p.node_id for p in plan.picks] == ["node_a", "node_c"]
    assert plan.victim_ids == ("rsv_a1", "rsv_a2", "rsv_c")


# --- capacity.preview ----------------------------------------------------------------------


def test_preview_of_a_request_that_fits() -> None:
    snapshot = GpuSnapshot([node("a"), node("b")], regular("b", range(4), "rsv_reg"))
    assert preview(snapshot, request(4), NOW, TWO_MINUTES) == {
        "fits": True,
        "candidates": [{"id": "node_a", "name": "a"}],
        "reason": None,
    }


def test_preview_of_a_request_that_fits_by_preempting() -> None:
    assert preview(full_node_with_spot(), request(4), NOW, TWO_MINUTES) == {
        "fits": False,
        "candidates": [],
        "reason": "no node fits (2 nodes): 2 × fits: 0 of 4 gpu free",
        "preemptible": {"reservations": 1, "startsAt": epoch_ms(NOW + TWO_MINUTES)},
    }


def test_preview_starts_at_follows_the_notice_setting() -> None:
    body = preview(full_node_with_spot(), request(4), NOW, 5 * M)
    assert body["preemptible"]["startsAt"] == epoch_ms(NOW) + 300_000


def test_starts_at_is_epoch_milliseconds() -> None:
    assert epoch_ms(datetime(2026, 9, 21, 10, 2, tzinfo=UTC)) == 1_789_984_920_000


@pytest.mark.parametrize(
    "kwargs",
    [
        pytest.param({"spot": True}, id="spot-request-never-has-preemptible"),
        pytest.param({"binding": "node"}, id="node-lease-never-has-preemptible"),
    ],
)
def test_preview_without_preemptible(kwargs: dict[str, object]) -> None:
    body = preview(full_node_with_spot(), request(4, **kwargs), NOW, TWO_MINUTES)
    assert body["fits"] is False and "preemptible" not in body


def test_preview_when_even_preempting_does_not_help() -> None:
    snapshot = GpuSnapshot([node("b")], regular("b", range(4), "rsv_reg"))
    body = preview(snapshot, request(4), NOW, TWO_MINUTES)
    assert body == {
        "fits": False,
        "candidates": [],
        "reason": "no node fits (1 node): 1 × fits: 0 of 4 gpu free",
        "preemptReason": "no spot reservation in the pool overlaps the request's window: "
        "nothing to preempt",
    }


def test_preview_never_names_a_reservation() -> None:
    body = preview(two_victim_nodes_then_a_one_victim_node(), request(4, nodes=2), NOW)
    assert body["preemptible"]["reservations"] == 3
    assert "rsv_" not in json.dumps(body)


# --- notices never name another tenant -----------------------------------------------------

OWN = Preemptor("acme", "rsv_01PREEMPTOR")
FOREIGN = Preemptor("globex", "rsv_01PREEMPTOR")
DEADLINE = NOW + TWO_MINUTES


@pytest.mark.parametrize(
    ("requeued", "condition_type"),
    [
        pytest.param(False, "Preempted", id="cut-back-gets-preempted"),
        pytest.param(True, "Unschedulable", id="requeued-gets-unschedulable"),
    ],
)
def test_conditions(requeued: bool, condition_type: str) -> None:
    assert condition("acme", OWN, requeued=requeued) == {
        "type": condition_type,
        "status": "True",
        "reason": "SpotPreempted",
        "message": "preempted by rsv_01PREEMPTOR",
    }
    foreign = condition("acme", FOREIGN, requeued=requeued)
    assert foreign["message"] == ANONYMOUS_MESSAGE == "preempted by a non-spot reservation"


def test_same_tenant_events_carry_by() -> None:
    assert event_payload("acme", "rsv_victim", OWN, at=DEADLINE, requeued=False) == {
        "reservationId": "rsv_victim",
        "reason": "SpotPreempted",
        "message": "preempted by rsv_01PREEMPTOR",
        "at": "2026-09-21T10:02:00Z",
        "by": "rsv_01PREEMPTOR",
    }


def test_another_tenants_events_have_no_by() -> None:
    payload = event_payload("acme", "rsv_victim", FOREIGN, at=DEADLINE, requeued=True)
    assert payload == {
        "reservationId": "rsv_victim",
        "reason": "SpotPreempted",
        "message": "preempted by a non-spot reservation",
        "at": "2026-09-21T10:02:00Z",
        "requeued": True,
    }


@pytest.mark.parametrize(
    ("requeued", "event_type", "condition_type"),
    [
        pytest.param(False, "reservation.preempting", "Preempted", id="cut-back-is-preempting"),
        pytest.param(True, "reservation.preempted", "Unschedulable", id="requeued-is-preempted"),
    ],
)
def test_notice_pairs_condition_and_event(
    requeued: bool, event_type: str, condition_type: str
) -> None:
    told = notice("acme", "rsv_victim", OWN, at=DEADLINE, requeued=requeued)
    assert told.event_type == event_type and told.condition["type"] == condition_type
    assert ("requeued" in told.payload) is requeued


def test_released_at_the_deadline_follows_the_same_rule() -> None:
    own = released_payload("acme", "rsv_victim", OWN, at=DEADLINE)
    assert own == {
        "reservationId": "rsv_victim",
        "reason": "preempted",
        "at": "2026-09-21T10:02:00Z",
        "by": "rsv_01PREEMPTOR",
    }
    assert "by" not in released_payload("acme", "rsv_victim", FOREIGN, at=DEADLINE)


@pytest.mark.parametrize("requeued", [False, True])
def test_nothing_a_victim_reads_names_another_tenants_reservation(requeued: bool) -> None:
    told = notice("acme", "rsv_victim", FOREIGN, at=DEADLINE, requeued=requeued)
    released = released_payload("acme", "rsv_victim", FOREIGN, at=DEADLINE)
    readable = json.dumps([told.condition, told.payload, released])
    assert FOREIGN.reservation_id not in readable and "globex" not in readable


# --- properties ---------------------------------------------------------------------------

HOLDERS = [f"rsv_{i}" for i in range(6)]


@st.composite
def pools(draw: st.DrawFn) -> tuple[GpuSnapshot, list[AtomBooking]]:
    """Up to 4 nodes; reservations with one window and state each, booking random atoms."""
    sizes = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
    nodes = [
        node(f"n{i}", size, draining=i == 0 and draw(st.booleans())) for i, size in enumerate(sizes)
    ]
    atoms = [atom for gpu_node in nodes for atom in gpu_node.atoms]
    bookings = []
    for holder in HOLDERS:
        start = NOW + draw(st.integers(-4, 16)) * 30 * M
        end = start + draw(st.integers(1, 30)) * 30 * M
        state = draw(st.sampled_from(["active", "placed", "binding", "released"]))
        held = draw(st.sets(st.sampled_from(atoms), max_size=4))
        is_spot = holder in HOLDERS[:4]
        bookings += [AtomBooking(atom, holder, start, end, is_spot, state) for atom in sorted(held)]
    return GpuSnapshot(nodes, bookings), bookings


def overlapping(
    bookings: list[AtomBooking], atom: str, start: datetime, end: datetime
) -> list[AtomBooking]:
    return [
        b
        for b in bookings
        if b.atom_id == atom and b.start < end and (b.end is None or b.end > start)
    ]


def fewest_victims_by_brute_force(
    snapshot: GpuSnapshot,
    bookings: list[AtomBooking],
    req: GpuRequest,
    start: datetime,
    end: datetime,
) -> int | None:
    best = None
    for gpu_node in snapshot.nodes:
        if gpu_node.draining:
            continue
        holders = sorted(
            {
                b.holder_id
                for a in gpu_node.atoms
                for b in overlapping(bookings, a, start, end)
                if b.freeable
            }
        )
        for size in range(len(holders) + 1):
            if best is not None and size >= best:
                break
            if any(
                sum(
                    all(
                        b.freeable and b.holder_id in chosen
                        for b in overlapping(bookings, a, start, end)
                    )
                    for a in gpu_node.atoms
                )
                >= req.count
                for chosen in map(set, combinations(holders, size))
            ):
                best = size
                break
    return best


@settings(max_examples=400, deadline=None)
@given(pools(), st.integers(1, 3), st.integers(1, 2), st.integers(0, 6))
def test_a_plan_never_double_books_and_only_preempts_spot(
    pool: tuple[GpuSnapshot, list[AtomBooking]], count: int, nodes: int, start_steps: int
) -> None:
    snapshot, bookings = pool
    req = request(count, start=NOW + start_steps * 30 * M, nodes=nodes)
    plan = plan_preemption(snapshot, req, NOW, TWO_MINUTES)
    if plan is None:
        return
    victims = set(plan.victim_ids)
    assert len({p.node_id for p in plan.picks}) == nodes
    for gpu_pick in plan.picks:
        assert len(gpu_pick.atom_ids) == len(set(gpu_pick.atom_ids)) == count
        for atom in gpu_pick.atom_ids:
            for booking in overlapping(bookings, atom, plan.start, plan.end):
                assert booking.freeable and booking.holder_id in victims
    for victim in plan.victims:
        held = [b for b in bookings if b.holder_id == victim.reservation_id]
        assert held and all(b.freeable for b in held)
        assert (victim.action == CUT_BACK) is (victim.start < plan.start)
    if nodes == 1:
        assert len(victims) == fewest_victims_by_brute_force(
            snapshot, bookings, req, plan.start, plan.end
        )

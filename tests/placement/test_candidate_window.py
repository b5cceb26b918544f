"""A fleet handle's kept candidate window (SQLite): a placement answered from it lands where a
fresh read of the candidate page would have it land; a write by another handle, or a placement
rolled back, leaves no window the next placement uses; PostgreSQL keeps none."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from bcfleet.clock import FakeClock
from bcfleet.domain.fit import weigher
from bcfleet.fleet import Fleet
from bcfleet.ids import IdFactory
from bcfleet.placement.candidate_window import CandidateWindow
from bcfleet.placement.candidates import Candidates, feasible_candidates, row_fractions
from bcfleet.settings import FleetSettings
from bcfleet.store.models import Instance
from bcfleet.store.uow import current_revision
from bench.common import seed_pool
from tests.support.builders import OP
from tests.support.capacity import invariants_ok
from tests.support.fleet import T0, open_fleet

SMALL = {"vcpu": 2, "memoryGiB": 4, "diskGiB": 40}  # seed_pool's flavor b1.small
LARGE = {"vcpu": 4, "memoryGiB": 8, "diskGiB": 80}


def handle(url: str, seed: int = 7, strategy: str = "spread") -> Fleet:
    """A fleet handle on `url` with seeded ids (so its first search starts at the first host)."""
    settings = FleetSettings(db_url=url, placement_strategy=strategy)
    return Fleet.open(url, clock=FakeClock(T0), settings=settings, ids=IdFactory(seed=seed))


def placed(fleet: Fleet, made: dict[str, Any]) -> tuple[str | None, str]:
    """The host an instance was placed on (None: pending; the answer's nodeId is opaque to the
    guest tenant) and the instance's id."""
    with fleet.read() as session:
        row = session.get(Instance, made["id"])
        assert row is not None
        return row.node_id, row.id


def create(fleet: Fleet, pool: dict[str, Any], flavor: str = "b1.small", **kw: Any) -> Any:
    """Where a create placed its instance, and the instance's id."""
    made = fleet.api.instances.create(
        OP, tenant_id="bench", pool_id=pool["id"], flavor=flavor, **kw
    )
    return placed(fleet, made)


def create_without_window(fleet: Fleet, pool: dict[str, Any], flavor: str = "b1.small") -> Any:
    """The same create inside an enclosing transaction, which never uses a window."""
    with fleet.transaction() as joined:
        made = joined.api.instances.create(OP, tenant_id="bench", pool_id=pool["id"], flavor=flavor)
    return placed(fleet, made)


def host_ids(fleet: Fleet) -> list[str]:
    return sorted(h["id"] for h in fleet.api.hosts.list(OP)["items"])


def fresh_choice(fleet: Fleet, pool: dict[str, Any], claims: dict[str, int] = SMALL) -> str:
    """The host a placement picks from the candidate page read now from the handle's cursor."""
    with fleet.read() as session:
        found = feasible_candidates(session, pool["id"], claims, gpus=0, needs_label=False,
                                    want=16, now=fleet.now(), context=fleet.placement)  # fmt: skip
    return next(found.ranked(weigher(fleet.settings.placement_strategy))).node_id


def window_choice(fleet: Fleet, pool: dict[str, Any]) -> str | None:
    """The host a placement would pick from the kept window as it is, were it used."""
    kept = fleet.placement.window(pool["id"])
    cursor = fleet.placement.cursor(pool["id"])
    page = None if kept is None or cursor is None else kept.page(cursor, 16)
    if not page or not page[0]:
        return None
    rows, fractions = page  # ranked by the weights the window kept, as a placement ranks them
    ranked = Candidates(rows, {}, fractions).ranked(weigher(fleet.settings.placement_strategy))
    return next(ranked).node_id


def revision(fleet: Fleet) -> int:
    with fleet.read() as session:
        return current_revision(session)


def add_large_flavor(fleet: Fleet, pool: dict[str, Any]) -> None:
    fleet.api.flavors.create(OP, tenant_id="root", pool_id=pool["id"], name="b1.large",
                             vcpu=4, memory_gib=8, disk_gib=80)  # fmt: skip


SCENARIOS = [
    # (hosts, vcpu, memory GiB, ratio, strategy, placements, flavors in turn)
    pytest.param(150, 64, 256, 2.0, "spread", 120, ["b1.small"], id="a-large-pool"),
    pytest.param(40, 8, 8, 1.0, "pack", 90, ["b1.small"], id="hosts-fill-up-packed"),
    pytest.param(40, 8, 8, 1.0, "spread", 90, ["b1.small"], id="hosts-fill-up-spread"),
    pytest.param(24, 64, 256, 2.0, "spread", 150, ["b1.small"], id="the-cursor-wraps-round"),
    pytest.param(5, 8, 16, 1.0, "spread", 24, ["b1.small"], id="a-small-pool"),
    pytest.param(
        60,
        16,
        64,
        1.0,
        "spread",
        150,
        ["b1.small", "b1.large", "b1.small"],
        id="two-flavors-in-turn",
    ),  # fmt: skip
]


@pytest.mark.parametrize(
    ("hosts", "vcpu", "memory", "ratio", "strategy", "placements", "flavors"), SCENARIOS
)
def test_every_placement_lands_where_it_would_without_a_window(
    tmp_path: Path,
    hosts: int,
    vcpu: int,
    memory: int,
    ratio: float,
    strategy: str,
    placements: int,
    flavors: list[str],
) -> None:
    kept, plain = (handle(f"sqlite:///{tmp_path / name}.db", strategy=strategy) for name in "ab")
    try:
        pools = [
            seed_pool(f, hosts, vcpu=vcpu, memory_gib=memory, ratio=ratio) for f in (kept, plain)
        ]
        for fleet, pool in zip((kept, plain), pools, strict=True):
            add_large_flavor(fleet, pool)
        assert host_ids(kept) == host_ids(plain)  # the same seeded ids
        answered = 0
        for n in range(placements):
            flavor = flavors[n % len(flavors)]
            before = kept.placement.window(pools[0]["id"])
            with_window = create(kept, pools[0], flavor)[0]
            assert with_window == create_without_window(plain, pools[1], flavor)[0], n
            after = kept.placement.window(pools[0]["id"])
            if after is not None:  # the kept weights are those of the rows as kept
                assert after.fractions == tuple(row_fractions(after.rows)), n
            if after is not None and before is not None and after.after == before.after:
                answered += 1  # the window was not read again
        invariants_ok(kept)
        if hosts >= 40:  # a window holds enough rows after the cursor: it answered placements
            assert answered > placements // 5
    finally:
        kept.close()
        plain.close()


@pytest.fixture
def two_handles(sqlite_url: str) -> Iterator[tuple[Fleet, Fleet, dict[str, Any]]]:
    """Our handle A and another handle B on the same SQLite file, and a pool of 40 hosts."""
    a = open_fleet(sqlite_url, FakeClock(T0))
    b = handle(sqlite_url, seed=11)
    try:
        yield a, b, seed_pool(b, 40, vcpu=8, memory_gib=64, ratio=1.0)
    finally:
        a.close()
        b.close()


def test_the_next_placement_is_answered_from_the_window_kept_at_the_committed_revision(
    two_handles: tuple[Fleet, Fleet, dict[str, Any]],
) -> None:
    a, _, pool = two_handles
    create(a, pool)
    first = a.placement.window(pool["id"])
    assert first is not None and first.revision == revision(a)
    expected = fresh_choice(a, pool)
    assert create(a, pool)[0] == expected
    second = a.placement.window(pool["id"])
    assert second is not None and second.revision == revision(a)
    # Not read again: the same rows but the one claimed
    assert (second.after, second.rows[0], second.rows[2:]) == (
        first.after,
        first.rows[0],
        first.rows[2:],
    )


def _b_places(a: Fleet, b: Fleet, pool: dict[str, Any]) -> None:
    del a
    create(b, pool)


def _b_drains(a: Fleet, b: Fleet, pool: dict[str, Any]) -> None:
    b.api.hosts.set_state(OP, host=fresh_choice(a, pool), draining=True)


@pytest.mark.parametrize(
    "write",
    [pytest.param(_b_places, id="places"), pytest.param(_b_drains, id="drains-a-host")],
)
def test_a_write_by_another_handle_makes_the_next_placement_read_again(
    two_handles: tuple[Fleet, Fleet, dict[str, Any]], write: Any
) -> None:
    a, b, pool = two_handles
    create(a, pool)
    write(a, b, pool)
    expected = fresh_choice(a, pool)
    assert window_choice(a, pool) != expected  # the kept rows would answer otherwise
    cursor = a.placement.cursor(pool["id"])
    assert create(a, pool)[0] == expected
    window = a.placement.window(pool["id"])
    assert window is not None and window.after == cursor  # read again from the cursor
    invariants_ok(a)


def test_an_instance_deleted_by_another_handle_is_seen_by_the_next_placement(
    two_handles: tuple[Fleet, Fleet, dict[str, Any]],
) -> None:
    a, b, pool = two_handles
    theirs = dict(create(b, pool) for _ in range(40))  # one on each host
    assert len(theirs) == 40
    create(a, pool)
    freed = host_ids(a)[5]
    b.api.instances.delete(OP, theirs[freed])
    expected = fresh_choice(a, pool)
    assert expected == freed and window_choice(a, pool) != expected
    assert create(a, pool)[0] == expected
    invariants_ok(a)


def test_a_placement_rolled_back_leaves_no_window_a_later_revision_matches(
    two_handles: tuple[Fleet, Fleet, dict[str, Any]],
) -> None:
    a, b, pool = two_handles
    create(a, pool)
    with a.engine.begin() as connection:  # a failure after the claim: the instance's INSERT
        connection.execute(
            text(
                "CREATE TRIGGER doomed BEFORE INSERT ON instances WHEN NEW.name = 'doomed' "
                "BEGIN SELECT RAISE(ABORT, 'injected'); END"
            )
        )
    at = revision(a)
    with pytest.raises(Exception, match="injected"):
        create(a, pool, name="doomed")
    assert revision(a) == at  # rolled back
    kept = a.placement.window(pool["id"])
    assert kept is None or kept.revision == at  # as the last commit left the rows, if any
    _b_drains(a, b, pool)  # another writer's commit: the revision the doomed one would have made
    assert revision(a) == at + 1
    kept = a.placement.window(pool["id"])
    assert kept is None or kept.revision != at + 1
    expected = fresh_choice(a, pool)
    assert create(a, pool)[0] == expected
    invariants_ok(a)


def test_a_claimed_row_carries_its_claim_and_leaves_when_full() -> None:
    row = ("node_a", None, 1, 8, 1.0, 8, 4, 64, 1.0, 64, 0, 100, 1.0, 100, 0)
    window = CandidateWindow.of(3, "pool_x", (2, 4, 40), "", [row])
    once = window.with_claim("node_a", 4)
    assert once.revision == 4
    assert once.rows == (("node_a", None, 1, 8, 1.0, 8, 6, 64, 1.0, 64, 4, 100, 1.0, 100, 40),)
    full = once.with_claim("node_a", 5)  # vcpu 8 of 8: the next claim does not fit
    assert once.fractions == (((8 - 6) / 8 + (64 - 4) / 64 + (100 - 40) / 100) / 3,)
    assert window.fractions == (((8 - 4) / 8 + 1.0 + 1.0) / 3,)
    assert (full.ids, full.rows, full.fractions) == ((), (), ())
    assert window.with_claim("node_b", 4).rows == window.rows  # another host: as it was


def test_postgresql_keeps_no_window(pg_url: str) -> None:
    a = open_fleet(pg_url, FakeClock(T0))
    try:
        pool = seed_pool(a, 20)
        for _ in range(3):
            expected = fresh_choice(a, pool)
            assert create(a, pool)[0] == expected
        assert a.placement.window(pool["id"]) is None
    finally:
        a.close()


def test_threads_placing_through_one_handle_never_overbook(sqlite_url: str) -> None:
    a = open_fleet(sqlite_url, FakeClock(T0))
    try:
        pool = seed_pool(a, 60, vcpu=8, memory_gib=8, ratio=1.0)  # two b1.small a host
        with ThreadPoolExecutor(max_workers=4) as executor:
            hosts = list(executor.map(lambda _: create(a, pool)[0], range(150)))
        placed = Counter(h for h in hosts if h is not None)
        assert sum(placed.values()) == 120 and max(placed.values()) == 2
        assert hosts.count(None) == 30
        invariants_ok(a)
    finally:
        a.close()

"""A placement's candidates ranked from the search's rows: the order ranking their snapshots
gives, with a snapshot made only for a host the placement reaches."""

from __future__ import annotations

import pytest

from bcfleet.domain import fit
from bcfleet.domain.fit import HostSnapshot, Weigher, pack, rank, spread
from bcfleet.fleet import Fleet
from bcfleet.placement.candidates import Candidates, feasible_candidates
from tests.support.capacity import create, pool_with_hosts, small_flavor

CLAIMS = {"vcpu": 1, "memoryGiB": 1, "diskGiB": 1}


def _candidates(fleet: Fleet, pool_id: str, *, needs_label: bool = False) -> Candidates:
    with fleet.read() as session:
        return feasible_candidates(session, pool_id, CLAIMS, gpus=0, needs_label=needs_label,
                                   want=16, now=fleet.now(), context=fleet.placement)  # fmt: skip


def _pool_with_guests(fleet: Fleet) -> str:
    """Five hosts, three holding a guest each, two empty: ties for the node id to break."""
    pool = pool_with_hosts(fleet, hosts=5)
    flavor = small_flavor(fleet, pool)["name"]
    for _ in range(3):
        create(fleet, pool, flavor)
    return str(pool["id"])


@pytest.mark.parametrize(
    "by", [spread, pack, lambda h: -len(h.node_id)], ids=["spread", "pack", "other"]
)
def test_candidates_rank_as_their_snapshots(any_fleet: Fleet, by: Weigher) -> None:
    found = _candidates(any_fleet, _pool_with_guests(any_fleet))
    assert len(found) == 5
    ranked = list(found.ranked(by))
    assert ranked == rank(found.snapshots(), by)
    held = [h.node_id for h in ranked if not h.holds_nothing]
    assert len(held) == 3


def test_a_snapshot_is_made_only_for_a_host_reached(
    any_fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = _candidates(any_fleet, _pool_with_guests(any_fleet))
    made: list[str] = []
    of_candidate = HostSnapshot.of_candidate

    def counted(node_id: str, *args: object, **kwargs: object) -> HostSnapshot:
        made.append(node_id)
        return of_candidate(node_id, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(fit.HostSnapshot, "of_candidate", counted)
    first = next(found.ranked(spread))
    assert made == [first.node_id]
    assert first.holds_nothing  # spread: an empty host first


def test_a_candidate_left_out_is_not_ranked(any_fleet: Fleet) -> None:
    found = _candidates(any_fleet, _pool_with_guests(any_fleet))
    best = next(found.ranked(spread)).node_id
    rest = found.without({best})
    assert len(rest) == 4
    assert [h.node_id for h in rest.ranked(spread)] == [
        h.node_id for h in found.ranked(spread) if h.node_id != best
    ]
    assert {n for n, _ in rest.generations()} == {h.node_id for h in rest.snapshots()}


def test_a_label_search_keeps_only_hosts_with_the_capability(any_fleet: Fleet) -> None:
    pool = pool_with_hosts(any_fleet, hosts=2, labels=None)
    assert len(_candidates(any_fleet, pool["id"])) == 2
    assert len(_candidates(any_fleet, pool["id"], needs_label=True)) == 0

"""Where a fleet handle's first candidate search of a pool starts: a random host, or the first for a seeded fleet."""

from __future__ import annotations

import pytest

from bcfleet.fleet import Fleet
from bcfleet.placement import candidates
from bcfleet.placement.candidates import feasible_candidates, first_cursor
from tests.support.builders import OP
from tests.support.capacity import pool_with_hosts

CLAIMS = {"vcpu": 1, "memoryGiB": 1, "diskGiB": 1}


def _ids(fleet: Fleet) -> list[str]:
    return sorted(h["id"] for h in fleet.api.hosts.list(OP)["items"])


def _first_candidate(fleet: Fleet, pool_id: str) -> str:
    with fleet.read() as session:
        found = feasible_candidates(session, pool_id, CLAIMS, gpus=0, needs_label=False, want=1,
                                    now=fleet.now(), context=fleet.placement)  # fmt: skip
    return found.snapshots()[0].node_id


def test_an_unseeded_fleet_starts_after_a_drawn_host(
    any_fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = pool_with_hosts(any_fleet, hosts=3)
    ids = _ids(any_fleet)
    monkeypatch.setattr(candidates.random, "randrange", lambda n: 1 if n == 3 else 0)
    any_fleet.placement.random_start = True
    with any_fleet.read() as session:
        assert first_cursor(session, pool["id"]) == ids[1]
    assert _first_candidate(any_fleet, pool["id"]) == ids[2]
    assert any_fleet.placement.cursor(pool["id"]) == ids[1]
    any_fleet.placement.advance_cursor(pool["id"], ids[2])  # after the last: wraps round
    assert _first_candidate(any_fleet, pool["id"]) == ids[0]


def test_a_seeded_fleet_starts_at_the_first_host(any_fleet: Fleet) -> None:
    pool = pool_with_hosts(any_fleet, hosts=3)
    assert not any_fleet.placement.random_start  # the tests' fleets have seeded ids
    assert _first_candidate(any_fleet, pool["id"]) == _ids(any_fleet)[0]

"""Preemption's savepoint: locked victims, racing preemptors, privacy between tenants, capacity.preview."""

from __future__ import annotations

import threading
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import create_engine, text

from bcfleet.clock import format_time
from bcfleet.domain.notices import ANONYMOUS_MESSAGE
from bcfleet.domain.preemption import epoch_ms
from bcfleet.errors import NotFoundError
from bcfleet.fleet import Fleet
from bcfleet.jobs.reservations import run_lifecycle, run_retry
from tests.support.builders import OP
from tests.support.capacity import invariants_ok
from tests.support.fleet import T0
from tests.support.reservations import events, get, gpu_pool, reserve, tenant_text


def spot_everywhere(fleet: Fleet, pool: dict[str, object], nodes: int) -> list[dict[str, object]]:
    made = [reserve(fleet, pool, "beta" if i % 2 else "acme", spot=True) for i in range(nodes)]
    run_lifecycle(fleet, fleet.now())
    return made


@pytest.mark.postgres
def test_a_locked_victim_is_not_touched_and_the_request_goes_pending(pg_fleet: Fleet) -> None:
    pool = gpu_pool(pg_fleet)
    [spot] = spot_everywhere(pg_fleet, pool, 1)
    engine = create_engine(str(pg_fleet.engine.url.render_as_string(hide_password=False)))
    with engine.connect() as other:
        held = other.begin()
        other.execute(
            text("SELECT id FROM reservations WHERE id = :id FOR UPDATE"), {"id": spot["id"]}
        )
        regular = reserve(pg_fleet, pool)
        held.rollback()
    engine.dispose()
    assert regular["state"] == "pending"
    assert regular["conditions"][0]["message"] == "no node fits (1 node): 1 × fits: 0 of 4 gpu free"
    victim = get(pg_fleet, spot)
    assert victim["conditions"] == [] and victim["during"]["end"] == format_time(
        T0 + timedelta(hours=12)
    )
    assert not events(pg_fleet, "acme", "reservation.preempting", "reservation.preempted")
    invariants_ok(pg_fleet)
    assert run_retry(pg_fleet, pg_fleet.now())["placed"] == 1  # unlocked: the retry preempts


def test_racing_preemptors_never_cut_a_victim_twice(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet, hosts=2)
    victims = spot_everywhere(any_fleet, pool, 2)
    start = threading.Barrier(4)

    def request(i: int) -> str:
        start.wait()
        return str(reserve(any_fleet, pool, "acme" if i % 2 else "beta")["state"])

    with ThreadPoolExecutor(max_workers=4) as executor:
        states = list(executor.map(request, range(4)))
    assert states.count("placed") <= 2 and states.count("placed") + states.count("pending") == 4
    notices = Counter(
        e["subjectId"]
        for tenant in ("acme", "beta")
        for e in events(any_fleet, tenant, "reservation.preempting", "reservation.preempted")
    )
    assert all(count == 1 for count in notices.values())
    assert set(notices) <= {v["id"] for v in victims}
    assert len(notices) == states.count("placed")
    invariants_ok(any_fleet)


def test_no_tenant_reads_another_tenants_reservation(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet, hosts=2)
    beta_spot = reserve(any_fleet, pool, "beta", spot=True)
    beta_later = reserve(
        any_fleet, pool, "beta", spot=True, start=format_time(T0 + timedelta(hours=1))
    )
    run_lifecycle(any_fleet, any_fleet.now())
    first = reserve(any_fleet, pool, "acme")
    second = reserve(any_fleet, pool, "acme")
    assert first["state"] == second["state"] == "placed"
    cut, requeued = get(any_fleet, beta_spot), get(any_fleet, beta_later)
    assert [c["message"] for c in cut["conditions"]] == [ANONYMOUS_MESSAGE]
    assert [c["message"] for c in requeued["conditions"]] == [ANONYMOUS_MESSAGE]
    any_fleet.clock.advance(seconds=120)  # type: ignore[attr-defined]
    run_lifecycle(any_fleet, any_fleet.now())
    beta_events = events(any_fleet, "beta", "reservation.preempting", "reservation.preempted",
                         "reservation.released")  # fmt: skip
    assert len(beta_events) == 3 and all("by" not in e["data"] for e in beta_events)
    beta_reads = tenant_text(any_fleet, "beta", pool)
    acme_reads = tenant_text(any_fleet, "acme", pool)
    for acme_id in (first["id"], second["id"]):
        assert acme_id not in beta_reads
    for beta_id in (beta_spot["id"], beta_later["id"]):
        assert beta_id not in acme_reads
    with pytest.raises(NotFoundError) as refused:
        any_fleet.api.reservations.get(OP, beta_spot["id"], tenant_id="acme")
    assert "beta" not in refused.value.message
    invariants_ok(any_fleet)


def test_preview_matches_the_document(fleet: Fleet) -> None:
    pool = gpu_pool(fleet, hosts=2)
    spot_everywhere(fleet, pool, 2)
    preview = fleet.api.capacity.preview(
        OP, tenant_id="acme", pool_id=pool["id"], gpus=4, duration="12h"
    )
    assert preview == {
        "fits": False,
        "candidates": [],
        "reason": "no node fits (2 nodes): 2 × fits: 0 of 4 gpu free",
        "preemptible": {"reservations": 1, "startsAt": epoch_ms(T0 + timedelta(minutes=2))},
    }
    assert preview["preemptible"]["startsAt"] == int(T0.timestamp() * 1000) + 120_000


@pytest.mark.parametrize(
    "kind",
    [pytest.param({"spot": True}, id="spot-preview-never-preempts"),
     pytest.param({"binding": "node"}, id="node-lease-preview-never-preempts")],
)  # fmt: skip
def test_preview_without_preemption(fleet: Fleet, kind: dict[str, object]) -> None:
    pool = gpu_pool(fleet, hosts=2)
    spot_everywhere(fleet, pool, 2)
    preview = fleet.api.capacity.preview(OP, tenant_id="acme", pool_id=pool["id"], gpus=4,
                                         duration="12h", **kind)  # type: ignore[arg-type]  # fmt: skip
    assert preview["fits"] is False and "preemptible" not in preview


def test_preview_that_fits_lists_candidates_and_writes_nothing(fleet: Fleet) -> None:
    pool = gpu_pool(fleet, hosts=2)
    preview = fleet.api.capacity.preview(
        OP, tenant_id="acme", pool_id=pool["id"], gpus=2, duration="1h"
    )
    assert preview["fits"] is True and preview["reason"] is None
    # acme is a guest of root's pool: two candidates, under its opaque host ids, no names.
    assert [sorted(c) for c in preview["candidates"]] == [["id"], ["id"]]
    owner = fleet.api.capacity.preview(
        OP, tenant_id="root", pool_id=pool["id"], gpus=2, duration="1h"
    )
    assert sorted(c["name"] for c in owner["candidates"]) == ["h1", "h2"]
    assert fleet.api.reservations.list(OP)["items"] == []


def test_a_gang_preempts_on_whole_candidate_nodes(any_fleet: Fleet) -> None:
    pool = gpu_pool(any_fleet, hosts=3)
    spot_everywhere(any_fleet, pool, 3)
    gang = reserve(any_fleet, pool, "acme", nodes=2)
    assert gang["state"] == "placed" and len(set(gang["nodeIds"])) == 2
    cut = [e for t in ("acme", "beta") for e in events(any_fleet, t, "reservation.preempting")]
    assert len(cut) == 2
    invariants_ok(any_fleet)


def test_instances_and_reservations_racing_keep_every_invariant(any_fleet: Fleet) -> None:
    """GPU instances, spot and regular reservations, cancels and lifecycle ticks at once: no deadlock, no overbooking."""
    import random

    from bcfleet.errors import FleetError
    from tests.support.builders import flavor
    from tests.support.capacity import create

    pool = gpu_pool(any_fleet, hosts=3)
    flavor(any_fleet, pool["id"], "gpu1", vcpu=1, memory_gib=1, disk_gib=1, gpus=1)

    def worker(seed: int) -> int:
        rng = random.Random(seed)
        mine: list[str] = []
        done = 0
        for _ in range(10):
            try:
                choice = rng.choice(["spot", "spot", "regular", "instance", "cancel", "tick"])
                if choice == "instance":
                    create(any_fleet, pool, "gpu1")
                elif choice == "cancel" and mine:
                    any_fleet.api.reservations.cancel(OP, mine.pop(rng.randrange(len(mine))))
                elif choice == "tick":
                    run_lifecycle(any_fleet, any_fleet.now())
                    run_retry(any_fleet, any_fleet.now())
                else:
                    made = reserve(any_fleet, pool, rng.choice(["acme", "beta"]),
                                   gpus=rng.choice([1, 2, 4]), spot=choice == "spot")  # fmt: skip
                    mine.append(made["id"])
                done += 1
            except FleetError:
                pass  # refusals are fine; corruption and deadlocks are not
        return done

    with ThreadPoolExecutor(max_workers=4) as executor:
        assert sum(executor.map(worker, range(4))) > 0
    invariants_ok(any_fleet)

"""The placement and job reads that choose rows by a list of node or instance ids bind them a
chunk at a time (store.id_chunks), or choose by pool: past 65,535 ids one statement would bind
more parameters than PostgreSQL takes.

The chunk is made 2 here, so that a pool of 20 hosts shows what 65,536 would: no statement
binds more than the chunk and a few fixed parameters.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event
from sqlmodel import col, select

from bcfleet.domain.numa import HostPlacement
from bcfleet.domain.physical import Guest
from bcfleet.fleet import Fleet
from bcfleet.jobs import webhooks
from bcfleet.jobs.provider_records import forget_servers
from bcfleet.placement import invariants
from bcfleet.placement.candidates import pool_snapshots
from bcfleet.placement.gpu_cache import load_bookings
from bcfleet.placement.gpus import free_counts
from bcfleet.store import id_chunks
from bcfleet.store.models import Host
from bench.common import seed_pool

HOSTS = 20
FIXED = 4
"""Parameters a statement binds besides its chunk of ids (a pool id, a time, …)."""


@pytest.fixture
def most(any_fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """The most parameters one statement bound since the test reset it."""
    monkeypatch.setattr(id_chunks, "CHUNK", 2)
    seen = {"most": 0}

    def note(_conn: Any, _cursor: Any, _sql: str, parameters: Any, *_: Any) -> None:
        many = parameters if isinstance(parameters, list) else [parameters]
        seen["most"] = max([seen["most"], *(len(p or ()) for p in many)])

    event.listen(any_fleet.engine, "before_cursor_execute", note)
    yield seen
    event.remove(any_fleet.engine, "before_cursor_execute", note)


def test_node_id_reads_bind_a_chunk_at_a_time(
    any_fleet: Fleet, most: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = seed_pool(any_fleet, HOSTS)
    now = any_fleet.now()
    with any_fleet.read() as session:
        nodes = list(session.exec(select(Host.id).order_by(col(Host.id))).all())
    assert len(nodes) == HOSTS
    placement = HostPlacement(cpus=None, cpuset=(0,), hugepage_size_bytes=2 << 20)
    guests = [Guest(f"inst-{n}", n, placement) for n in nodes]
    monkeypatch.setattr(invariants, "live_guests", lambda _session: (guests, []))
    most["most"] = 0
    with any_fleet.write() as session:
        assert load_bookings(session, now, node_ids=nodes) == []
        assert free_counts(session, nodes, now) == {}
        assert sorted(h.node_id for h in pool_snapshots(session, pool["id"], now)) == nodes
        invariants.hugepages_over_total(session)
    assert forget_servers(any_fleet, [f"inst_{i:04d}" for i in range(HOSTS)]) == 0
    assert 0 < most["most"] <= id_chunks.CHUNK + FIXED < HOSTS


def test_the_webhook_job_reads_its_faulted_rows_a_chunk_at_a_time(
    any_fleet: Fleet, most: dict[str, int]
) -> None:
    faults = webhooks.fault_log(any_fleet)
    faults.known |= {("event", f"evt_{i:04d}") for i in range(HOSTS)}
    faults.known |= {("delivery", str(i)) for i in range(1, HOSTS + 1)}
    most["most"] = 0
    webhooks.forget_mended(any_fleet, faults)
    assert faults.known == set()  # rows gone: every fault forgotten
    assert 0 < most["most"] <= id_chunks.CHUNK + FIXED < HOSTS

"""The per-process pool snapshot only guides planning: bookings it has not seen are still respected."""

from __future__ import annotations

from sqlalchemy import insert, select

from bcfleet.fleet import Fleet
from bcfleet.placement.gpu_cache import pool_snapshot
from bcfleet.store.models import Booking, GpuAtom
from tests.support.capacity import invariants_ok
from tests.support.reservations import gpu_pool, reserve


def test_a_booking_written_behind_the_cache_is_not_double_booked(fleet: Fleet) -> None:
    pool = gpu_pool(fleet, hosts=2)
    assert reserve(fleet, pool, gpus=1, duration="1h")["state"] == "placed"  # the cache is warm
    with fleet.write() as session:
        atoms = session.execute(select(GpuAtom.id, GpuAtom.node_id).order_by(GpuAtom.id)).all()
        session.execute(
            insert(Booking),
            [
                {
                    "id": f"bkg_manual_{atom_id}",
                    "atom_id": atom_id,
                    "node_id": node_id,
                    "consumer_kind": "instance",
                    "consumer_id": "ins_manual",
                    "tenant_id": "acme",
                    "spot": False,
                    "starts_at": fleet.now(),
                    "ends_at": None,
                }
                for atom_id, node_id in atoms[1:]
            ],
        )  # fmt: skip  (no version touched: the cached snapshot does not know)
    late = reserve(fleet, pool, gpus=3, duration="1h", spot=True)
    assert late["state"] == "pending"
    invariants_ok(fleet)


def test_refresh_follows_writes_and_rebuild_matches(fleet: Fleet) -> None:
    pool = gpu_pool(fleet, hosts=3)
    reserve(fleet, pool, gpus=2)
    reserve(fleet, pool, gpus=4, spot=True)
    with fleet.read() as session:
        refreshed = pool_snapshot(session, fleet.placement, pool["id"], fleet.now())
    fleet.placement.forget_gpu_pools(pool["id"])
    with fleet.read() as session:
        rebuilt = pool_snapshot(session, fleet.placement, pool["id"], fleet.now())
    summary = [
        (i.node.id, sorted((s[0], s[1], s[2]) for s in i.spans)) for i in refreshed.indexes()
    ]
    assert summary == [
        (i.node.id, sorted((s[0], s[1], s[2]) for s in i.spans)) for i in rebuilt.indexes()
    ]


def test_a_rolled_back_batch_leaves_no_phantom_bookings_in_the_cache(fleet: Fleet) -> None:
    import pytest

    from bcfleet.errors import QuotaExceededError
    from tests.support.builders import OP, flavor
    from tests.support.capacity import create

    pool = gpu_pool(fleet, hosts=1)
    flavor(fleet, pool["id"], "gpu1", vcpu=1, memory_gib=1, disk_gib=1, gpus=1)
    fleet.api.reservations.cancel(OP, reserve(fleet, pool, gpus=1, duration="1h")["id"])
    fleet.api.quotas.set(OP, tenant_id="acme", pool=pool["id"], limits={"gpu": 5})
    with pytest.raises(QuotaExceededError):  # two placed, the third refused: all rolled back
        fleet.api.reservations.create_batch(OP, tenant_id="acme", pool_id=pool["id"], requests=[
            {"gpus": 2, "duration": "1h"}, {"gpus": 2, "duration": "1h"}, {"gpus": 2, "duration": "1h"},
        ])  # fmt: skip
    assert create(fleet, pool, "gpu1")["state"] == "running"  # a booking version the cache reached
    assert reserve(fleet, pool, gpus=3, duration="1h")["state"] == "placed"
    invariants_ok(fleet)

"""Seed a GPU pool full of live spot reservations straight into SQL, for the reservations benchmark.

`seed(fleet, nodes=5000, gpus=8, empty_every=0)` makes a vps-host pool offered
to tenants acme and beta, `nodes` ready hosts with `gpus` GPU atoms each, and
four live spot reservations per node (1 to 4 GPUs each, together filling the
node, active now and ending within a day) with their bookings, quota charged.
Every `empty_every`-th node is left empty (0: none), so a regular request fits
without preempting. Rows go in with bulk INSERTs: building 20,000 reservations
through the API would take minutes and measure nothing of interest.
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import insert, text

from bcfleet.api.auth import LOCAL_OPERATOR
from bcfleet.fleet import Fleet
from bcfleet.store.models import Booking, GpuAtom, Host, Reservation

SIZES = ((2, 2, 2, 2), (4, 2, 1, 1), (1, 1, 2, 4), (2, 1, 4, 1))
CHUNK = 5000


def _setup(fleet: Fleet) -> dict[str, Any]:
    api = fleet.api
    for tenant in ("acme", "beta"):
        api.tenants.create(LOCAL_OPERATOR, tenant)
    pool = api.pools.create(
        LOCAL_OPERATOR, tenant_id="root", name="gpu-fra", kind="vps-host", gpu_model="L40S"
    )
    for tenant in ("acme", "beta"):
        api.pools.offer(LOCAL_OPERATOR, tenant_id="root", pool=pool["id"], to=tenant)
    return pool


def _insert(fleet: Fleet, table: Any, rows: list[dict[str, Any]]) -> None:
    with fleet.write(bump_revision=False) as session:
        for first in range(0, len(rows), CHUNK):
            session.execute(insert(table), rows[first : first + CHUNK])


def _host_rows(pool_id: str, nodes: int, now: datetime) -> list[dict[str, Any]]:
    return [
        {"id": f"node_{n:026d}", "name": f"gpu-{n:05d}", "pool_id": pool_id, "labels": {},
         "tenant_controlled": False, "state": "ready", "inventory": None, "inventory_generation": 0,
         "created_at": now, "managed": False}
        for n in range(nodes)
    ]  # fmt: skip


def _atom_rows(nodes: int, gpus: int) -> list[dict[str, Any]]:
    return [
        {"id": n * gpus + i + 1, "node_id": f"node_{n:026d}", "index": i, "model": "L40S",
         "pci_address": f"0000:{0x17 + i:02x}:00.0", "numa_node": i * 2 // gpus, "present": True}
        for n in range(nodes)
        for i in range(gpus)
    ]  # fmt: skip


def _spot_rows(
    pool_id: str, nodes: int, gpus: int, empty_every: int, now: datetime, seed: int
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    rng = random.Random(seed)
    reservations: list[dict[str, Any]] = []
    bookings: list[dict[str, Any]] = []
    charged = 0
    for n in range(nodes):
        if empty_every and n % empty_every == 0:
            continue
        taken = 0
        for r, size in enumerate(SIZES[n % len(SIZES)]):
            size = min(size, gpus - taken)
            if size <= 0:
                break
            start = now - timedelta(minutes=rng.randint(1, 600))
            end = now + timedelta(minutes=rng.randint(60, 1440))
            rid = f"rsv_{n:022d}{r:04d}"
            tenant = "acme" if (n + r) % 2 else "beta"
            reservations.append(
                {"id": rid, "tenant_id": tenant, "pool_id": pool_id, "gpus": size, "nodes": 1,
                 "binding": "pool", "spot": True, "state": "active", "requested_start": start,
                 "duration_seconds": int((end - start).total_seconds()), "starts_at": start,
                 "ends_at": end, "conditions": [], "quota_charged": True, "created_at": start,
                 "updated_at": start, "activated_at": start, "node_ids": [f"node_{n:026d}"]}
            )  # fmt: skip
            charged += size
            for i in range(taken, taken + size):
                bookings.append(
                    {"id": f"bkg_{n:020d}{i:06d}", "atom_id": n * gpus + i + 1,
                     "node_id": f"node_{n:026d}", "consumer_kind": "reservation", "consumer_id": rid,
                     "tenant_id": tenant, "spot": True, "starts_at": start, "ends_at": end}
                )  # fmt: skip
            taken += size
    return reservations, bookings, charged


def seed(
    fleet: Fleet, *, nodes: int = 5000, gpus: int = 8, empty_every: int = 0, seed_: int = 7
) -> dict[str, Any]:
    """Make the pool and its spot work; returns the pool and the counts of what was made."""
    now = fleet.now()
    pool = _setup(fleet)
    reservations, bookings, _charged = _spot_rows(pool["id"], nodes, gpus, empty_every, now, seed_)
    _insert(fleet, Host, _host_rows(pool["id"], nodes, now))
    _insert(fleet, GpuAtom, _atom_rows(nodes, gpus))
    _insert(fleet, Reservation, reservations)
    _insert(fleet, Booking, bookings)
    with fleet.write() as session:
        for tenant in ("acme", "beta"):
            used = sum(r["gpus"] for r in reservations if r["tenant_id"] == tenant)
            session.execute(
                text(
                    'INSERT INTO quotas (tenant_id, pool_id, resource, "limit", used, managed) '
                    "VALUES (:t, :p, 'gpu', NULL, :u, false)"
                ),
                {"t": tenant, "p": pool["id"], "u": used},
            )
    return {"pool": pool, "reservations": len(reservations), "bookings": len(bookings)}

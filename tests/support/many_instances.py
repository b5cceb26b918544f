"""A fleet of many instances for listing tests, written with one bulk insert (not one API call
per row): a root pool offered to acme and globex, two hosts, and instances named vm-000000 on."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from bcfleet.fleet import Fleet
from bcfleet.store.tables import INSTANCES
from tests.support.builders import OP, host, hosted_pool, inventory

SHAPE = {"vcpu": 1, "memoryGiB": 1, "diskGiB": 10, "gpus": 0}


@dataclass(frozen=True)
class ManyInstances:
    pool: dict[str, Any]
    hosts: tuple[dict[str, Any], dict[str, Any]]
    count: int


def state_of(n: int) -> str:
    """Every tenth instance pending (no host), every seventh of the rest stopped."""
    if n % 10 == 0:
        return "pending"
    return "stopped" if n % 7 == 0 else "running"


def many_instances(fleet: Fleet, count: int) -> ManyInstances:
    """`count` instances vm-000000…, a second apart (vm-000000 the oldest); odd ones globex's,
    even ones acme's; placed ones alternate between hosts h1 and h2."""
    pool = hosted_pool(fleet, offered_to=("acme", "globex"), gpu_model=None)
    hosts = (host(fleet, pool["id"], "h1", inventory()), host(fleet, pool["id"], "h2", inventory()))
    now = fleet.now()
    rows = []
    for n in range(count):
        state = state_of(n)
        at = now - timedelta(seconds=count - n)
        rows.append({
            "id": f"ins_{n:026d}", "tenant_id": "globex" if n % 2 else "acme",
            "pool_id": pool["id"], "name": f"vm-{n:06d}", "state": state, "shape": SHAPE,
            "node_id": None if state == "pending" else hosts[(n // 2) % 2]["id"],
            "conditions": [], "purpose": "tenant", "created_at": at, "updated_at": at,
        })  # fmt: skip
    with fleet.write() as session:
        session.connection().execute(INSTANCES.insert(), rows)
    assert fleet.api.instances.list(OP, limit=1)["total"] == count
    return ManyInstances(pool, hosts, count)

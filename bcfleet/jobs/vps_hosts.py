"""The vps.hosts job: derive node_resources rows and GPU atoms from inventories, then place pending instances.

For nodes of vps-host pools that are not tenant-controlled: allocatable = inventory − host
reserve, ratio = the pool's overcommit (document 000). Rows are written only when they change,
with a guard on the allocated value read, so a claim landing meanwhile is never overwritten:
the row is simply derived again on the next tick.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlmodel import Session, col, select

from bcfleet.domain.fit import HostReserve, ResourceRow, rows_to_write
from bcfleet.domain.shapes import Inventory
from bcfleet.placement.hosted import try_place
from bcfleet.store.models import GpuAtom, Host, Instance, NodeResource, Pool

if TYPE_CHECKING:
    from bcfleet.fleet import Fleet

PENDING_RETRIES_PER_TICK = 200


def run_vps_hosts(fleet: Fleet, now: datetime) -> dict[str, int]:
    """One tick: sync every host's rows and atoms in one transaction, then retry pending instances."""
    del now  # the job reads the fleet's clock through the API it calls
    counts = {"hosts": 0, "rowsWritten": 0, "atomsChanged": 0, "placed": 0, "stillPending": 0}
    with fleet.write() as session:
        pools = {
            p.id: p for p in session.scalars(select(Pool).where(Pool.kind == "vps-host")).all()
        }
        hosts = session.scalars(
            select(Host).where(
                col(Host.pool_id).in_(list(pools)), col(Host.tenant_controlled).is_(False)
            )
        ).all()
        rows = _rows_by_node(session, [h.id for h in hosts])
        default = _default_reserve(fleet)
        for host in hosts:
            pool = pools[host.pool_id]
            counts["hosts"] += 1
            counts["rowsWritten"] += sync_rows(session, host, pool, rows.get(host.id, {}), default)
            counts["atomsChanged"] += sync_atoms(session, host)
    placed, pending = retry_pending(fleet)
    counts["placed"], counts["stillPending"] = placed, pending
    return counts


def _default_reserve(fleet: Fleet) -> HostReserve:
    reserve = fleet.settings.host_reserve
    return HostReserve(vcpu=reserve.vcpu, memory_gib=reserve.memory_gib, disk_gib=reserve.disk_gib)


def _rows_by_node(session: Session, node_ids: list[str]) -> dict[str, dict[str, ResourceRow]]:
    result: dict[str, dict[str, ResourceRow]] = {}
    if not node_ids:
        return result
    for row in session.scalars(
        select(NodeResource).where(col(NodeResource.node_id).in_(node_ids))
    ).all():
        result.setdefault(row.node_id, {})[row.resource] = ResourceRow(
            row.resource, row.allocatable, row.ratio, row.capacity, row.allocated
        )
    return result


def sync_rows(
    session: Session, host: Host, pool: Pool, old: Mapping[str, ResourceRow], default: HostReserve
) -> int:
    """Write the host's changed rows; returns how many were written."""
    if host.inventory is None:
        return 0
    inventory = Inventory.from_json(host.inventory)
    reserve = default.with_overrides(pool.host_reserve)
    written = 0
    for row in rows_to_write(old, inventory, reserve, pool.overcommit):
        before = old.get(row.resource)
        if before is None:
            session.add(
                NodeResource(
                    node_id=host.id,
                    resource=row.resource,
                    allocatable=row.allocatable,
                    ratio=row.ratio,
                    capacity=row.capacity,
                    allocated=0,
                )
            )
            written += 1
            continue
        updated = session.execute(
            text(
                "UPDATE node_resources SET allocatable = :a, ratio = :r, capacity = :c, "
                "generation = generation + 1 WHERE node_id = :n AND resource = :res AND allocated = :seen"
            ),
            {
                "a": row.allocatable,
                "r": row.ratio,
                "c": row.capacity,
                "n": host.id,
                "res": row.resource,
                "seen": before.allocated,
            },
        )
        written += int(updated.rowcount or 0)  # type: ignore[attr-defined]
    return written


def sync_atoms(session: Session, host: Host) -> int:
    """Make the host's GPU atoms match its inventory's GPUs; vanished atoms are kept, not present."""
    reported: list[dict[str, Any]] = list((host.inventory or {}).get("gpus", []))
    existing = {
        a.index: a for a in session.scalars(select(GpuAtom).where(GpuAtom.node_id == host.id)).all()
    }
    changed = 0
    for index, gpu in enumerate(reported):
        atom = existing.get(index)
        values = (gpu["model"], gpu["pciAddress"], gpu.get("numaNode"), True)
        if atom is None:
            session.add(
                GpuAtom(
                    node_id=host.id,
                    index=index,
                    model=values[0],
                    pci_address=values[1],
                    numa_node=values[2],
                    present=True,
                )
            )
            changed += 1
        elif (atom.model, atom.pci_address, atom.numa_node, atom.present) != values:
            atom.model, atom.pci_address, atom.numa_node, atom.present = values
            session.add(atom)
            changed += 1
    for index, atom in existing.items():
        if index >= len(reported) and atom.present:
            atom.present = False
            session.add(atom)
            changed += 1
    return changed


def retry_pending(fleet: Fleet) -> tuple[int, int]:
    """Place pending hosted instances, oldest first, each in its own transaction."""
    with fleet.read() as session:
        pending = (
            session.execute(
                select(Instance.id)
                .join(Pool, col(Pool.id) == col(Instance.pool_id))
                .where(Instance.state == "pending", col(Pool.kind) == "vps-host")
                .order_by(col(Instance.created_at))
                .limit(PENDING_RETRIES_PER_TICK)
            )
            .scalars()
            .all()
        )
    placed = 0
    for instance_id in pending:
        with fleet.write() as session:
            instance = session.get(Instance, instance_id, with_for_update=True)
            if instance is None or instance.state != "pending":
                continue
            pool = session.get(Pool, instance.pool_id)
            assert pool is not None
            placed += int(try_place(session, fleet, instance, pool))
    return placed, len(pending) - placed

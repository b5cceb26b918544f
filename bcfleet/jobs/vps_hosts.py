"""The vps.hosts job: derive node_resources rows and GPU atoms from inventories, then place pending instances.

For nodes of vps-host pools that are not tenant-controlled: allocatable = inventory − host
reserve, ratio = the pool's overcommit (document 000). Rows are written only when they change,
with a guard on the allocated value read, so a claim landing meanwhile is never overwritten:
the row is simply derived again on the next tick.

Faults stay local: a host whose stored inventory cannot be turned into rows (one stored before
the bounds existed, or written straight into the table) gets the reason in its
``inventory_error`` (shown by `fleet hosts list` and `fleet doctor`), keeps its old rows, and
the tick goes on with the other hosts.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import text
from sqlmodel import Session, col, select

from bcfleet.domain.fit import ResourceRow, rows_to_write
from bcfleet.domain.host_reserve import HostReserve
from bcfleet.domain.shapes import Gpu, Inventory
from bcfleet.domain.states import InstanceState, PoolKind
from bcfleet.placement.instance_placer import try_place
from bcfleet.store.event_log import emit
from bcfleet.store.job_faults import error_text
from bcfleet.store.models import GpuAtom, Host, Instance, NodeResource, Pool
from bcfleet.store.node_rows import rows_by_node

if TYPE_CHECKING:
    from bcfleet.jobs.handle import JobHandle

PENDING_RETRIES_PER_TICK = 200
HOSTS_PAGE = 500  # hosts a tick holds at once
log = logging.getLogger(__name__)


def run_vps_hosts(
    fleet: JobHandle, now: datetime, *, page_size: int = HOSTS_PAGE
) -> dict[str, int]:
    """One tick: sync every host's rows and atoms in one transaction, then retry pending instances.

    The hosts are read a page at a time, by id, and each page is flushed and let go of before
    the next is read, so what the tick holds is bounded by a page, not by the fleet.
    """
    del now  # the job reads the fleet's clock through the API it calls
    counts = {"hosts": 0, "rowsWritten": 0, "atomsChanged": 0, "hostErrors": 0}
    with fleet.write() as session:
        held = set(session.identity_map.keys())  # a joined transaction's own entities stay
        pools = {
            p.id: p
            for p in session.scalars(select(Pool).where(Pool.kind == PoolKind.VPS_HOST)).all()
        }
        default = fleet.settings.host_reserve
        after: str | None = None
        while hosts := _host_page(session, list(pools), after, page_size):
            rows = rows_by_node(session, list(pools), first=hosts[0].id, last=hosts[-1].id)
            for host in hosts:
                counts["hosts"] += 1
                written, changed = sync_host(session, host, pools[host.pool_id], rows, default)
                counts["rowsWritten"] += written
                counts["atomsChanged"] += changed
                counts["hostErrors"] += int(host.inventory_error is not None)
            after = hosts[-1].id
            _let_go(session, held)
    placed, pending = retry_pending(fleet)
    counts["placed"], counts["stillPending"] = placed, pending
    return counts


def _synced_hosts(pool_ids: list[str]) -> tuple[Any, Any]:
    """The hosts a tick syncs: its pools', not tenant-controlled."""
    return col(Host.pool_id).in_(pool_ids), col(Host.tenant_controlled).is_(False)


def _host_page(
    session: Session, pool_ids: list[str], after: str | None, page_size: int
) -> Sequence[Host]:
    """The next page of synced hosts by id, those after `after` (from the first when None)."""
    query = select(Host).where(*_synced_hosts(pool_ids))
    if after is not None:
        query = query.where(col(Host.id) > after)
    return session.scalars(query.order_by(col(Host.id)).limit(page_size)).all()


def _let_go(session: Session, held: set[Any]) -> None:
    """Write out a page's changes and take its entities (hosts, rows, atoms) out of the session;
    the pools and whatever the session held before the tick stay."""
    session.flush()
    identities = session.identity_map
    for key in set(identities.keys()) - held:
        entity = identities.get(key)
        if entity is not None and not isinstance(entity, Pool):
            session.expunge(entity)


def sync_host(
    session: Session,
    host: Host,
    pool: Pool,
    rows: Mapping[str, Mapping[str, ResourceRow]],
    default: HostReserve,
) -> tuple[int, int]:
    """(rows written, atoms changed) for one host; a failure is recorded on the host instead.

    The pure derivation runs first; the writes run in a savepoint only when there is something
    to write, so a steady fleet pays for no savepoint and a failed write undoes only its host.
    """
    old = rows.get(host.id, {})
    try:
        wanted = derive_host(host, pool, old, default)
    except Exception as exc:  # any fault in one host's data stays on that host
        _record(session, host, exc)
        return 0, 0
    if wanted is None:
        _record(session, host, None)
        return 0, 0
    new_rows, gpus = wanted
    existing = _atoms(session, host)
    if not new_rows and not _atoms_differ(existing, gpus):
        _record(session, host, None)
        return 0, 0
    savepoint = session.begin_nested()
    try:
        written = write_rows(session, host, old, new_rows)
        changed = sync_atoms(session, host, gpus, existing)
        session.flush()
    except Exception as exc:
        savepoint.rollback()
        _record(session, host, exc)
        return 0, 0
    savepoint.commit()
    _record(session, host, None)
    return written, changed


def _record(session: Session, host: Host, error: BaseException | None) -> None:
    """Keep the host's inventory_error: the reason (escaped, cut short), or None once it syncs."""
    text = None if error is None else error_text(error)
    if host.inventory_error != text:
        host.inventory_error = text
        session.add(host)
        if text is not None:
            log.warning("vps.hosts: host %s: %s", host.id, text)


def derive_host(
    host: Host, pool: Pool, old: Mapping[str, ResourceRow], default: HostReserve
) -> tuple[list[ResourceRow], tuple[Gpu, ...]] | None:
    """The rows to write and the GPUs to keep as atoms; None for a host with no inventory.

    ValueError when the stored inventory is malformed or out of bounds (Inventory.from_json
    checks every number against bcfleet.domain.bounds, which is what keeps the math finite).
    """
    if host.inventory is None:
        return None
    inventory = Inventory.from_json(host.inventory)
    reserve = default.with_overrides(pool.host_reserve)
    return rows_to_write(old, inventory, reserve, pool.overcommit), inventory.gpus


def write_rows(
    session: Session, host: Host, old: Mapping[str, ResourceRow], new_rows: list[ResourceRow]
) -> int:
    """Write the host's changed rows; returns how many were written."""
    written = 0
    for row in new_rows:
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


def _atoms(session: Session, host: Host) -> dict[int, GpuAtom]:
    return {
        a.index: a for a in session.scalars(select(GpuAtom).where(GpuAtom.node_id == host.id)).all()
    }


def _atom_values(gpu: Gpu) -> tuple[str, str, int | None, bool]:
    return (gpu.model, gpu.pci_address, gpu.numa_node, True)


def _by_address(existing: Mapping[int, GpuAtom]) -> dict[str, GpuAtom]:
    """The host's atoms by PCI address (lower case): a GPU is the device at its address."""
    return {a.pci_address.lower(): a for _, a in sorted(existing.items())}


def _atoms_differ(existing: Mapping[int, GpuAtom], gpus: tuple[Gpu, ...]) -> bool:
    by_address = _by_address(existing)
    for gpu in gpus:
        atom = by_address.get(gpu.pci_address.lower())
        if atom is None or (atom.model, atom.pci_address, atom.numa_node, atom.present) != (
            _atom_values(gpu)
        ):
            return True
    reported = {g.pci_address.lower() for g in gpus}
    return any(a.present and address not in reported for address, a in by_address.items())


def sync_atoms(
    session: Session, host: Host, gpus: tuple[Gpu, ...], existing: Mapping[int, GpuAtom]
) -> int:
    """Make the host's GPU atoms match its inventory's GPUs, one atom per PCI address.

    An atom keeps its address for good: a GPU reported at a new address is a new atom, and an
    atom whose address the inventory no longer lists is kept, not present, with its bookings
    (doctor and the host's InventoryShortfall condition name it while they are held).
    """
    changed = 0
    by_address = _by_address(existing)
    next_index = max(existing, default=-1) + 1
    for gpu in gpus:
        atom = by_address.get(gpu.pci_address.lower())
        values = _atom_values(gpu)
        if atom is None:
            session.add(
                GpuAtom(
                    node_id=host.id,
                    index=next_index,
                    model=values[0],
                    pci_address=values[1],
                    numa_node=values[2],
                    present=True,
                )
            )
            next_index += 1
            changed += 1
        elif (atom.model, atom.pci_address, atom.numa_node, atom.present) != values:
            atom.model, atom.pci_address, atom.numa_node, atom.present = values
            session.add(atom)
            changed += 1
    reported = {g.pci_address.lower() for g in gpus}
    for address, atom in by_address.items():
        if address not in reported and atom.present:
            atom.present = False
            session.add(atom)
            changed += 1
    return changed


def retry_pending(fleet: JobHandle) -> tuple[int, int]:
    """Place pending hosted instances, oldest first, each in its own transaction."""
    with fleet.read() as session:
        pending = (
            session.execute(
                select(Instance.id)
                .join(Pool, col(Pool.id) == col(Instance.pool_id))
                .where(Instance.state == InstanceState.PENDING, col(Pool.kind) == PoolKind.VPS_HOST)
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
            if instance is None or instance.state != InstanceState.PENDING:
                continue
            pool = session.get(Pool, instance.pool_id)
            assert pool is not None
            if try_place(session, fleet, instance, pool):
                placed += 1
                emit(session, fleet.ids, fleet.now(), "instance.placed",
                     tenant_id=instance.tenant_id, subject_id=instance.id,
                     data={"state": str(instance.state)})  # fmt: skip
    return placed, len(pending) - placed

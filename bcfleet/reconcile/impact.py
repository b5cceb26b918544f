"""What a planned change means for capacity, credits and dependent objects; the planner calls it.

- capacity: a pool's floor(allocatable × ratio) before and after a policy change,
  and the hosts whose allocations would exceed it (document 000);
- credits: spare instances × 720 hours × 1 credit, per size and in total (document 004);
- sizes in use: turning off a size that a deployed serverless service, an index
  with that pod size or an environment uses is SIZE_IN_USE (document 004), as the
  settings API decides it;
- dependents: an object cannot be deleted while a surviving object refers to it, nor a
  tenant while rows no FleetConfig declares (instances, principals, …) name it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

from bcfleet.domain.compute_settings import (
    ComputeSettings,
    CreditsRow,
    SizeSetting,
    SizeUsers,
    check_in_use,
    credits_table,
    default_sizes,
)
from bcfleet.domain.fit import ResourceRow, derive_row
from bcfleet.domain.scalars import SCALARS
from bcfleet.domain.tenant_removal import still_has
from bcfleet.errors import SizeInUseError
from bcfleet.reconcile.actions import (
    CapacityChange,
    Credits,
    CreditsLine,
    PlanMessage,
    freeze,
)
from bcfleet.reconcile.attrs import Entry
from bcfleet.reconcile.model import HostCapacity, PoolSpec


def row_under(pool: PoolSpec, host: HostCapacity, row: ResourceRow) -> ResourceRow:
    """A host's row under a pool's policy: the row vps.hosts then writes (fit.derive_row, from
    the host's stored row, allocations included); kept as it is when the host's inventory is
    unreadable, as vps.hosts keeps it."""
    total = host.totals.get(row.resource)
    if total is None:
        return row
    ratio = pool.overcommit.ratio(row.resource)
    return derive_row(row.resource, row, total, pool.host_reserve, ratio)


def pool_capacity(
    after: PoolSpec, hosts: Sequence[HostCapacity]
) -> tuple[tuple[CapacityChange, ...], list[PlanMessage]]:
    """The pool's capacity per resource before (as stored) and after ``after``'s policy, and
    the hosts whose allocations the new capacity would not hold."""
    before_sum: dict[str, int] = {}
    after_sum: dict[str, int] = {}
    warnings: list[PlanMessage] = []
    for host in sorted(hosts, key=lambda h: h.host):
        over: dict[str, dict[str, int]] = {}
        for row in host.rows:
            new = row_under(after, host, row).capacity
            before_sum[row.resource] = before_sum.get(row.resource, 0) + row.capacity
            after_sum[row.resource] = after_sum.get(row.resource, 0) + new
            if row.allocated > new:
                over[row.resource] = {"allocated": row.allocated, "capacity": new}
        if over:
            warnings.append(_over_capacity(host, after.name, over))
    changes = tuple(
        CapacityChange(r, before_sum[r], after_sum[r]) for r in SCALARS if r in before_sum
    )
    return changes, warnings


def _over_capacity(host: HostCapacity, pool: str, over: dict[str, dict[str, int]]) -> PlanMessage:
    parts = ", ".join(
        f"{resource} {numbers['allocated']} allocated, new capacity {numbers['capacity']}"
        for resource, numbers in over.items()
    )
    return PlanMessage(
        code="CAPACITY_BELOW_ALLOCATED",
        message=(
            f"host {host.host} in pool {pool} would hold more than its new capacity ({parts}); "
            "its instances keep running, and it takes no new ones until it has room again"
        ),
        address=f"host.{host.host}",
        details=freeze({"pool": pool, "host": host.host, "resources": over}),
    )


def credits_change(
    before: tuple[SizeSetting, ...] | None, after: tuple[SizeSetting, ...]
) -> Credits | None:
    """Credits per month before and after, or None when they do not change."""
    old = credits_table(ComputeSettings(sizes=before or default_sizes()))
    new = credits_table(ComputeSettings(sizes=after))
    lines = tuple(
        CreditsLine(b.size, _spent(b), _spent(a)) for b, a in zip(old.rows, new.rows, strict=True)
    )
    if all(line.before == line.after for line in lines):
        return None
    return Credits(lines, old.total, new.total)


def _spent(row: CreditsRow) -> int:
    """What a size's spares cost in the Total: nothing while the size is off."""
    return row.credits_per_month if row.enabled else 0


def sizes_in_use(
    tenant: str,
    before: tuple[SizeSetting, ...] | None,
    after: tuple[SizeSetting, ...],
    users: SizeUsers | None,
) -> list[PlanMessage]:
    """SIZE_IN_USE when the change turns off a size something uses: the settings API's own rule
    and message (domain.compute_settings.check_in_use). Without saved settings every size is on."""
    if users is None:
        return []
    try:
        current = ComputeSettings(sizes=before or default_sizes())
        check_in_use(current, ComputeSettings(sizes=after), users)
    except SizeInUseError as error:
        return [
            PlanMessage(
                code=error.code,
                message=f"tenant {tenant}: {error.message}",
                address=f"compute.{tenant}",
                details=freeze({"tenant": tenant, **error.details}),
            )
        ]
    return []


def blocked_removals(removed: set[str], survivors: Iterable[Entry]) -> list[PlanMessage]:
    """CONFLICT for each deleted object that a surviving object still refers to."""
    holders: dict[str, list[str]] = defaultdict(list)
    for survivor in survivors:
        for ref in survivor.refs:
            if ref in removed:
                note = _survivor_note(survivor)
                holders[ref].append(f"{survivor.address}{note}")
    return [
        PlanMessage(
            code="CONFLICT",
            message=f"{address} cannot be deleted: still referenced by {', '.join(sorted(names))}",
            address=address,
            details=freeze({"referencedBy": sorted(names)}),
        )
        for address, names in sorted(holders.items())
    ]


def _survivor_note(survivor: Entry) -> str:
    if survivor.archived or survivor.referenced:
        return " (archived: instances reference it)"
    if not survivor.managed:
        return " (not managed by a FleetConfig)"
    return ""


def host_allocations(hosts: Iterable[HostCapacity]) -> dict[str, Mapping[str, int]]:
    """What each host has allocated, for hosts with any allocation."""
    result: dict[str, Mapping[str, int]] = {}
    for host in hosts:
        allocated = {row.resource: row.allocated for row in host.rows if row.allocated > 0}
        if allocated:
            result[host.host] = allocated
    return result


def tenant_held(address: str, tenant: str, holders: Sequence[str]) -> PlanMessage:
    """CONFLICT: a tenant that rows no FleetConfig declares still name cannot be deleted (the
    tenants API's rule and words); the apply would stop there."""
    return PlanMessage(
        code="CONFLICT",
        message=f"{address} cannot be deleted: {still_has(tenant, holders)}",
        address=address,
        details=freeze({"tenant": tenant, "has": list(holders)}),
    )


def host_busy(address: str, host: str, allocated: Mapping[str, int], doing: str) -> PlanMessage:
    """CONFLICT: a host with allocations cannot be ``doing`` (removed, moved to another pool)."""
    amounts = ", ".join(f"{resource} {amount}" for resource, amount in allocated.items())
    return PlanMessage(
        code="CONFLICT",
        message=(
            f"host {host} cannot be {doing} while it has allocations ({amounts}); drain it first"
        ),
        address=address,
        details=freeze({"host": host, "allocated": dict(allocated)}),
    )

"""What a planned change means for capacity, credits and dependent objects; the planner calls it.

- capacity: a pool's floor(allocatable × ratio) before and after a policy change,
  and the hosts whose allocations would exceed it (document 000);
- credits: spare instances × 720 hours × 1 credit, per size and in total (document 004);
- sizes in use: turning off a size that a deployed serverless service, an index
  with that pod size or an environment uses is SIZE_IN_USE (document 004);
- dependents: an object cannot be deleted while a surviving object refers to it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bcfleet.reconcile.actions import (
    CapacityChange,
    Credits,
    CreditsLine,
    PlanMessage,
    freeze,
)
from bcfleet.reconcile.attrs import Entry
from bcfleet.reconcile.model import (
    LEGACY_SERVICE_SIZE,
    RESOURCES,
    SIZES,
    HostCapacity,
    PoolSpec,
    SizeSettings,
    SizeUsers,
    capacity_of,
    reserve_of,
)


def _new_capacity(total: int, resource: str, pool: PoolSpec) -> int:
    allocatable = max(total - reserve_of(pool.host_reserve, resource), 0)
    return capacity_of(allocatable, pool.overcommit.ratio(resource))


def pool_capacity(
    after: PoolSpec, hosts: Sequence[HostCapacity]
) -> tuple[tuple[CapacityChange, ...], list[PlanMessage]]:
    """The pool's capacity per resource before and after ``after``'s policy, and host warnings."""
    before_sum: dict[str, int] = {}
    after_sum: dict[str, int] = {}
    warnings: list[PlanMessage] = []
    for host in sorted(hosts, key=lambda h: h.host):
        over: dict[str, dict[str, int]] = {}
        for row in host.rows:
            capacity = _new_capacity(row.total, row.resource, after)
            before_sum[row.resource] = before_sum.get(row.resource, 0) + row.capacity
            after_sum[row.resource] = after_sum.get(row.resource, 0) + capacity
            if row.allocated > capacity:
                over[row.resource] = {"allocated": row.allocated, "capacity": capacity}
        if over:
            warnings.append(_over_capacity(host, after.name, over))
    changes = tuple(
        CapacityChange(r, before_sum[r], after_sum[r]) for r in RESOURCES if r in before_sum
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


def credits_change(before: SizeSettings | None, after: SizeSettings) -> Credits | None:
    """Credits per month before and after, or None when they do not change."""
    old = before or SizeSettings()
    lines = tuple(
        CreditsLine(size, old.get(size).credits_per_month, after.get(size).credits_per_month)
        for size in SIZES
    )
    if all(line.before == line.after for line in lines):
        return None
    return Credits(lines, old.credits_per_month, after.credits_per_month)


@dataclass(frozen=True)
class SizeHolders:
    """What keeps one size from being turned off, as JSON-ready names."""

    services: list[dict[str, str]]
    environments: list[dict[str, str]]
    indexes: list[dict[str, str]]

    def __bool__(self) -> bool:
        return bool(self.services or self.environments or self.indexes)


def users_of(size: str, users: SizeUsers) -> SizeHolders:
    """What holds ``size``: deployed serverless services (on their environment's size when in one),
    indexes with that pod size, deployed or not, and environments of that size, empty or not."""
    environment_sizes = {env.name: env.size for env in users.environments}
    services = []
    for service in users.services:
        runs_on = service.size or LEGACY_SERVICE_SIZE
        if service.environment is not None:
            runs_on = environment_sizes.get(service.environment, runs_on)
        if service.deployed and service.hosting == "serverless" and runs_on == size:
            services.append({"workspace": service.workspace, "name": service.name})
    return SizeHolders(
        services=sorted(services, key=lambda s: (s["workspace"], s["name"])),
        environments=[
            {"name": e.name}
            for e in sorted(users.environments, key=lambda e: e.name)
            if e.size == size
        ],
        indexes=sorted(
            (
                {"workspace": i.workspace, "name": i.name}
                for i in users.indexes
                if i.pod_size == size
            ),
            key=lambda i: (i["workspace"], i["name"]),
        ),
    )


def sizes_in_use(
    tenant: str, before: SizeSettings | None, after: SizeSettings, users: SizeUsers | None
) -> list[PlanMessage]:
    """SIZE_IN_USE for each size turned off while something uses it.

    A size already off never blocks; without saved settings every size is on, the default."""
    errors = []
    for size in SIZES:
        was_on = before is None or before.get(size).enabled
        if not was_on or after.get(size).enabled or users is None:
            continue
        found = users_of(size, users)
        if found:
            errors.append(_size_in_use(tenant, size, found))
    return errors


def _size_in_use(tenant: str, size: str, found: SizeHolders) -> PlanMessage:
    named = [f"service {s['name']} (workspace {s['workspace']})" for s in found.services]
    named += [f"environment {e['name']}" for e in found.environments]
    named += [f"index {i['name']} (workspace {i['workspace']})" for i in found.indexes]
    return PlanMessage(
        code="SIZE_IN_USE",
        message=(
            f"cannot turn off {size} for tenant {tenant}: still used by {', '.join(named)}; "
            "move them to another size, undeploy those services or reset those indexes "
            "to the default pod size first"
        ),
        address=f"compute.{tenant}",
        details=freeze(
            {
                "tenant": tenant,
                "size": size,
                "services": found.services,
                "environments": found.environments,
                "indexes": found.indexes,
            }
        ),
    )


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

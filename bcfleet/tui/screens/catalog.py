"""Pools, flavors, tenants, quotas and provider accounts: what a FleetConfig declares, as lists.

At 80 columns the state-like columns (KIND, OWNER, used/limit cells) stay; the rest give way.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from rich.text import Text

from bcfleet.domain.scalars import SCALARS
from bcfleet.tui.actions import actions_for
from bcfleet.tui.format import DASH, DIM_DASH, Cell, age, croppable, ratio_text, usage_cell
from bcfleet.tui.history import exactly
from bcfleet.tui.screens.objects import ObjectsView, key_of
from bcfleet.tui.widgets.keyed_table import Column, Row

QUOTA_RESOURCES = ("vcpu", "memoryGiB", "diskGiB", "gpu")


def _words(values: Any) -> str:
    return ", ".join(str(v) for v in values or ()) or DASH


def pool_row(pool: Mapping[str, Any], now: datetime) -> Row:
    over = pool["effectivePolicy"]["overcommit"]  # the ratios in force, as the API says them
    ratios = "×" + "/".join(ratio_text(over[resource]) for resource in SCALARS)
    since, seconds = age(pool.get("createdAt"), now, short=True)
    offered = _words(pool.get("offeredTo"))
    cells: tuple[Cell, ...] = (
        pool["name"],
        pool["kind"],
        str(pool.get("owner") or DASH),
        str(pool.get("gpuModel") or DASH),
        ratios,
        croppable(offered),
        since,
    )
    return Row(pool["id"], cells, sort=(*(str(c) for c in cells[:6]), seconds))


POOL_COLUMNS = (
    Column("name", "NAME", name=True),
    Column("kind", "KIND"),
    Column("owner", "OWNER", name=True),
    Column("gpu", "GPU MODEL", give_way=2),
    Column("overcommit", "OVERCOMMIT", give_way=1),
    Column("offered", "OFFERED TO", crop_to=12),
    Column("age", "AGE", give_way=3),
)


class PoolsView(ObjectsView):
    TITLE = "Pools"
    ABOUT = (
        "Every pool you may see: its kind, owner, GPU model, overcommit (vCPU/memory/disk) "
        "and the tenants it is offered to. Enter shows its hosts (the Hosts view filtered to "
        "it; [ comes back); d describes it, with its FleetConfig YAML."
    )
    COLUMNS = POOL_COLUMNS
    NOUN = ("pool", "pools")
    ACTIONS = actions_for("pools")
    KIND = "pool"
    READ = "pools"
    row_of = staticmethod(pool_row)

    def open_row(self, key: str) -> None:
        """Enter: the pool's hosts, as k9s drills from a deployment to its pods."""
        pool = self.item(key)
        if pool is not None:
            self.fleet_app.drill("hosts", exactly("pool", str(pool["name"])))


def flavor_row(flavor: Mapping[str, Any], now: datetime) -> Row:
    del now
    placement = flavor.get("placement") or {}
    asks = [w for w, k in (("numa", "numaAffine"), ("pinned", "pinned")) if placement.get(k)]
    if placement.get("hugepageSizeBytes"):
        asks.append("hugepages")
    cells: tuple[Cell, ...] = (
        str(flavor.get("pool") or DASH),
        flavor["name"],
        str(flavor["vcpu"]),
        str(flavor["memoryGiB"]),
        str(flavor["diskGiB"]),
        str(flavor.get("gpus") or 0),
        croppable(" ".join(asks) or DASH),
    )
    sort = (cells[0], cells[1], flavor["vcpu"], flavor["memoryGiB"], flavor["diskGiB"],
            flavor.get("gpus") or 0, str(cells[6]))  # fmt: skip
    return Row(flavor["id"], cells, sort=sort)


FLAVOR_COLUMNS = (
    Column("pool", "POOL", give_way=2, name=True),
    Column("name", "NAME", name=True),
    Column("vcpu", "VCPU"),
    Column("memory", "MEM GiB"),
    Column("disk", "DISK GiB", give_way=1),
    Column("gpus", "GPUS"),
    Column("placement", "PLACEMENT", crop_to=10),
)


class FlavorsView(ObjectsView):
    TITLE = "Flavors"
    ABOUT = (
        "Every flavor of every pool you may see (archived ones hidden): its shape and what "
        "its placement asks for (NUMA-affine, pinned CPUs, huge pages). Enter or d describes it; "
        "Ctrl+D deletes it (archives it once an instance used it)."
    )
    COLUMNS = FLAVOR_COLUMNS
    NOUN = ("flavor", "flavors")
    ACTIONS = actions_for("flavors")
    KIND = "flavor"
    READ = "flavors"
    row_of = staticmethod(flavor_row)


def tenant_row(tenant: Mapping[str, Any], now: datetime) -> Row:
    since, seconds = age(tenant.get("createdAt"), now, short=True)
    return Row(tenant["id"], (tenant["id"], str(tenant.get("name") or DASH), since),
               sort=(tenant["id"], tenant.get("name"), seconds))  # fmt: skip


class TenantsView(ObjectsView):
    TITLE = "Tenants"
    ABOUT = (
        "Every tenant you may see, and how long ago it was made. Enter shows its instances "
        "(the Instances view filtered to it; [ comes back); d describes it."
    )
    COLUMNS = (
        Column("id", "ID", name=True),
        Column("name", "NAME", name=True),
        Column("age", "AGE"),
    )
    NOUN = ("tenant", "tenants")
    ACTIONS = actions_for("tenants")
    KIND = "tenant"
    READ = "tenants"
    row_of = staticmethod(tenant_row)

    def open_row(self, key: str) -> None:
        """Enter: the tenant's instances."""
        self.fleet_app.drill("instances", exactly("tenant", key))


def quota_cell(used: int, limit: int | None) -> tuple[Cell, float]:
    """'72/512' for used of a limit ('over' above it), '7/-' where nothing limits it."""
    if limit is None:
        return f"{used}/{DASH}", -1.0
    cell, fraction = usage_cell({"allocated": used, "capacity": limit, "ratio": None})
    return cell, fraction


def quota_row(quota: Mapping[str, Any], now: datetime) -> Row:
    del now
    limits, used = quota.get("limits") or {}, quota.get("used") or {}
    cells: list[Cell] = [str(quota["tenantId"]), str(quota.get("pool") or quota["poolId"])]
    sort: list[Any] = list(cells)
    for resource in QUOTA_RESOURCES:
        if resource not in limits and not used.get(resource):
            cells.append(DIM_DASH)
            sort.append(-2.0)
            continue
        cell, fraction = quota_cell(int(used.get(resource) or 0), limits.get(resource))
        cells.append(cell)
        sort.append(fraction)
    return Row(key_of(quota), tuple(cells), sort=tuple(sort))


class QuotasView(ObjectsView):
    TITLE = "Quotas"
    ABOUT = (
        "Each tenant's quota in each pool: used/limit per resource ('-' after the slash: no "
        "limit; 'over' when a lowered limit is under what is used). Enter or d describes it."
    )
    COLUMNS = (
        Column("tenant", "TENANT", name=True),
        Column("pool", "POOL", name=True),
        Column("vcpu", "VCPU"),
        Column("memory", "MEM GiB"),
        Column("disk", "DISK GiB", give_way=1),
        Column("gpu", "GPU"),
    )
    NOUN = ("quota", "quotas")
    ACTIONS = actions_for("quotas")
    KIND = "quota"
    READ = "quotas"
    row_of = staticmethod(quota_row)

    def row_name(self, key: str) -> str:
        item = self.item(key) or {}
        return f"{item.get('tenantId')}/{item.get('pool')}" if item else key


def account_row(account: Mapping[str, Any], now: datetime) -> Row:
    since, seconds = age(account.get("createdAt"), now, short=True)
    token: Cell = (
        f"${account['tokenEnv']}"
        if account.get("tokenEnv")
        else ("stored" if account.get("hasToken") else Text("none", style="yellow"))
    )
    cells: tuple[Cell, ...] = (
        str(account.get("tenantId") or DASH),
        account["name"],
        account["provider"],
        token,
        croppable(str(account.get("endpoint") or DASH)),
        since,
    )
    sort = (*(c if isinstance(c, str) else c.plain for c in cells[:5]), seconds)
    return Row(account["id"], cells, sort=sort)


class ProviderAccountsView(ObjectsView):
    TITLE = "Provider accounts"
    ABOUT = (
        "Each tenant's provider accounts: the provider, where the token comes from (an "
        "environment variable, or stored sealed; never shown) and the endpoint."
    )
    COLUMNS = (
        Column("tenant", "TENANT", give_way=2, name=True),
        Column("name", "NAME", name=True),
        Column("provider", "PROVIDER"),
        Column("token", "TOKEN"),
        Column("endpoint", "ENDPOINT", crop_to=16),
        Column("age", "AGE", give_way=1),
    )
    NOUN = ("provider account", "provider accounts")
    ACTIONS = actions_for("provider-accounts")
    KIND = "providerAccount"
    READ = "provider_accounts"
    row_of = staticmethod(account_row)

"""Meaning checks on schema-valid FleetConfig data: unique names, references, pool and size rules.

Runs after the schema, so every field has its declared type. References resolve
within the document, except the tenant ``root``, which always exists.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bcfleet.domain.bounds import ratio_notice, ratio_problem
from bcfleet.domain.compute_settings import (
    ComputeSettings,
    capped_spares_message,
    check_default,
    serverless_pool_problem,
)
from bcfleet.domain.flavor_rules import placement_problems
from bcfleet.domain.policy import ROOT_TENANT, may_use_pool
from bcfleet.domain.sizes import DEFAULT_SIZE, SIZE_NAMES, SPARES_MAX
from bcfleet.domain.states import PoolKind
from bcfleet.errors import InvalidInputError
from bcfleet.reconcile.model import normalize_sizes
from bcfleet.reconcile.schema import suggest
from bcfleet.reconcile.yamldoc import PathKey, Problem, json_path

Item = Mapping[str, Any]


@dataclass
class Findings:
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    def error(self, path: PathKey, message: str, *, at_key: bool = False) -> None:
        self.errors.append(Problem(path, message, at_key=at_key))

    def warn(self, path: PathKey, message: str, *, at_key: bool = False) -> None:
        self.warnings.append(Problem(path, message, at_key=at_key))


@dataclass
class _Names:
    tenants: set[str]
    accounts: set[str]
    pools: dict[str, Item]


def _section(data: Mapping[str, Any], name: str) -> list[Item]:
    items = data.get(name) or []
    return [item for item in items if isinstance(item, Mapping)]


def meaning_findings(data: Mapping[str, Any]) -> Findings:
    """Errors and warnings about what a schema-valid document means."""
    found = Findings()
    _check_unique(data, found)
    names = _Names(
        tenants={str(t["id"]) for t in _section(data, "tenants")} | {ROOT_TENANT},
        accounts={str(a["name"]) for a in _section(data, "providerAccounts")},
        pools={},
    )
    for pool in _section(data, "pools"):
        names.pools.setdefault(str(pool["name"]), pool)
    _check_pools(data, names, found)
    _check_hosts(data, names, found)
    _check_flavors(data, names, found)
    _check_quotas(data, names, found)
    _check_compute(data, names, found)
    return found


def _check_unique(data: Mapping[str, Any], found: Findings) -> None:
    rules: list[tuple[str, str, Callable[[Item], Hashable], Callable[[Item], str]]] = [
        ("tenants", "id", lambda t: t["id"], lambda t: f"tenant {t['id']!r}"),
        (
            "providerAccounts",
            "name",
            lambda a: a["name"],
            lambda a: f"provider account {a['name']!r}",
        ),
        ("pools", "name", lambda p: p["name"], lambda p: f"pool {p['name']!r}"),
        ("hosts", "name", lambda h: h["name"], lambda h: f"host {h['name']!r}"),
        (
            "flavors",
            "name",
            lambda f: (f["pool"], f["name"]),
            lambda f: f"flavor {f['name']!r} in pool {f['pool']!r}",
        ),
        (
            "quotas",
            "pool",
            lambda q: (q["tenant"], q["pool"]),
            lambda q: f"quota of tenant {q['tenant']!r} in pool {q['pool']!r}",
        ),
        (
            "compute",
            "tenant",
            lambda c: c["tenant"],
            lambda c: f"compute settings of {c['tenant']!r}",
        ),
    ]
    for section, field_name, key, label in rules:
        first: dict[Hashable, int] = {}
        for index, item in enumerate(_section(data, section)):
            seen = first.setdefault(key(item), index)
            if seen != index:
                where = json_path((section, seen))
                found.error(
                    (section, index, field_name),
                    f"duplicate {label(item)}: already declared at {where}",
                )


def _reference(
    found: Findings, path: PathKey, kind: str, name: str, known: set[str] | Mapping[str, Any]
) -> bool:
    if name in known:
        return True
    declared = sorted(known)
    found.error(path, f"unknown {kind} {name!r}{suggest(name, declared)}")
    return False


def _tenant_may_use(pool: Item, tenant: str) -> bool:
    return may_use_pool(tenant, pool.get("owner", ROOT_TENANT), pool.get("offeredTo") or [])


def _check_pools(data: Mapping[str, Any], names: _Names, found: Findings) -> None:
    for index, pool in enumerate(_section(data, "pools")):
        at: PathKey = ("pools", index)
        _reference(found, (*at, "owner"), "tenant", pool.get("owner", ROOT_TENANT), names.tenants)
        owner = pool.get("owner", ROOT_TENANT)
        for position, tenant in enumerate(pool.get("offeredTo") or []):
            _reference(found, (*at, "offeredTo", position), "tenant", tenant, names.tenants)
            if tenant == owner:
                found.warn(
                    (*at, "offeredTo", position),
                    f"{tenant!r} owns pool {pool['name']!r}, so offering it to {tenant!r} "
                    "changes nothing and is ignored",
                )
        account = pool.get("providerAccount")
        if account is not None and pool["kind"] != PoolKind.PROVIDER:
            found.error(
                (*at, "providerAccount"),
                "providerAccount is only for provider pools (kind: provider)",
                at_key=True,
            )
        elif account is not None:
            known = _reference(
                found, (*at, "providerAccount"), "provider account", account, names.accounts
            )
            if known and owner != ROOT_TENANT:  # the API finds a pool's account among its owner's
                found.error(
                    (*at, "owner"),
                    f"provider pool {pool['name']!r} is owned by {owner!r}, but a FleetConfig's "
                    f"provider accounts are {ROOT_TENANT}'s and a pool uses its owner's account: "
                    f"leave owner out (or set it to {ROOT_TENANT})",
                )
        _check_ratios(at, pool, found)


def _check_ratios(at: PathKey, pool: Item, found: Findings) -> None:
    """A ratio outside 0.1..100 is clamped, and the plan says so as the API's notice does."""
    ratios = (pool.get("policy") or {}).get("overcommit") or {}
    for key, value in ratios.items():
        field = f"overcommit.{key}"
        if ratio_problem(field, value) is None:
            notice = ratio_notice(field, float(value))
            if notice is not None:
                found.warn((*at, "policy", "overcommit", key), notice)


def _check_hosts(data: Mapping[str, Any], names: _Names, found: Findings) -> None:
    for index, host in enumerate(_section(data, "hosts")):
        path: PathKey = ("hosts", index, "pool")
        if not _reference(found, path, "pool", host["pool"], names.pools):
            continue
        if names.pools[host["pool"]]["kind"] == PoolKind.PROVIDER:
            found.error(
                path,
                f"hosts belong to vps-host pools; {host['pool']!r} is a provider pool, "
                "whose servers the provider runs",
            )


def _check_flavors(data: Mapping[str, Any], names: _Names, found: Findings) -> None:
    for index, flavor in enumerate(_section(data, "flavors")):
        at: PathKey = ("flavors", index)
        hugepages = (flavor.get("placement") or {}).get("hugepageSizeBytes")
        if hugepages is not None:
            problems = placement_problems({"hugepageSizeBytes": int(hugepages)})
            for problem in problems.values():
                found.error((*at, "placement", "hugepageSizeBytes"), problem)
        if not _reference(found, (*at, "pool"), "pool", flavor["pool"], names.pools):
            continue
        pool = names.pools[flavor["pool"]]
        label = f"flavor {flavor['name']!r}"
        if pool["kind"] == PoolKind.PROVIDER:
            if "offerId" not in flavor:
                found.error(at, f"{label} of provider pool {pool['name']!r} needs an offerId")
            if flavor.get("placement"):
                found.error(
                    (*at, "placement"),
                    "placement is for vps-host pools; the provider places provider servers",
                    at_key=True,
                )
            continue
        if "offerId" in flavor:
            found.error(
                (*at, "offerId"),
                f"offerId is for flavors of provider pools; {pool['name']!r} is a vps-host pool",
                at_key=True,
            )
        if flavor.get("gpus", 0) > 0 and not pool.get("gpuModel"):
            found.warn(
                (*at, "gpus"),
                f"pool {pool['name']!r} has no gpuModel, so GPU hours of {label} "
                "cannot be metered as gpu.<model>.hours",
            )


def _check_quotas(data: Mapping[str, Any], names: _Names, found: Findings) -> None:
    for index, quota in enumerate(_section(data, "quotas")):
        at: PathKey = ("quotas", index)
        known_tenant = _reference(found, (*at, "tenant"), "tenant", quota["tenant"], names.tenants)
        known_pool = _reference(found, (*at, "pool"), "pool", quota["pool"], names.pools)
        if (
            known_tenant
            and known_pool
            and not _tenant_may_use(names.pools[quota["pool"]], quota["tenant"])
        ):
            found.warn(
                at,
                f"pool {quota['pool']!r} is not offered to tenant {quota['tenant']!r}, "
                "so this quota has nothing to limit",
            )


def _check_compute(data: Mapping[str, Any], names: _Names, found: Findings) -> None:
    for index, settings in enumerate(_section(data, "compute")):
        at: PathKey = ("compute", index)
        tenant = settings["tenant"]
        _reference(found, (*at, "tenant"), "tenant", tenant, names.tenants)
        pool_name = str(settings.get("serverlessPool", ""))
        known = bool(pool_name) and _reference(
            found, (*at, "serverlessPool"), "pool", pool_name, names.pools
        )
        if known and not _tenant_may_use(names.pools[pool_name], tenant):
            found.error(
                (*at, "serverlessPool"),
                f"pool {pool_name!r} is neither owned by nor offered to tenant {tenant!r}: "
                "offer it to the tenant (offeredTo) to run its spare instances there",
            )
        elif known:
            problem = serverless_pool_problem(pool_name, str(names.pools[pool_name]["kind"]))
            if problem is not None:
                found.error((*at, "serverlessPool"), problem)
        _check_sizes(at, settings, found)


def _check_sizes(at: PathKey, settings: Item, found: Findings) -> None:
    sizes: Mapping[str, Item] = settings.get("sizes") or {}
    enabled = {size for size in SIZE_NAMES if (sizes.get(size) or {}).get("enabled", True)}
    for size, setting in sizes.items():
        spares = setting.get("spares", 0)
        path: PathKey = (*at, "sizes", size, "spares")
        if size not in enabled and spares > 0:
            found.warn(path, f"{size} is off, so its {spares} spare instances are not kept ready")
        elif spares > SPARES_MAX:
            found.warn(path, capped_spares_message(size, spares))
    default = settings.get("defaultSize")
    proposed = ComputeSettings(sizes=normalize_sizes(sizes), default_size=default)
    try:
        check_default(ComputeSettings(), proposed)  # the settings API's default-size rules
    except InvalidInputError as error:
        where = ("defaultSize",) if default is not None else ("sizes", DEFAULT_SIZE, "enabled")
        found.error((*at, *where), error.message)

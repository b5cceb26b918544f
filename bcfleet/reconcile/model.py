"""Frozen snapshots the planner compares: DesiredFleet (a FleetConfig), ObservedFleet (the state).

Both sides share the *Spec* dataclasses, normalized the same way (see the
``normalize_*`` helpers), so an applied document plans no changes: whoever builds
an ObservedFleet from the database passes the stored values through the same
helpers. Observed objects wrap a spec with what only the state knows: whether a
FleetConfig manages the object, ids, versions, archiving and references.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bcfleet.domain.bounds import whole_value
from bcfleet.domain.compute_settings import SizeSetting, SizeUsers, default_sizes
from bcfleet.domain.fit import ResourceRow
from bcfleet.domain.host_reserve import HostReserve
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.domain.pool_policy import effective_ratios, effective_reserve
from bcfleet.domain.scalars import per_scalar
from bcfleet.domain.shapes import PlacementPolicy, placement_from_json
from bcfleet.domain.sizes import SIZE_NAMES, SizeName, kept_spares
from bcfleet.domain.states import HostState

# ---------------------------------------------------------------------------
# Specs: what a FleetConfig declares, normalized.


@dataclass(frozen=True)
class Overcommit:
    """policy.overcommit: the ratio per scalar resource, each within 0.1..100 (bounds.RATIO_*)."""

    vcpu: float = 1.0
    memory_gib: float = 1.0
    disk_gib: float = 1.0

    @classmethod
    def of(cls, ratios: Mapping[str, float]) -> Overcommit:
        """From ratios in force by resource name (pool_policy.effective_ratios, effectivePolicy)."""
        return cls(ratios["vcpu"], ratios["memoryGiB"], ratios["diskGiB"])

    def ratio(self, resource: str) -> float:
        return per_scalar(self.vcpu, self.memory_gib, self.disk_gib)[resource]


@dataclass(frozen=True)
class TenantSpec:
    id: str
    name: str

    @property
    def address(self) -> str:
        return f"tenant.{self.id}"


@dataclass(frozen=True)
class ProviderAccountSpec:
    name: str
    provider: str
    token_env: str
    endpoint: str | None = None

    @property
    def address(self) -> str:
        return f"providerAccount.{self.name}"


@dataclass(frozen=True)
class PoolSpec:
    name: str
    kind: str  # vps-host | provider
    owner: str = ROOT_TENANT
    gpu_model: str | None = None
    overcommit: Overcommit = field(default_factory=Overcommit)
    host_reserve: HostReserve = field(default_factory=HostReserve)
    provider_account: str | None = None

    @property
    def address(self) -> str:
        return f"pool.{self.name}"


@dataclass(frozen=True)
class OfferSpec:
    """A pool offered to a tenant (a FleetConfig's pools[].offeredTo[])."""

    pool: str
    tenant: str

    @property
    def address(self) -> str:
        return f"offer.{self.pool}.{self.tenant}"


@dataclass(frozen=True)
class HostSpec:
    name: str
    pool: str
    labels: tuple[tuple[str, str], ...] = ()  # sorted by key
    tenant_controlled: bool = False

    @property
    def address(self) -> str:
        return f"host.{self.name}"


@dataclass(frozen=True)
class FlavorSpec:
    pool: str
    name: str
    vcpu: int
    memory_gib: int
    disk_gib: int
    gpus: int = 0
    offer_id: str | None = None
    placement: PlacementPolicy | None = None  # None when nothing is asked for

    @property
    def address(self) -> str:
        return f"flavor.{self.pool}.{self.name}"


@dataclass(frozen=True)
class QuotaSpec:
    """A tenant's limits in a pool; None is not limited."""

    tenant: str
    pool: str
    vcpu: int | None = None
    memory_gib: int | None = None
    disk_gib: int | None = None
    gpu: int | None = None

    @property
    def address(self) -> str:
        return f"quota.{self.tenant}.{self.pool}"


@dataclass(frozen=True)
class ComputeSpec:
    tenant: str
    serverless_pool: str | None = None
    default_size: SizeName | None = None  # None: Medium, as document 004 says
    sizes: tuple[SizeSetting, ...] = field(default_factory=default_sizes)  # in SIZE_NAMES order

    @property
    def address(self) -> str:
        return f"compute.{self.tenant}"


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in a document, where it is: 1-based line and column, and the JSON path."""

    file: str
    line: int
    column: int
    path: str
    message: str

    def format(self) -> str:
        return f"{self.file}:{self.line}:{self.column}: {self.message} [{self.path}]"

    def to_json(self) -> dict[str, str | int]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": self.path,
            "message": self.message,
        }


@dataclass(frozen=True)
class DesiredFleet:
    """A validated FleetConfig: every reference resolves, every default is filled in."""

    tenants: tuple[TenantSpec, ...] = ()
    provider_accounts: tuple[ProviderAccountSpec, ...] = ()
    pools: tuple[PoolSpec, ...] = ()
    offers: tuple[OfferSpec, ...] = ()
    hosts: tuple[HostSpec, ...] = ()
    flavors: tuple[FlavorSpec, ...] = ()
    quotas: tuple[QuotaSpec, ...] = ()
    compute: tuple[ComputeSpec, ...] = ()
    warnings: tuple[Diagnostic, ...] = field(default=(), compare=False)
    digest: str = field(default="", compare=False)  # sha256 of the document's text

    @property
    def object_count(self) -> int:
        return sum(
            len(group)
            for group in (
                self.tenants,
                self.provider_accounts,
                self.pools,
                self.offers,
                self.hosts,
                self.flavors,
                self.quotas,
                self.compute,
            )
        )


# ---------------------------------------------------------------------------
# Observed: the state, as loaded from the database.


@dataclass(frozen=True)
class ObservedTenant:
    spec: TenantSpec
    managed: bool = False
    held_by: tuple[str, ...] = ()  # undeclared rows naming a managed tenant: it cannot be deleted


@dataclass(frozen=True)
class ObservedProviderAccount:
    spec: ProviderAccountSpec
    id: str = ""
    managed: bool = False


@dataclass(frozen=True)
class ObservedPool:
    spec: PoolSpec
    id: str = ""
    managed: bool = False
    version: int = 1


@dataclass(frozen=True)
class ObservedOffer:
    """A pool_offers row; it is managed when its pool is."""

    spec: OfferSpec
    managed: bool = False


@dataclass(frozen=True)
class ObservedHost:
    spec: HostSpec
    id: str = ""
    managed: bool = False
    state: str = HostState.READY


@dataclass(frozen=True)
class ObservedFlavor:
    spec: FlavorSpec
    id: str = ""
    managed: bool = False
    archived: bool = False
    referenced: bool = False  # any instance row, deleted ones included, references it
    version: int = 1


@dataclass(frozen=True)
class ObservedQuota:
    spec: QuotaSpec
    managed: bool = False


@dataclass(frozen=True)
class ObservedCompute:
    spec: ComputeSpec
    managed: bool = False


@dataclass(frozen=True)
class HostCapacity:
    """A host's node_resources rows, and the inventory totals (by resource) they derive from;
    without totals (an unreadable inventory, a tenant-controlled host) vps.hosts keeps the rows."""

    host: str
    pool: str
    rows: tuple[ResourceRow, ...] = ()
    totals: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ObservedFleet:
    revision: int = 0
    tenants: tuple[ObservedTenant, ...] = ()
    provider_accounts: tuple[ObservedProviderAccount, ...] = ()
    pools: tuple[ObservedPool, ...] = ()
    offers: tuple[ObservedOffer, ...] = ()
    hosts: tuple[ObservedHost, ...] = ()
    flavors: tuple[ObservedFlavor, ...] = ()
    quotas: tuple[ObservedQuota, ...] = ()
    compute: tuple[ObservedCompute, ...] = ()
    size_users: Mapping[str, SizeUsers] = field(default_factory=dict)  # by tenant
    capacity: tuple[HostCapacity, ...] = ()


# ---------------------------------------------------------------------------
# Normalization shared by the document loader and the state loader.


def _whole(value: object) -> int:
    """An integral value as an int (YAML's 2.0 is JSON Schema's integer 2); anything else is 0."""
    whole = whole_value(value)
    return whole if isinstance(whole, int) and not isinstance(whole, bool) else 0


def normalize_overcommit(raw: Mapping[str, Any] | None) -> Overcommit:
    """Declared or stored ratios in force: domain.pool_policy.effective_ratios (clamped by the
    one rule, 1 when left out), as the API's effectivePolicy answers them."""
    return Overcommit.of(effective_ratios(raw))


def normalize_host_reserve(
    raw: Mapping[str, int] | None, default: HostReserve | None = None
) -> HostReserve:
    """A pool's policy.hostReserve over the fleet's default reserve (pool_policy.effective_reserve)."""
    return effective_reserve(raw, default or HostReserve())


def normalize_labels(raw: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(key), str(value)) for key, value in (raw or {}).items()))


def normalize_placement(raw: Mapping[str, object] | None) -> PlacementPolicy | None:
    """A placement, or None when it asks for nothing (so `{}` and no placement agree)."""
    if not raw:
        return None
    return placement_from_json(
        {
            "numaAffine": bool(raw.get("numaAffine", False)),
            "pinned": bool(raw.get("pinned", False)),
            "hugepageSizeBytes": _whole(raw.get("hugepageSizeBytes")) or None,
        }
    )


def normalize_size_setting(size: SizeName, raw: Mapping[str, object] | None) -> SizeSetting:
    """A size as declared; what is left out keeps its default (on, 0 spares), spares clamp to 10."""
    if raw is None:
        return SizeSetting(size)
    enabled = bool(raw.get("enabled", True))
    return SizeSetting(size, enabled, kept_spares(max(_whole(raw.get("spares", 0)), 0)))


def normalize_sizes(raw: Mapping[str, Mapping[str, object]] | None) -> tuple[SizeSetting, ...]:
    raw = raw or {}
    return tuple(normalize_size_setting(size, raw.get(size)) for size in SIZE_NAMES)

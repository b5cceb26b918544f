"""Frozen snapshots the planner compares: DesiredFleet (a FleetConfig), ObservedFleet (the state).

Both sides share the *Spec* dataclasses, normalized the same way (see the
``normalize_*`` helpers), so an applied document plans no changes: whoever builds
an ObservedFleet from the database passes the stored values through the same
helpers. Observed objects wrap a spec with what only the state knows: whether a
FleetConfig manages the object, ids, versions, archiving and references.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Literal

from bcfleet.domain.fit import clamp_ratio
from bcfleet.settings import HostReserve

SizeName = Literal["small", "medium", "large", "xlarge"]
SIZES: tuple[SizeName, ...] = ("small", "medium", "large", "xlarge")
RESOURCES: tuple[str, ...] = ("vcpu", "memoryGiB", "diskGiB")
ROOT_TENANT = "root"

MAX_SPARES = 10  # document 004: "Maximum is 10 spare instances per size"
LEGACY_SERVICE_SIZE = "large"  # document 004: services from before sizes ran with 8 GiB, Large
HOURS_PER_MONTH = 720  # document 004: a month counts as 30 days of always-on spares
CREDITS_PER_SPARE_HOUR = 1  # document 004: every size uses 1 credit per instance per hour


# ---------------------------------------------------------------------------
# Specs: what a FleetConfig declares, normalized.


@dataclass(frozen=True)
class Overcommit:
    """policy.overcommit: the ratio per scalar resource, each within 0.1..100 (bounds.RATIO_*)."""

    vcpu: float = 1.0
    memory_gib: float = 1.0
    disk_gib: float = 1.0

    def ratio(self, resource: str) -> float:
        return {"vcpu": self.vcpu, "memoryGiB": self.memory_gib, "diskGiB": self.disk_gib}[resource]


def reserve_of(reserve: HostReserve, resource: str) -> int:
    """One resource of a host reserve, by its camelCase name."""
    return {"vcpu": reserve.vcpu, "memoryGiB": reserve.memory_gib, "diskGiB": reserve.disk_gib}[
        resource
    ]


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
class Placement:
    numa_affine: bool = False
    pinned: bool = False
    hugepage_size_bytes: int | None = None


@dataclass(frozen=True)
class FlavorSpec:
    pool: str
    name: str
    vcpu: int
    memory_gib: int
    disk_gib: int
    gpus: int = 0
    offer_id: str | None = None
    placement: Placement | None = None  # None when nothing is asked for

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
class SizeSetting:
    """One size of a tenant's compute settings; the default is that of a tenant that never saved."""

    enabled: bool = True
    spares: int = 0  # 0..10; a size that is off keeps none running, whatever is stored

    @property
    def credits_per_month(self) -> int:
        """Document 004: spares × 720 hours × 1 credit, for enabled sizes only."""
        if not self.enabled:
            return 0
        return self.spares * HOURS_PER_MONTH * CREDITS_PER_SPARE_HOUR


@dataclass(frozen=True)
class SizeSettings:
    small: SizeSetting = field(default_factory=SizeSetting)
    medium: SizeSetting = field(default_factory=SizeSetting)
    large: SizeSetting = field(default_factory=SizeSetting)
    xlarge: SizeSetting = field(default_factory=SizeSetting)

    def get(self, size: str) -> SizeSetting:
        value: SizeSetting = getattr(self, size)
        return value

    def items(self) -> Iterator[tuple[SizeName, SizeSetting]]:
        for size in SIZES:
            yield size, self.get(size)

    @property
    def credits_per_month(self) -> int:
        return sum(setting.credits_per_month for _, setting in self.items())


@dataclass(frozen=True)
class ComputeSpec:
    tenant: str
    serverless_pool: str | None = None
    default_size: SizeName | None = None  # None: Medium, as document 004 says
    sizes: SizeSettings = field(default_factory=SizeSettings)

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
    state: str = "ready"


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
class ServiceUse:
    """A service of a tenant: ``size`` is its own size (None: deployed before sizes existed,
    so Large), ``environment`` the environment it runs in, whose size it then runs on."""

    workspace: str
    name: str
    hosting: str  # serverless | managed
    deployed: bool
    size: str | None
    environment: str | None = None


@dataclass(frozen=True)
class IndexUse:
    workspace: str
    name: str
    pod_size: str | None  # None: the default pod size, which never blocks a size


@dataclass(frozen=True)
class EnvironmentUse:
    name: str
    size: str


@dataclass(frozen=True)
class SizeUsers:
    """Everything of one tenant that may hold an instance size (document 004)."""

    tenant: str
    services: tuple[ServiceUse, ...] = ()
    indexes: tuple[IndexUse, ...] = ()
    environments: tuple[EnvironmentUse, ...] = ()


@dataclass(frozen=True)
class ResourceRow:
    """One node_resources row, with the inventory total it was derived from."""

    resource: str  # vcpu | memoryGiB | diskGiB
    total: int
    allocatable: int
    ratio: float
    allocated: int

    @property
    def capacity(self) -> int:
        return capacity_of(self.allocatable, self.ratio)


@dataclass(frozen=True)
class HostCapacity:
    host: str
    pool: str
    rows: tuple[ResourceRow, ...] = ()


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
    size_users: tuple[SizeUsers, ...] = ()
    capacity: tuple[HostCapacity, ...] = ()


# ---------------------------------------------------------------------------
# Normalization shared by the document loader and the state loader.


def capacity_of(allocatable: int, ratio: float) -> int:
    """floor(allocatable × ratio), robust to binary fractions such as 0.29 × 100."""
    return max(0, math.floor(allocatable * ratio + 1e-9))


def _whole(value: object) -> int:
    """An integral value as an int (YAML's 2.0 is JSON Schema's integer 2); anything else is 0."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return 0


def normalize_overcommit(raw: Mapping[str, float] | None) -> Overcommit:
    raw = raw or {}
    return Overcommit(
        vcpu=clamp_ratio(raw.get("vcpu", 1.0)),
        memory_gib=clamp_ratio(raw.get("memoryGiB", 1.0)),
        disk_gib=clamp_ratio(raw.get("diskGiB", 1.0)),
    )


def normalize_host_reserve(
    raw: Mapping[str, int] | None, default: HostReserve | None = None
) -> HostReserve:
    raw = raw or {}
    base = default or HostReserve()
    return HostReserve(
        vcpu=int(raw.get("vcpu", base.vcpu)),
        memory_gib=int(raw.get("memoryGiB", base.memory_gib)),
        disk_gib=int(raw.get("diskGiB", base.disk_gib)),
    )


def normalize_labels(raw: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(key), str(value)) for key, value in (raw or {}).items()))


def normalize_placement(raw: Mapping[str, object] | None) -> Placement | None:
    """A placement, or None when it asks for nothing (so `{}` and no placement agree)."""
    if not raw:
        return None
    hugepages = _whole(raw.get("hugepageSizeBytes"))
    placement = Placement(
        numa_affine=bool(raw.get("numaAffine", False)),
        pinned=bool(raw.get("pinned", False)),
        hugepage_size_bytes=hugepages or None,
    )
    return None if placement == Placement() else placement


def normalize_size_setting(raw: Mapping[str, object] | None) -> SizeSetting:
    """A size as declared; what is left out keeps its default (on, 0 spares), spares clamp to 10."""
    if raw is None:
        return SizeSetting()
    enabled = bool(raw.get("enabled", True))
    count = min(_whole(raw.get("spares", 0)), MAX_SPARES)
    return SizeSetting(enabled=enabled, spares=max(count, 0))


def normalize_sizes(raw: Mapping[str, Mapping[str, object]] | None) -> SizeSettings:
    raw = raw or {}
    return SizeSettings(**{size: normalize_size_setting(raw.get(size)) for size in SIZES})

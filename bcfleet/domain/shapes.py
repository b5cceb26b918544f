"""Values the placement deciders share: a flavor's shape and placement, a host's inventory.

Called by the API layer (flavors, instances, resize), the vps.hosts job and the deciders in
fit.py and numa.py. JSON uses the documents' camelCase (vcpu, memoryGiB, diskGiB, gpus;
numaAffine, pinned, hugepageSizeBytes) and the inventory format of PRODUCT.md §8. Parsing
raises ValueError on a malformed document; the API layer turns it into INVALID_INPUT.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypedDict

from bcfleet.domain.bounds import (
    HUGEPAGE_COUNT_MAX,
    HUGEPAGE_SIZE_MAX,
    SHAPE_MAX,
    number_problem,
    whole_problem,
)
from bcfleet.domain.scalars import per_scalar

GIB = 1 << 30


def _whole(value: Any, name: str, minimum: int = 0, maximum: int = SHAPE_MAX) -> int:
    problem = whole_problem(name, value, minimum, maximum)
    if problem:
        raise ValueError(problem)
    return int(value)


def _number(value: Any, name: str) -> float:
    problem = number_problem(name, value, 0, SHAPE_MAX)
    if problem:
        raise ValueError(problem)
    return float(value)


def _node(value: Any, name: str) -> int | None:
    return None if value is None else _whole(value, name)


class ShapeJson(TypedDict):
    """What an instance is sized to: its vCPUs, memory and disk in GiB, and whole GPUs."""

    vcpu: int
    memoryGiB: int
    diskGiB: int
    gpus: int


@dataclass(frozen=True)
class Shape:
    """A flavor's shape, copied onto an instance at admission and kept whatever the flavor does."""

    vcpu: int
    memory_gib: int
    disk_gib: int
    gpus: int = 0

    def __post_init__(self) -> None:
        _whole(self.vcpu, "vcpu", 1)
        _whole(self.memory_gib, "memoryGiB", 1)
        _whole(self.disk_gib, "diskGiB")
        _whole(self.gpus, "gpus")

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Shape:
        """The shape of a flavor or instance document; other keys (name, placement) are ignored.

        Each value is checked once, here, by the constructor's own checks (__post_init__ would
        check the same whole numbers again: a placement parses its shape on every call).
        """
        shape = object.__new__(cls)
        shape.__dict__.update(
            vcpu=_whole(doc.get("vcpu"), "vcpu", 1),
            memory_gib=_whole(doc.get("memoryGiB"), "memoryGiB", 1),
            disk_gib=_whole(doc.get("diskGiB"), "diskGiB"),
            gpus=_whole(doc.get("gpus", 0), "gpus"),
        )
        return shape

    def to_json(self) -> ShapeJson:
        return {
            "vcpu": self.vcpu,
            "memoryGiB": self.memory_gib,
            "diskGiB": self.disk_gib,
            "gpus": self.gpus,
        }

    def claims(self) -> dict[str, int]:
        """The scalar claims on a host's rows: vcpu, memoryGiB and diskGiB."""
        return per_scalar(self.vcpu, self.memory_gib, self.disk_gib)

    def quota_charge(self) -> dict[str, int]:
        """What the shape counts against quota: the scalars, and gpu when gpus is above 0."""
        charge = self.claims()
        if self.gpus > 0:
            charge["gpu"] = self.gpus
        return charge


@dataclass(frozen=True)
class ShapeDelta:
    """new − old per resource, for a resize: positive is growth, negative is shrinkage."""

    vcpu: int
    memory_gib: int
    disk_gib: int
    gpus: int

    def _scalars(self) -> dict[str, int]:
        return per_scalar(self.vcpu, self.memory_gib, self.disk_gib)

    @property
    def changes_gpus(self) -> bool:
        """A resize may not change the GPU count (UNSUPPORTED)."""
        return self.gpus != 0

    def growth(self) -> dict[str, int]:
        """The scalars that grow, by how much: charged to quota, claimed with the guarded update."""
        return {key: value for key, value in self._scalars().items() if value > 0}

    def shrinkage(self) -> dict[str, int]:
        """The scalars that shrink and by how much (positive amounts): refunded and returned."""
        return {key: -value for key, value in self._scalars().items() if value < 0}

    @property
    def is_zero(self) -> bool:
        return not self.growth() and not self.shrinkage() and not self.changes_gpus


def shape_delta(old: Shape, new: Shape) -> ShapeDelta:
    """The difference per resource between an instance's shape and the one it is resized to."""
    return ShapeDelta(
        vcpu=new.vcpu - old.vcpu,
        memory_gib=new.memory_gib - old.memory_gib,
        disk_gib=new.disk_gib - old.disk_gib,
        gpus=new.gpus - old.gpus,
    )


@dataclass(frozen=True)
class PlacementPolicy:
    """Where a flavor's guests live on their host (document 000, "Placement")."""

    numa_affine: bool = False
    pinned: bool = False
    hugepage_size_bytes: int | None = None

    def __post_init__(self) -> None:
        size = self.hugepage_size_bytes
        if size is not None and (
            _whole(size, "hugepageSizeBytes", 4096, HUGEPAGE_SIZE_MAX) & (size - 1)
        ):
            raise ValueError(f"hugepageSizeBytes must be a power of two, got {size!r}")

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> PlacementPolicy:
        unknown = set(doc) - {"numaAffine", "pinned", "hugepageSizeBytes"}
        if unknown:
            raise ValueError(f"unknown placement fields: {', '.join(sorted(unknown))}")
        flags = {key: doc.get(key, False) for key in ("numaAffine", "pinned")}
        for key, value in flags.items():
            if not isinstance(value, bool):
                raise ValueError(f"placement.{key} must be true or false, got {value!r}")
        return cls(flags["numaAffine"], flags["pinned"], doc.get("hugepageSizeBytes"))

    def to_json(self) -> dict[str, Any]:
        return {
            "numaAffine": self.numa_affine,
            "pinned": self.pinned,
            "hugepageSizeBytes": self.hugepage_size_bytes,
        }

    @property
    def asks_for_anything(self) -> bool:
        return self.numa_affine or self.pinned or self.hugepage_size_bytes is not None


def placement_from_json(doc: Mapping[str, Any] | None) -> PlacementPolicy | None:
    """A flavor's placement, or None when it has none or asks for nothing (no capability needed)."""
    if not doc:
        return None
    policy = PlacementPolicy.from_json(doc)
    return policy if policy.asks_for_anything else None


@dataclass(frozen=True)
class Cpu:
    id: int
    numa_node: int | None
    isolated: bool


@dataclass(frozen=True)
class HugepagePool:
    """Huge pages of one size on one NUMA node, as the host reports them."""

    size_bytes: int
    total: int
    free: int


@dataclass(frozen=True)
class NumaNode:
    """A NUMA node; memory_gib counts all its memory, its huge page pools included."""

    id: int
    memory_gib: float
    hugepages: tuple[HugepagePool, ...] = ()

    def hugepage_pool(self, size_bytes: int) -> HugepagePool | None:
        return next((p for p in self.hugepages if p.size_bytes == size_bytes), None)

    @property
    def hugepage_gib(self) -> float:
        return sum(p.total * p.size_bytes for p in self.hugepages) / GIB


@dataclass(frozen=True)
class Gpu:
    """One GPU atom: passed through whole with VFIO; numa_node None when unknown."""

    model: str
    pci_address: str
    numa_node: int | None


@dataclass(frozen=True)
class Inventory:
    """What a host agent reports (PRODUCT.md §8); the vCPU count is the number of CPUs."""

    cpus: tuple[Cpu, ...]
    numa_nodes: tuple[NumaNode, ...]
    memory_gib: float
    disk_gib: float
    gpus: tuple[Gpu, ...] = ()

    @property
    def vcpu(self) -> int:
        return len(self.cpus)

    def node(self, node_id: int) -> NumaNode | None:
        return next((n for n in self.numa_nodes if n.id == node_id), None)

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Inventory:
        try:
            return cls(
                cpus=tuple(_cpu(c) for c in doc["cpus"]),
                numa_nodes=tuple(_numa_node(n) for n in doc["numaNodes"]),
                memory_gib=_number(doc["memoryGiB"], "memoryGiB"),
                disk_gib=_number(doc["diskGiB"], "diskGiB"),
                gpus=tuple(_gpu(g) for g in doc.get("gpus", ())),
            )
        except (KeyError, TypeError) as exc:
            raise ValueError(f"malformed inventory: {exc!r}") from exc

    @classmethod
    def from_stored(cls, doc: Mapping[str, Any]) -> Inventory:
        """An inventory that was validated when it was stored: built without checking it again."""
        return cls(
            cpus=tuple(
                Cpu(c["id"], c.get("numaNode"), c.get("isolated", False)) for c in doc["cpus"]
            ),
            numa_nodes=tuple(
                NumaNode(
                    n["id"],
                    n["memoryGiB"],
                    tuple(
                        HugepagePool(p["sizeBytes"], p["total"], p["free"])
                        for p in n.get("hugepages", ())
                    ),
                )
                for n in doc["numaNodes"]
            ),
            memory_gib=doc["memoryGiB"],
            disk_gib=doc["diskGiB"],
            gpus=tuple(
                Gpu(g["model"], g["pciAddress"], g.get("numaNode")) for g in doc.get("gpus", ())
            ),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "cpus": [
                {"id": c.id, "numaNode": c.numa_node, "isolated": c.isolated} for c in self.cpus
            ],
            "numaNodes": [_numa_node_json(n) for n in self.numa_nodes],
            "memoryGiB": self.memory_gib,
            "diskGiB": self.disk_gib,
            "gpus": [
                {"model": g.model, "pciAddress": g.pci_address, "numaNode": g.numa_node}
                for g in self.gpus
            ],
        }


def _cpu(doc: Mapping[str, Any]) -> Cpu:
    isolated = doc.get("isolated", False)
    if not isinstance(isolated, bool):
        raise ValueError(f"cpus[].isolated must be true or false, got {isolated!r}")
    return Cpu(
        _whole(doc["id"], "cpus[].id"), _node(doc.get("numaNode"), "cpus[].numaNode"), isolated
    )


def _numa_node(doc: Mapping[str, Any]) -> NumaNode:
    pages = tuple(
        HugepagePool(
            _whole(p["sizeBytes"], "hugepages[].sizeBytes", 4096, HUGEPAGE_SIZE_MAX),
            _whole(p["total"], "hugepages[].total", 0, HUGEPAGE_COUNT_MAX),
            _whole(p["free"], "hugepages[].free", 0, HUGEPAGE_COUNT_MAX),
        )
        for p in doc.get("hugepages", ())
    )
    return NumaNode(
        _whole(doc["id"], "numaNodes[].id"), _number(doc["memoryGiB"], "memoryGiB"), pages
    )


def _numa_node_json(node: NumaNode) -> dict[str, Any]:
    return {
        "id": node.id,
        "memoryGiB": node.memory_gib,
        "hugepages": [
            {"sizeBytes": p.size_bytes, "total": p.total, "free": p.free} for p in node.hugepages
        ],
    }


def _gpu(doc: Mapping[str, Any]) -> Gpu:
    return Gpu(
        str(doc["model"]), str(doc["pciAddress"]), _node(doc.get("numaNode"), "gpus[].numaNode")
    )

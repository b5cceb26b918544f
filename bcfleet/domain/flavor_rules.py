"""What makes a flavor well formed: its name, a positive whole-number shape, and its placement."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bcfleet.domain.bounds import (
    HUGEPAGE_SIZE_MAX,
    HUGEPAGE_SIZES,
    SHAPE_MAX,
    SLUG,
    whole_problem,
    whole_value,
)

FLAVOR_NAME = SLUG
PLACEMENT_KEYS = ("numaAffine", "pinned", "hugepageSizeBytes")


def _whole(value: Any) -> bool:
    value = whole_value(value)
    return isinstance(value, int) and not isinstance(value, bool)


def shape_problems(vcpu: Any, memory_gib: Any, disk_gib: Any, gpus: Any) -> dict[str, str]:
    """Field → problem for a shape: vcpu, memoryGiB, diskGiB in 1..SHAPE_MAX, gpus in 0..SHAPE_MAX."""
    problems: dict[str, str] = {}
    fields = (("vcpu", vcpu, 1), ("memoryGiB", memory_gib, 1), ("diskGiB", disk_gib, 1))
    for field, value, low in (*fields, ("gpus", gpus, 0)):
        problem = whole_problem(field, value, low, SHAPE_MAX)
        if problem:
            problems[field] = problem
    return problems


def whole_shape(vcpu: Any, memory_gib: Any, disk_gib: Any, gpus: Any) -> tuple[int, int, int, int]:
    """A shape shape_problems passed, as ints (2.0 is 2: bounds.whole_value)."""
    return (whole_value(vcpu), whole_value(memory_gib), whole_value(disk_gib), whole_value(gpus))


def name_problem(name: Any) -> str | None:
    if not isinstance(name, str) or not FLAVOR_NAME.fullmatch(name):
        return (
            f"flavor name {name!r} must be 1-63 lower-case letters, digits, '.', '_' or '-' "
            "(for example g1.small or gpu1.l40s)"
        )
    return None


def placement_problems(placement: Any) -> dict[str, str]:
    """Problems with a placement {numaAffine, pinned, hugepageSizeBytes}; empty when well formed."""
    if placement is None:
        return {}
    if not isinstance(placement, Mapping):
        return {"placement": "placement must be an object"}
    problems: dict[str, str] = {}
    for key in placement:
        if key not in PLACEMENT_KEYS:
            problems[f"placement.{key}"] = (
                f"unknown placement field {key!r}; use {', '.join(PLACEMENT_KEYS)}"
            )
    for key in ("numaAffine", "pinned"):
        if key in placement and not isinstance(placement[key], bool):
            problems[f"placement.{key}"] = f"placement.{key} must be true or false"
    size = placement.get("hugepageSizeBytes")
    if size is not None and (not _whole(size) or size not in HUGEPAGE_SIZES):
        problems["placement.hugepageSizeBytes"] = (
            f"hugepageSizeBytes must be a power of two from 4096 to {HUGEPAGE_SIZE_MAX} "
            "(2 MiB is 2097152, 1 GiB is 1073741824)"
        )
    return problems


def normalize_placement(placement: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A placement with defaults filled in, or None when it asks for nothing."""
    if not placement:
        return None
    normalized = {
        "numaAffine": bool(placement.get("numaAffine", False)),
        "pinned": bool(placement.get("pinned", False)),
        "hugepageSizeBytes": whole_value(placement.get("hugepageSizeBytes")),
    }
    if (
        not normalized["numaAffine"]
        and not normalized["pinned"]
        and normalized["hugepageSizeBytes"] is None
    ):
        return None
    return normalized


def validate_profile_flavors(flavors: Any) -> dict[str, str]:
    """A VPS profile's map of flavor names to shapes (document 000, "Flavors in profiles").

    Returns path → problem, empty when valid. Placement does not read profiles; this only
    checks them, so a profile that passes here would also pass flavors.create.
    """
    if not isinstance(flavors, Mapping):
        return {"flavors": "flavors must be a map of flavor names to shapes"}
    problems: dict[str, str] = {}
    for name, shape in flavors.items():
        problem = name_problem(name)
        if problem:
            problems[f"flavors.{name}"] = problem
        if not isinstance(shape, Mapping):
            problems[f"flavors.{name}"] = "a flavor shape must be an object"
            continue
        unknown = set(shape) - {"vcpu", "memoryGiB", "diskGiB", "gpus", "placement"}
        for key in sorted(unknown):
            problems[f"flavors.{name}.{key}"] = f"unknown field {key!r}"
        found = shape_problems(
            shape.get("vcpu"), shape.get("memoryGiB"), shape.get("diskGiB"), shape.get("gpus", 0)
        )
        found.update(placement_problems(shape.get("placement")))
        problems.update({f"flavors.{name}.{k}": v for k, v in found.items()})
    return problems

"""What makes a flavor well formed: its name, a positive whole-number shape, and its placement."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

FLAVOR_NAME = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
PLACEMENT_KEYS = ("numaAffine", "pinned", "hugepageSizeBytes")


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def shape_problems(vcpu: Any, memory_gib: Any, disk_gib: Any, gpus: Any) -> dict[str, str]:
    """Field → problem for a shape: vcpu, memoryGiB and diskGiB whole and above 0, gpus whole >= 0."""
    problems: dict[str, str] = {}
    for field, value in (("vcpu", vcpu), ("memoryGiB", memory_gib), ("diskGiB", disk_gib)):
        if not _whole(value) or value < 1:
            problems[field] = f"{field} must be a whole number above 0, got {value!r}"
    if not _whole(gpus) or gpus < 0:
        problems["gpus"] = f"gpus must be a whole number, 0 or more, got {gpus!r}"
    return problems


def name_problem(name: Any) -> str | None:
    if not isinstance(name, str) or not FLAVOR_NAME.match(name):
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
    if size is not None and (not _whole(size) or size < 4096 or size & (size - 1)):
        problems["placement.hugepageSizeBytes"] = (
            "hugepageSizeBytes must be a power of two of at least 4096 (2 MiB is 2097152, 1 GiB is 1073741824)"
        )
    return problems


def normalize_placement(placement: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A placement with defaults filled in, or None when it asks for nothing."""
    if not placement:
        return None
    normalized = {
        "numaAffine": bool(placement.get("numaAffine", False)),
        "pinned": bool(placement.get("pinned", False)),
        "hugepageSizeBytes": placement.get("hugepageSizeBytes"),
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

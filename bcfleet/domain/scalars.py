"""The scalar resources of a host (vcpu, memoryGiB, diskGiB), by the names rows and documents use.

A module of its own, importing nothing: settings (read by every command) needs the names
without the shapes and the fit check.
"""

from __future__ import annotations

from typing import TypeVar

SCALARS = ("vcpu", "memoryGiB", "diskGiB")
"""The scalar resources of a host's node_resources rows, in the order reasons name them."""

T = TypeVar("T")


def per_scalar(vcpu: T, memory_gib: T, disk_gib: T) -> dict[str, T]:
    """Values by scalar resource, under the names node_resources rows and documents use."""
    return {"vcpu": vcpu, "memoryGiB": memory_gib, "diskGiB": disk_gib}

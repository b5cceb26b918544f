"""What a host keeps for itself before guests (the fleet's default and a pool's hostReserve).

A module of its own: settings (read by every command) holds the default without importing the
fit check and the shapes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bcfleet.domain.scalars import per_scalar


@dataclass(frozen=True)
class HostReserve:
    """What a host keeps for itself before guests: 2 vCPU, 8 GiB and 100 GiB by default."""

    vcpu: int = 2
    memory_gib: int = 8
    disk_gib: int = 100

    def with_overrides(self, doc: Mapping[str, Any] | None) -> HostReserve:
        """This reserve with a pool's policy.hostReserve (camelCase keys) laid over it."""
        doc = doc or {}
        return HostReserve(
            vcpu=int(doc.get("vcpu", self.vcpu)),
            memory_gib=int(doc.get("memoryGiB", self.memory_gib)),
            disk_gib=int(doc.get("diskGiB", self.disk_gib)),
        )

    def of(self, resource: str) -> int:
        return per_scalar(self.vcpu, self.memory_gib, self.disk_gib)[resource]


DEFAULT_RESERVE = HostReserve()

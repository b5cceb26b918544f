"""When a tenant cannot be deleted: the one message the tenants API and a FleetConfig plan give."""

from __future__ import annotations

from collections.abc import Sequence


def still_has(tenant: str, holders: Sequence[str]) -> str:
    """CONFLICT's words for a tenant that rows of these kinds still name."""
    return f"tenant {tenant!r} still has {', '.join(holders)}"

"""A pool's effective policy: the ratio and the host reserve per scalar that vps.hosts applies.

The one place stored (or declared) policy values become the values in force: each ratio as
placement reads it (clamp_ratio: clamped to 0.1..100, 1 when left out or unreadable), each
reserve the pool's hostReserve over the fleet's default (HostReserve.with_overrides). The API
answers them as a pool's ``effectivePolicy``; the CLI, the console and a FleetConfig plan read
them from there or from these functions, never normalising on their own. It imports no fit
check: the API's views, which the host listing loads, show the policy without it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bcfleet.domain.bounds import stored_ratio
from bcfleet.domain.host_reserve import DEFAULT_RESERVE, HostReserve
from bcfleet.domain.scalars import SCALARS


def clamp_ratio(ratio: object) -> float:
    """A stored overcommit as placement reads it: bounds.stored_ratio, 1 for what it cannot read.

    The API stores ratios already clamped (bounds.check_ratio); a row written before that, or
    straight into the table, reads as the API shows it, so capacity never sees anything else.
    """
    stored = stored_ratio(ratio)
    return 1.0 if stored is None else stored


def effective_ratios(stored: Mapping[str, Any] | None) -> dict[str, float]:
    """Every scalar's ratio in force, from a pool's policy.overcommit as stored or declared."""
    stored = stored or {}
    return {resource: clamp_ratio(stored.get(resource)) for resource in SCALARS}


def effective_reserve(
    stored: Mapping[str, Any] | None, default: HostReserve = DEFAULT_RESERVE
) -> HostReserve:
    """The reserve in force: a pool's policy.hostReserve over the fleet's default.

    ValueError when a stored value is no whole number (a row written straight into the table):
    vps.hosts reports that as the pool's hosts' inventory_error.
    """
    try:
        return default.with_overrides(stored)
    except (TypeError, ValueError, OverflowError) as error:
        raise ValueError(f"hostReserve cannot be read: {error}") from None


def effective_reserve_json(
    stored: Mapping[str, Any] | None, default: HostReserve = DEFAULT_RESERVE
) -> dict[str, int | None]:
    """The reserve in force as documents show it; one that cannot be read shows as nulls."""
    try:
        return dict(reserve_json(effective_reserve(stored, default)))
    except ValueError:
        return dict.fromkeys(SCALARS)


def reserve_json(reserve: HostReserve) -> dict[str, int]:
    """A reserve under the names documents use (vcpu, memoryGiB, diskGiB)."""
    return {resource: reserve.of(resource) for resource in SCALARS}

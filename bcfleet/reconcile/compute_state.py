"""Compute settings (document 004) in the state, for plans and applies of a FleetConfig.

The compute settings API and its tables arrive separately; until then the state
has no compute settings to observe, and apply refuses a plan that changes them
instead of skipping part of it.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlmodel import Session

from bcfleet.errors import UnsupportedError
from bcfleet.reconcile.actions import Action
from bcfleet.reconcile.model import ObservedCompute

COMPUTE_APPLY_AVAILABLE = False


def observe_compute(session: Session, pool_names: Mapping[str, str]) -> tuple[ObservedCompute, ...]:
    """Every tenant's saved compute settings (none before the compute settings API lands)."""
    del session, pool_names
    return ()


def refuse_compute(actions: tuple[Action, ...]) -> None:
    """UNSUPPORTED when a plan changes compute settings this build cannot save."""
    addresses = [a.address for a in actions if a.type == "compute" and a.is_change]
    if addresses and not COMPUTE_APPLY_AVAILABLE:
        raise UnsupportedError(
            "this build cannot apply compute settings yet (the compute settings API is "
            f"pending): {', '.join(addresses)}; remove the compute section to apply the rest",
            {"addresses": addresses},
        )

"""What the API is handed instead of the Fleet: what a job reads, the API itself (an area
calling another), the call runner, and joined transactions (store/handle.py says why).

FleetAPI and its areas are built on one; bcfleet/fleet.py's Fleet is the one they are given.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol, TypeVar

from bcfleet.jobs.handle import JobHandle

if TYPE_CHECKING:
    from sqlmodel import Session

    from bcfleet.api.facade import FleetAPI
    from bcfleet.clock import Clock

T = TypeVar("T")


class ApiHandle(JobHandle, Protocol):
    """A fleet as the API (and FleetConfig's apply, above it) sees it."""

    @property
    def api(self) -> FleetAPI: ...

    @property
    def lease_clock(self) -> Clock: ...

    @property
    def session(self) -> Session | None:
        """The joined transaction of a handle transaction() made; None for a fleet's own."""
        ...

    def run_call(self, call: Callable[[], T]) -> T:
        """Run one API call, once more after a lost connection if nothing can have been saved."""
        ...

    def transaction(self, *, bump_revision: bool = True) -> AbstractContextManager[ApiHandle]:
        """One write transaction, and a handle whose API calls all run in it."""
        ...

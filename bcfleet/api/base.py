"""What every area of the API shares: the fleet handle, the first step of a call, and its retry.

Every public method of an area runs through Fleet.run_call(): a database connection lost
before COMMIT runs the whole call once more (store/faults.py has the rule). The wrapping
happens once, here, when an area class is defined, so no API method repeats it. A call is
authorize + one transaction with no side effect outside the database before it commits
(reading a provider's offers is the one outside call, and reading is safe to repeat).
Generator methods (streams) are not wrapped: each call they make is. Before it runs, every
text among its arguments must be one a database can store (bounds.check_storable): a NUL or a
lone surrogate is INVALID_INPUT naming the parameter, on either engine, and nothing is read.
A document (a mapping: an inventory, labels, a placement policy) is left to the check of its
own format, which names the place in it.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bcfleet.api.auth import Actor, Credential, authenticate, start_authenticate
from bcfleet.domain.bounds import check_storable

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlmodel import Session

    from bcfleet.api.handle import ApiHandle


def _retried(method: Callable[..., Any]) -> Callable[..., Any]:
    names = tuple(inspect.signature(method).parameters)[1:]  # after self

    @functools.wraps(method)
    def call(self: Area, *args: Any, **kwargs: Any) -> Any:
        for name, value in (*zip(names, args, strict=False), *kwargs.items()):
            if isinstance(value, str | list | tuple | set | frozenset):  # a mapping: its own check
                check_storable(value, name)
        return self.fleet.run_call(lambda: method(self, *args, **kwargs))

    return call


class Area:
    """One area of the API (flavors, pools, …) bound to a fleet."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, member in list(vars(cls).items()):
            if name.startswith("_") or not inspect.isfunction(member):
                continue
            if inspect.isgeneratorfunction(member):
                continue
            setattr(cls, name, _retried(member))

    def __init__(self, fleet: ApiHandle) -> None:
        self.fleet = fleet

    def actor(
        self, on: Session | Connection, credential: Credential | None, tenant_id: str | None
    ) -> Actor:
        return authenticate(on, credential, tenant_id, self.fleet.now())

    def start_actor(
        self, on: Session | Connection, credential: Credential | None, tenant_id: str | None
    ) -> tuple[Actor, Callable[[], None]]:
        """actor() whose tenant check the call's next statement carries (auth.start_acting_for)."""
        return start_authenticate(on, credential, tenant_id, self.fleet.now())

"""What the store's callers hand it instead of the Fleet: transactions, the clock and ids.

The layers below the API never see the Fleet (bcfleet/fleet.py, the composition root): each
takes the few things it uses, as a protocol of its own layer that the Fleet satisfies. This is
the lowest one; placement/handle.py, providers/offer_catalog.py, jobs/handle.py and
api/handle.py add what their layer reads. A protocol costs a call nothing: the Fleet is passed
as it was.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from sqlalchemy import Connection
    from sqlmodel import Session

    from bcfleet.clock import Clock
    from bcfleet.ids import IdFactory


class StoreHandle(Protocol):
    """A fleet's database transactions (one at a time, or the joined one), its clock and ids."""

    @property
    def clock(self) -> Clock: ...

    @property
    def ids(self) -> IdFactory: ...

    def now(self) -> datetime: ...

    def lease_now(self) -> datetime:
        """The time leases are taken, renewed and judged by (never a pinned clock)."""
        ...

    def new_id(self, prefix: str) -> str: ...

    def write(self, *, bump_revision: bool = True) -> AbstractContextManager[Session]:
        """One write transaction (or the joined one)."""
        ...

    def write_on_connection(self, *, bump_revision: bool = True) -> AbstractContextManager[Session]:
        """write() on a Core connection's transaction, the session joining it only when used."""
        ...

    def read(self) -> AbstractContextManager[Session]:
        """One read transaction (or the joined one)."""
        ...

    def read_core(self) -> AbstractContextManager[Connection]:
        """One read transaction as a Core connection (or the joined one's)."""
        ...

"""The Fleet: one handle on a database, a clock, ids and settings, with the API on top."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy import Engine
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from bcfleet.clock import Clock, clock_from_env
from bcfleet.ids import IdFactory
from bcfleet.placement.context import PlacementContext
from bcfleet.settings import FleetSettings, load_fleet_settings
from bcfleet.store.engine import make_engine
from bcfleet.store.faults import lost_connections, run_retrying
from bcfleet.store.schema import ensure_schema, forget_schema
from bcfleet.store.uow import read_session, write_session

if TYPE_CHECKING:
    from bcfleet.api.facade import FleetAPI

T = TypeVar("T")

# The transaction that write() and read() calls join: (the fleet it belongs to, its session).
_JOINED: ContextVar[tuple[Fleet, Session] | None] = ContextVar("bcfleet_joined", default=None)


class Fleet:
    """What every API call, job and edge is handed: state, time, ids and settings."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock | None = None,
        settings: FleetSettings | None = None,
        ids: IdFactory | None = None,
    ) -> None:
        self.engine = engine
        self.clock: Clock = clock or clock_from_env()
        self.settings = settings or load_fleet_settings()
        self.ids = ids or IdFactory()
        # cursors, parsed inventories, GPU snapshots
        self.placement = PlacementContext(random_start=not self.ids.seeded)

    @classmethod
    def open(
        cls,
        db_url: str | None = None,
        *,
        clock: Clock | None = None,
        settings: FleetSettings | None = None,
        ids: IdFactory | None = None,
    ) -> Fleet:
        """Open (and, for a fresh database, create) the fleet state at db_url."""
        settings = settings or load_fleet_settings()
        engine = make_engine(db_url or settings.db_url)
        with lost_connections():
            ensure_schema(engine)
        fleet = cls(engine, clock=clock, settings=settings, ids=ids)
        fleet.seed()
        return fleet

    @staticmethod
    def probe(db_url: str | None = None) -> tuple[str, str]:
        """What the URL (default: the settings') holds, "missing", "empty" or "fleet", and the URL
        as messages show it; INVALID_INPUT or DATABASE_UNAVAILABLE when it is not a fleet's
        database or cannot be reached (bcfleet/store/probe.py)."""
        from bcfleet.store.probe import probe, shown

        url = db_url or load_fleet_settings().db_url
        return probe(url), shown(url)

    @staticmethod
    def upgrade(db_url: str | None = None) -> str | None:
        """Create or migrate the schema at db_url (default: the settings') to the newest
        revision; the revision it is at then (`fleet db upgrade`)."""
        from bcfleet.store.schema import schema_revision, upgrade

        engine = make_engine(db_url or load_fleet_settings().db_url)
        try:
            upgrade(engine)
            return schema_revision(engine)
        finally:
            engine.dispose()

    @staticmethod
    def map_all_tables() -> None:
        """Map every table now: for a long-running, many-threaded process (a server, the job
        daemon), which then never maps a table while its other threads run queries."""
        from bcfleet.store.models import load_all

        load_all()

    def seed(self) -> None:
        """Every fleet has the root tenant: it owns what the local operator creates."""
        from bcfleet.store.models import Tenant

        with self.read() as session:
            if session.get(Tenant, "root") is not None:
                return
        try:
            with self.write(bump_revision=False) as session:
                if session.get(Tenant, "root") is None:
                    session.add(Tenant(id="root", name="root", created_at=self.now()))
        except IntegrityError:
            pass  # another process seeded it first

    def now(self) -> datetime:
        return self.clock.now()

    def new_id(self, prefix: str) -> str:
        return self.ids.new(prefix, self.clock.now())

    def _joined(self) -> Session | None:
        joined = _JOINED.get()
        return joined[1] if joined is not None and joined[0] is self else None

    @contextmanager
    def write(self, *, bump_revision: bool = True) -> Iterator[Session]:
        """One write transaction, or the enclosing transaction() when there is one."""
        joined = self._joined()
        if joined is not None:
            yield joined
            return
        with write_session(self.engine, bump_revision=bump_revision) as session:
            yield session

    @contextmanager
    def read(self) -> Iterator[Session]:
        """One read transaction, or the enclosing transaction() when there is one."""
        joined = self._joined()
        if joined is not None:
            yield joined
            return
        with read_session(self.engine) as session:
            yield session

    def run_call(self, call: Callable[[], T]) -> T:
        """Run one API call; after a lost connection, once more if nothing can have been saved.

        The rule is store/faults.py's. Inside transaction() a call is never run again: the
        enclosing transaction is lost as a whole.
        """
        if self._joined() is not None:
            return call()
        return run_retrying(call)

    @contextmanager
    def transaction(self, *, bump_revision: bool = True) -> Iterator[Session]:
        """One write transaction that every write() and read() inside the block joins.

        So several API calls, each keeping its own authorization, commit together or
        not at all (`fleet apply`). The revision is bumped once, here, never by the
        joined calls. An error raised by a joined call must leave the block: the
        transaction is rolled back as a whole, never continued after a failed call.
        """
        if self._joined() is not None:
            raise RuntimeError("a transaction is already open in this context")
        with write_session(self.engine, bump_revision=bump_revision) as session:
            token = _JOINED.set((self, session))
            try:
                yield session
            finally:
                _JOINED.reset(token)

    @cached_property
    def api(self) -> FleetAPI:
        from bcfleet.api.facade import FleetAPI

        return FleetAPI(self)

    def close(self) -> None:
        """Dispose of the connections; a later open checks the schema again (the file may go)."""
        self.engine.dispose()
        forget_schema(self.engine)

"""The Fleet: one handle on a database, a clock, ids and settings, with the API on top."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy import Connection, Engine, select
from sqlalchemy.exc import IntegrityError

from bcfleet.clock import Clock, SystemClock, clock_from_env
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.ids import IdFactory
from bcfleet.settings import FleetSettings, load_fleet_settings
from bcfleet.store import wal_checkpoints
from bcfleet.store.driver_sql import core_connection
from bcfleet.store.engine import BUSY_TIMEOUT_S, make_engine
from bcfleet.store.faults import lost_connections, run_retrying
from bcfleet.store.schema import ensure_schema, forget_schema
from bcfleet.store.tables import TENANTS
from bcfleet.store.uow import (
    ConnectionWrite,
    read_connection,
    read_session,
    release_kept_writer,
    write_session,
)

if TYPE_CHECKING:
    from sqlmodel import Session

    from bcfleet.api.facade import FleetAPI
    from bcfleet.placement.context import PlacementContext
    from bcfleet.providers.offer_catalog import OfferCatalog

T = TypeVar("T")

_ROOT_TENANT = select(TENANTS.c.id).where(TENANTS.c.id == ROOT_TENANT)


class Fleet:
    """What every API call, job and edge is handed: state, time, ids and settings."""

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Clock | None = None,
        settings: FleetSettings | None = None,
        ids: IdFactory | None = None,
        placement: PlacementContext | None = None,
        session: Session | None = None,
        lease_clock: Clock | None = None,
    ) -> None:
        self.engine = engine
        self.clock: Clock = clock or clock_from_env()
        # Leases (the apply lock, the jobs' leases) expire by a clock that moves: the wall
        # clock, also when BCFLEET_NOW pins the fleet's clock (a pinned lease never expired);
        # a clock given by the caller (tests, embedders) also times the leases.
        self.lease_clock: Clock = lease_clock or clock or SystemClock()
        self.settings = settings or load_fleet_settings()
        self.ids = ids or IdFactory()
        self._placement = placement
        self._placement_lock = threading.Lock()
        # the open transaction of a handle made by transaction(); None for a fleet's own handle
        self.session = session

    @property
    def placement(self) -> PlacementContext:
        """Cursors, parsed inventories, GPU snapshots: made by the first placement (a read never
        imports the placement code), one per fleet handle and the transactions it makes."""
        made = self._placement
        if made is not None:
            return made
        from bcfleet.placement.context import PlacementContext

        with self._placement_lock:  # one context, even when threads place at once
            if self._placement is None:
                self._placement = PlacementContext(random_start=not self.ids.seeded)
            return self._placement

    @classmethod
    def open(
        cls,
        db_url: str | None = None,
        *,
        clock: Clock | None = None,
        settings: FleetSettings | None = None,
        ids: IdFactory | None = None,
        busy_timeout_s: float = BUSY_TIMEOUT_S,
    ) -> Fleet:
        """Open (and, for a fresh database, create) the fleet state at db_url; an SQLite database
        another process holds locked answers DATABASE_UNAVAILABLE (database_busy) after
        busy_timeout_s."""
        settings = settings or load_fleet_settings()
        engine = make_engine(db_url or settings.db_url, busy_timeout_s=busy_timeout_s)
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
    def sqlite_file(db_url: str | None = None) -> Path | None:
        """The file an SQLite URL (default: the settings') names; None for PostgreSQL."""
        from bcfleet.store.probe import sqlite_file

        return sqlite_file(db_url or load_fleet_settings().db_url)

    def unchanged(self) -> bool:
        """Whether nothing has changed the state since the fleet was made (revision 0)."""
        from bcfleet.store.uow import current_revision

        with self.read() as session:
            return current_revision(session) == 0

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
        with self.read_core() as connection:
            if connection.execute(_ROOT_TENANT).first() is not None:
                return
        from bcfleet.store.models import Tenant

        try:
            with self.write(bump_revision=False) as session:
                if session.get(Tenant, ROOT_TENANT) is None:
                    session.add(Tenant(id=ROOT_TENANT, name=ROOT_TENANT, created_at=self.now()))
        except IntegrityError:
            pass  # another process seeded it first

    def now(self) -> datetime:
        return self.clock.now()

    def lease_now(self) -> datetime:
        """The time leases are taken, renewed and judged by (``lease_clock``), never BCFLEET_NOW."""
        return self.lease_clock.now()

    def new_id(self, prefix: str) -> str:
        return self.ids.new(prefix, self.clock.now())

    @contextmanager
    def write(self, *, bump_revision: bool = True) -> Iterator[Session]:
        """One write transaction, or this handle's transaction when transaction() made it."""
        if self.session is not None:
            yield self.session
            return
        with write_session(self.engine, bump_revision=bump_revision) as session:
            yield session

    def write_on_connection(self, *, bump_revision: bool = True) -> AbstractContextManager[Session]:
        """write() for a hot call that writes through DriverStatements: the transaction is the
        Core connection's, the session joins it only when used (uow.connection_write_session);
        this handle's transaction when transaction() made it."""
        if self.session is not None:
            return nullcontext(self.session)
        return ConnectionWrite(self.engine, bump_revision)

    @contextmanager
    def read(self) -> Iterator[Session]:
        """One read transaction, or this handle's transaction when transaction() made it."""
        if self.session is not None:
            yield self.session
            return
        with read_session(self.engine) as session:
            yield session

    @contextmanager
    def read_core(self) -> Iterator[Connection]:
        """One read transaction as a Core connection, for reads that never load an entity (and
        so never import SQLModel or the ORM); this handle's transaction when transaction() made it."""
        if self.session is not None:
            yield core_connection(self.session)
            return
        with read_connection(self.engine) as connection:
            yield connection

    def run_call(self, call: Callable[[], T]) -> T:
        """Run one API call; after a lost connection, once more if nothing can have been saved.

        The rule is store/faults.py's. In a transaction() handle a call is never run again:
        the enclosing transaction is lost as a whole.
        """
        if self.session is not None:
            return call()
        return run_retrying(call)

    @contextmanager
    def transaction(self, *, bump_revision: bool = True) -> Iterator[Fleet]:
        """One write transaction, and a handle on this fleet whose API calls all run in it.

        So several API calls made through the handle (`joined.api…`), each keeping its own
        authorization, commit together or not at all (`fleet apply`); `joined.session` is
        the transaction itself. Calls through this fleet's own handle are not part of it.
        The revision is bumped once, here, never by the joined calls. An error raised by a
        joined call must leave the block: the transaction is rolled back as a whole, never
        continued after a failed call.
        """
        if self.session is not None:
            raise RuntimeError("this handle is already a transaction's")
        with write_session(self.engine, bump_revision=bump_revision) as session:
            yield Fleet(
                self.engine,
                clock=self.clock,
                settings=self.settings,
                ids=self.ids,
                placement=self.placement,
                session=session,
                lease_clock=self.lease_clock,
            )

    @property
    def offer_catalog(self) -> OfferCatalog:
        """The fleet's one offer catalog, the API's (with its flavor hooks): handed to the
        providers job here, so that no layer below the API reaches into it."""
        return self.api.offer_catalog

    @cached_property
    def api(self) -> FleetAPI:
        from bcfleet.api.facade import FleetAPI

        return FleetAPI(self)

    def close(self) -> None:
        """Dispose of the connections; a later open checks the schema again (the file may go)."""
        wal_checkpoints.stop(self.engine)  # nothing of this process checkpoints the file after this
        release_kept_writer(self.engine)
        self.engine.dispose()
        forget_schema(self.engine)

"""Bookkeeping of the state itself: the revision counter that saved plans check, and named locks."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Sequence
from sqlmodel import Field, SQLModel

from bcfleet.store.types import BigCounter, UTCDateTime


class StateRevision(SQLModel, table=True):
    """One row (id 1) whose revision every write transaction bumps."""

    __tablename__ = "state_revision"

    id: int = Field(default=1, primary_key=True)
    revision: int = Field(default=0, sa_type=BigCounter)


REVISION_SEQUENCE = Sequence("bcfleet_state_revision", metadata=SQLModel.metadata)
"""PostgreSQL's state revision (uow.bump): nextval never waits on another writer's row lock."""


class Lock(SQLModel, table=True):
    """A named lock with an expiry: the apply lock and job leases."""

    __tablename__ = "locks"

    name: str = Field(primary_key=True)  # apply | job:vps.usage | …
    id: str = Field(unique=True)
    holder: str
    pid: int
    hostname: str
    operation: str
    created_at: datetime = Field(sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)

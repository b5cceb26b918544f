"""The durable, ordered event log; each row is one tenant's copy, worded for that tenant."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index
from sqlmodel import Field, SQLModel

from bcfleet.store.types import BigCounter, UTCDateTime, empty_dict


class Event(SQLModel, table=True):
    __tablename__ = "events"
    __table_args__ = (Index("ix_events_tenant_seq", "tenant_id", "seq"),)

    seq: int | None = Field(
        default=None, primary_key=True, sa_type=BigCounter
    )  # the cursor: strictly increasing
    id: str = Field(unique=True)
    type: str = Field(index=True)
    tenant_id: str | None = Field(default=None)  # None: visible to operators only
    subject_id: str | None = None
    data: dict[str, Any] = Field(default_factory=empty_dict, sa_type=JSON)
    at: datetime = Field(sa_type=UTCDateTime)

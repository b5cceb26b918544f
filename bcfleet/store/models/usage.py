"""Usage tables: metered windows keyed by (subject, meter, window start), and the dead letters of unknown meters."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from sqlalchemy import Index, Numeric, UniqueConstraint
from sqlmodel import Field, SQLModel

from bcfleet.store.types import BigCounter, UTCDateTime

QUANTITY = Numeric(20, 6)
"""Stored quantities: 6 decimal places, as bcfleet.domain.usage rounds them."""


class UsageWindow(SQLModel, table=True):
    """One closed 5-minute window of one subject on one meter, written exactly once (vps.usage)."""

    __tablename__ = "usage_windows"
    __table_args__ = (
        # The key (subject_id, meter, window_start), indexed window first: each tick appends at
        # the right edge of the B-tree instead of all over it, and time ranges use it.
        UniqueConstraint("window_start", "subject_id", "meter", name="uq_usage_windows_key"),
        Index("ix_usage_windows_tenant_window", "tenant_id", "window_start"),
    )

    id: int | None = Field(default=None, primary_key=True, sa_type=BigCounter)
    tenant_id: str = Field(foreign_key="tenants.id")
    subject_id: str  # ins_… or rsv_…
    subject_kind: str  # instance | reservation
    pool_id: str | None = None
    meter: str  # vps.vcpu.hours, vps.memory.gib.hours, gpu.<model>[.spot].hours, credits
    window_start: datetime = Field(sa_type=UTCDateTime)
    quantity: Decimal = Field(sa_type=QUANTITY)
    created_at: datetime = Field(sa_type=UTCDateTime)


class DeadLetter(SQLModel, table=True):
    """A window whose meter is not in the billing-meter catalogue: kept, once, until replayed."""

    __tablename__ = "usage_dead_letters"
    __table_args__ = (
        UniqueConstraint("window_start", "subject_id", "meter", name="uq_usage_dead_letters_key"),
        Index("ix_usage_dead_letters_pending", "replayed_at", "meter"),
    )

    id: int | None = Field(default=None, primary_key=True, sa_type=BigCounter)
    tenant_id: str = Field(foreign_key="tenants.id", index=True)
    subject_id: str
    subject_kind: str
    pool_id: str | None = None
    meter: str
    window_start: datetime = Field(sa_type=UTCDateTime)
    quantity: Decimal = Field(sa_type=QUANTITY)
    reason: str
    created_at: datetime = Field(sa_type=UTCDateTime)
    replayed_at: datetime | None = Field(default=None, sa_type=UTCDateTime)

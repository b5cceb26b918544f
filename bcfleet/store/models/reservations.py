"""The reservations table: GPU capacity booked for a window, regular or spot, pool or node binding."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from bcfleet.store.types import UTCDateTime


class Reservation(SQLModel, table=True):
    __tablename__ = "reservations"
    __table_args__ = (
        UniqueConstraint("tenant_id", "idempotency_key"),
        Index("ix_reservations_pool_state", "pool_id", "state"),
    )

    id: str = Field(primary_key=True)
    tenant_id: str = Field(foreign_key="tenants.id", index=True)
    pool_id: str = Field(foreign_key="pools.id")
    gpus: int  # GPUs on each node
    nodes: int = 1  # a gang: gpus on each of `nodes` distinct nodes, all or nothing
    binding: str = "pool"  # pool | node
    spot: bool = False
    # pending | placed | binding | active | released
    state: str = "pending"
    requested_start: datetime = Field(sa_type=UTCDateTime)
    duration_seconds: int
    starts_at: datetime | None = Field(default=None, sa_type=UTCDateTime)  # during.start
    ends_at: datetime | None = Field(default=None, sa_type=UTCDateTime)  # during.end
    deadline: datetime | None = Field(default=None, sa_type=UTCDateTime)  # set when preempted
    idempotency_key: str | None = None
    input_hash: str | None = None
    conditions: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSON)
    release_reason: str | None = None
    quota_charged: bool = False
    created_at: datetime = Field(sa_type=UTCDateTime)
    updated_at: datetime = Field(sa_type=UTCDateTime)
    activated_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    released_at: datetime | None = Field(default=None, sa_type=UTCDateTime)

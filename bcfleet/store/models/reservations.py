"""The reservations table: GPU capacity booked for a window, regular or spot, pool or node binding."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from bcfleet.domain.states import ReservationState
from bcfleet.store.types import BigCounter, ReservationStateColumn, UTCDateTime, empty_list


class Reservation(SQLModel, table=True):
    __tablename__ = "reservations"
    __table_args__ = (
        UniqueConstraint("tenant_id", "idempotency_key"),
        Index("ix_reservations_pool_state", "pool_id", "state"),
        Index("ix_reservations_state_starts", "state", "starts_at"),
        Index("ix_reservations_state_ends", "state", "ends_at"),
        Index("ix_reservations_state_created", "state", "created_at"),
    )

    id: str = Field(primary_key=True)
    tenant_id: str = Field(foreign_key="tenants.id", index=True)
    pool_id: str = Field(foreign_key="pools.id")
    gpus: int  # GPUs on each node
    nodes: int = 1  # a gang: gpus on each of `nodes` distinct nodes, all or nothing
    binding: str = "pool"  # pool | node
    spot: bool = False
    # pending | placed | binding | active | released
    state: ReservationState = Field(
        default=ReservationState.PENDING, sa_type=ReservationStateColumn
    )
    requested_start: datetime = Field(sa_type=UTCDateTime)
    duration_seconds: int
    starts_at: datetime | None = Field(default=None, sa_type=UTCDateTime)  # during.start
    ends_at: datetime | None = Field(default=None, sa_type=UTCDateTime)  # during.end
    deadline: datetime | None = Field(default=None, sa_type=UTCDateTime)  # set when preempted
    # Who preempted it: kept so the release at the deadline words its event by the same rule.
    preempted_by: str | None = None
    preempted_by_tenant: str | None = None
    node_ids: list[str] = Field(default_factory=empty_list, sa_type=JSON)  # where it is placed
    last_attempt_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    idempotency_key: str | None = None
    input_hash: str | None = None
    conditions: list[dict[str, Any]] = Field(default_factory=empty_list, sa_type=JSON)
    release_reason: str | None = None
    quota_charged: bool = False
    created_at: datetime = Field(sa_type=UTCDateTime)
    updated_at: datetime = Field(sa_type=UTCDateTime)
    activated_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    released_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class GpuPoolVersion(SQLModel, table=True):
    """A pool's GPU booking version: bumped, last, by every transaction that writes its bookings.

    Writers take this row last (after quota, node and atom rows), so versions commit in order
    and a reader that sees version V sees every change up to V. `token` is new whenever the row
    is (re)created, so a cached snapshot of an older database with the same pool id is refused.
    """

    __tablename__ = "gpu_pool_versions"

    pool_id: str = Field(primary_key=True)
    version: int = Field(default=0, sa_type=BigCounter)
    token: str


class GpuNodeVersion(SQLModel, table=True):
    """The pool version at which a node's GPU bookings last changed: what a cached snapshot reloads."""

    __tablename__ = "gpu_node_versions"
    __table_args__ = (Index("ix_gpu_node_versions_pool_version", "pool_id", "version"),)

    node_id: str = Field(primary_key=True)
    pool_id: str
    version: int = Field(sa_type=BigCounter)

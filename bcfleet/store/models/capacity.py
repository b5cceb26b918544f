"""Capacity tables: GPU atoms of hosts, allocations of scalar claims, GPU bookings in time, and quotas."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from bcfleet.store.types import BigCounter, UTCDateTime, empty_dict


class GpuAtom(SQLModel, table=True):
    """One whole GPU of a host, passed through with VFIO: the unit GPU bookings take."""

    __tablename__ = "gpu_atoms"
    __table_args__ = (UniqueConstraint("node_id", "index"),)

    id: int | None = Field(default=None, primary_key=True, sa_type=BigCounter)
    node_id: str = Field(foreign_key="hosts.id", index=True)
    index: int
    model: str
    pci_address: str
    numa_node: int | None = None
    present: bool = True  # False once the host stops reporting it; kept for bookings' history


class Allocation(SQLModel, table=True):
    """Scalar claims (vcpu, memoryGiB, diskGiB) held on one node by an instance or a reservation."""

    __tablename__ = "allocations"
    __table_args__ = (
        Index("ix_allocations_node_live", "node_id", "released_at"),
        Index("ix_allocations_consumer", "consumer_id"),
        Index("ix_allocations_kind_live", "consumer_kind", "released_at"),  # metering's scan
    )

    id: str = Field(primary_key=True)
    node_id: str = Field(foreign_key="hosts.id")
    consumer_kind: str  # instance | reservation
    consumer_id: str
    tenant_id: str = Field(foreign_key="tenants.id", index=True)
    pool_id: str = Field(foreign_key="pools.id")
    claims: dict[str, int] = Field(default_factory=empty_dict, sa_type=JSON)
    starts_at: datetime = Field(sa_type=UTCDateTime)
    ends_at: datetime | None = Field(default=None, sa_type=UTCDateTime)  # None: open-ended
    released_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    release_reason: str | None = None


class ClaimPeriod(SQLModel, table=True):
    """An allocation's earlier vcpu and memoryGiB claims and when they held; a resize writes one.

    vps.usage meters [started_at, ended_at) at these claims and the time after the last
    period at the allocation's current claims, so a window is split where the shape changed.
    """

    __tablename__ = "claim_periods"

    id: int | None = Field(default=None, primary_key=True, sa_type=BigCounter)
    allocation_id: str = Field(foreign_key="allocations.id", index=True)
    vcpu: int
    memory_gib: int
    started_at: datetime = Field(sa_type=UTCDateTime)
    ended_at: datetime = Field(sa_type=UTCDateTime)


class Booking(SQLModel, table=True):
    """One GPU atom booked for [starts_at, ends_at); two live bookings of an atom never overlap."""

    __tablename__ = "bookings"
    __table_args__ = (
        Index("ix_bookings_atom_live", "atom_id", "released_at"),
        Index("ix_bookings_consumer", "consumer_id"),
        Index("ix_bookings_node_live", "node_id", "released_at"),
    )

    id: str = Field(primary_key=True)
    atom_id: int = Field(foreign_key="gpu_atoms.id", sa_type=BigCounter)
    node_id: str = Field(foreign_key="hosts.id")
    consumer_kind: str  # instance | reservation
    consumer_id: str
    tenant_id: str = Field(foreign_key="tenants.id")
    spot: bool = False
    starts_at: datetime = Field(sa_type=UTCDateTime)
    ends_at: datetime | None = Field(default=None, sa_type=UTCDateTime)  # None: open-ended
    released_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class Quota(SQLModel, table=True):
    """A tenant's quota of one resource in one pool: used + charge <= limit (no limit: unlimited)."""

    __tablename__ = "quotas"

    tenant_id: str = Field(foreign_key="tenants.id", primary_key=True)
    pool_id: str = Field(foreign_key="pools.id", primary_key=True)
    resource: str = Field(primary_key=True)  # vcpu | memoryGiB | diskGiB | gpu
    limit: int | None = None
    used: int = 0
    managed: bool = False


class QuotaStripe(SQLModel, table=True):
    """Part of a tenant's use of an unlimited quota row, counted apart so admissions need not queue on one row.

    A quota's use is its row's `used` plus its stripes; a row with a limit has no stripes (setting
    a limit folds them into the row). Only PostgreSQL writes stripes (SQLite writers are serialized).
    """

    __tablename__ = "quota_stripes"

    tenant_id: str = Field(primary_key=True)
    pool_id: str = Field(primary_key=True)
    resource: str = Field(primary_key=True)
    stripe: int = Field(primary_key=True)
    used: int = 0


QUOTA_RESOURCES = ("vcpu", "memoryGiB", "diskGiB", "gpu")


def claims_json(claims: dict[str, int]) -> dict[str, Any]:
    return {k: claims[k] for k in ("vcpu", "memoryGiB", "diskGiB") if k in claims}

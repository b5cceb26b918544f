"""The instances table: a tenant's VM with the shape it was admitted with, wherever it runs."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from bcfleet.domain.states import InstanceState
from bcfleet.store.types import InstanceStateColumn, UTCDateTime, empty_dict, empty_list


class Instance(SQLModel, table=True):
    __tablename__ = "instances"
    # The unique index leads with tenant_id and serves a tenant's lookups: an index of
    # tenant_id alone would be one more B-tree every new instance writes (migration 0002).
    # The listing's orders (api.instance_list, migration 0008): by name, by time, by state;
    # Both ix_instances_search and ix_instances_created hold what a search by name or id reads.
    __table_args__ = (
        UniqueConstraint("tenant_id", "idempotency_key"),
        Index("ix_instances_search", "name", "id", "state", "created_at"),
        Index("ix_instances_created", "created_at", "id", "name", "state"),
        Index("ix_instances_state_created_id", "state", "created_at", "id"),
    )

    id: str = Field(primary_key=True)
    tenant_id: str = Field(foreign_key="tenants.id")
    pool_id: str = Field(foreign_key="pools.id", index=True)
    flavor_id: str | None = Field(default=None, foreign_key="flavors.id", index=True)
    name: str
    # pending | running | stopped | deleted (hosted); provider instances add provisioning
    state: InstanceState = Field(default=InstanceState.PENDING, sa_type=InstanceStateColumn)
    # the flavor's shape copied at admission: vcpu, memoryGiB, diskGiB, gpus, offerId, placement
    shape: dict[str, Any] = Field(default_factory=empty_dict, sa_type=JSON)
    node_id: str | None = Field(default=None, foreign_key="hosts.id", index=True)
    # Not indexed: reads join an instance to its allocation by the allocation's own id (0002).
    allocation_id: str | None = Field(default=None)
    host_placement: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    conditions: list[dict[str, Any]] = Field(default_factory=empty_list, sa_type=JSON)
    # What the host's agent reports (api.agent_reports), apart from the server's own conditions:
    # each report replaces both; NULL on rows older than migration 0005 reads as none.
    agent_conditions: list[dict[str, Any]] | None = Field(default=None, sa_type=JSON)
    balloon_bytes: int | None = Field(default=None, sa_type=BigInteger)
    purpose: str = "tenant"  # tenant | spare | service
    size: str | None = None  # the instance size of a spare or service instance
    created_at: datetime = Field(sa_type=UTCDateTime)
    updated_at: datetime = Field(sa_type=UTCDateTime)
    ready_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    deleted_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    provider_server_id: str | None = None
    provider_status: str | None = None
    # a create sent again with the same key answers this instance (domain/idempotency.py)
    idempotency_key: str | None = None
    input_hash: str | None = None

"""Tables of pools, the tenants they are offered to, provider accounts, hosts, node_resources and flavors."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, Text, UniqueConstraint, text
from sqlmodel import Field, SQLModel

from bcfleet.domain.states import HostState, PoolKind
from bcfleet.store.types import (
    BigCounter,
    HostStateColumn,
    PoolKindColumn,
    UTCDateTime,
    empty_dict,
    empty_list,
)


class ProviderAccount(SQLModel, table=True):
    __tablename__ = "provider_accounts"
    __table_args__ = (UniqueConstraint("tenant_id", "name"),)

    id: str = Field(primary_key=True)
    tenant_id: str = Field(foreign_key="tenants.id", index=True)
    name: str
    provider: str  # hetzner | fake
    # The token is either in the server's environment variable token_env (root's admin
    # names it) or sealed with the operator's key (bcfleet/secretbox.py); never in plaintext.
    token_env: str | None = None
    sealed_token: str | None = Field(default=None, repr=False)
    endpoint: str | None = None  # only root's admin sets it; None: the provider's own API
    created_at: datetime = Field(sa_type=UTCDateTime)
    managed: bool = False


class Pool(SQLModel, table=True):
    __tablename__ = "pools"

    id: str = Field(primary_key=True)
    name: str = Field(unique=True)
    kind: PoolKind = Field(sa_type=PoolKindColumn)
    owner_tenant_id: str = Field(foreign_key="tenants.id", index=True)
    gpu_model: str | None = None
    overcommit: dict[str, float] = Field(default_factory=empty_dict, sa_type=JSON)
    host_reserve: dict[str, int] = Field(default_factory=empty_dict, sa_type=JSON)
    provider_account_id: str | None = Field(default=None, foreign_key="provider_accounts.id")
    created_at: datetime = Field(sa_type=UTCDateTime)
    version: int = Field(default=1, sa_type=BigCounter)
    managed: bool = False


class PoolOffer(SQLModel, table=True):
    __tablename__ = "pool_offers"

    pool_id: str = Field(foreign_key="pools.id", primary_key=True)
    tenant_id: str = Field(foreign_key="tenants.id", primary_key=True, index=True)


class Host(SQLModel, table=True):
    """A node of a pool: adopted by name, reporting an inventory through its agent."""

    __tablename__ = "hosts"
    # Candidate search walks a pool's hosts in id order from a cursor and stops early.
    __table_args__ = (Index("ix_hosts_pool_id_id", "pool_id", "id"),)

    id: str = Field(primary_key=True)
    name: str = Field(unique=True)
    pool_id: str = Field(foreign_key="pools.id")
    labels: dict[str, str] = Field(default_factory=empty_dict, sa_type=JSON)
    tenant_controlled: bool = False
    state: HostState = Field(default=HostState.READY, sa_type=HostStateColumn)
    inventory: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    inventory_reported_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    inventory_generation: int = Field(default=0, sa_type=BigCounter)
    # Why the vps.hosts job could not derive this host's capacity from its inventory; None when it could.
    inventory_error: str | None = Field(default=None, sa_type=Text)
    # The agent's word on the host itself (api.agent_reports): {state: ok|degraded, message, at}.
    agent_health: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    created_at: datetime = Field(sa_type=UTCDateTime)
    managed: bool = False
    # InventoryShortfall while its latest inventory lacks what its guests hold (hosts.report).
    conditions: list[dict[str, Any]] = Field(
        default_factory=empty_list,
        sa_type=JSON,
        sa_column_kwargs={"server_default": text("'[]'")},
    )


class NodeResource(SQLModel, table=True):
    """One scalar of one host: a claim fits when allocated + claim <= capacity.

    capacity is floor(allocatable × ratio), kept beside its inputs so the guarded
    UPDATE and the candidate query compare integers. No index holds allocated or generation,
    which every claim writes: PostgreSQL then updates the row in place (a HOT update, no
    index entry written) and SQLite rewrites no index page (migration 0002).
    """

    __tablename__ = "node_resources"

    node_id: str = Field(foreign_key="hosts.id", primary_key=True)
    resource: str = Field(primary_key=True)  # vcpu | memoryGiB | diskGiB
    allocatable: int
    ratio: float = 1.0
    capacity: int
    allocated: int = 0
    generation: int = Field(default=0, sa_type=BigCounter)


class Flavor(SQLModel, table=True):
    __tablename__ = "flavors"
    __table_args__ = (UniqueConstraint("pool_id", "name"),)

    id: str = Field(primary_key=True)
    pool_id: str = Field(foreign_key="pools.id", index=True)
    name: str
    vcpu: int
    memory_gib: int
    disk_gib: int
    gpus: int = 0
    offer_id: str | None = None
    placement: dict[str, Any] | None = Field(default=None, sa_type=JSON)
    archived: bool = False
    version: int = Field(default=1, sa_type=BigCounter)
    created_at: datetime = Field(sa_type=UTCDateTime)
    updated_at: datetime = Field(sa_type=UTCDateTime)
    managed: bool = False

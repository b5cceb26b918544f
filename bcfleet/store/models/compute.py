"""Tables of document 004: a tenant's compute settings and the users of instance sizes.

The users are services (with the instance that serves a deployed serverless
one), pipeline indexes and fleet environments. A service's `size` of None is a
service from before sizes existed; it runs as Large.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, UniqueConstraint
from sqlmodel import Field, SQLModel

from bcfleet.store.types import BigCounter, UTCDateTime, empty_dict


class ComputeSettingsRow(SQLModel, table=True):
    """One tenant's saved settings; a tenant without a row has the defaults of the domain."""

    __tablename__ = "compute_settings"

    tenant_id: str = Field(foreign_key="tenants.id", primary_key=True)
    # {size: {"enabled": bool, "spares": int}} for every size of the catalogue
    sizes: dict[str, dict[str, Any]] = Field(default_factory=empty_dict, sa_type=JSON)
    default_size: str | None = None  # None: Medium
    serverless_pool_id: str | None = Field(default=None, foreign_key="pools.id")
    version: int = Field(default=1, sa_type=BigCounter)
    managed: bool = False  # created or adopted by a FleetConfig
    updated_at: datetime = Field(sa_type=UTCDateTime)
    # when the spares job last looked at this tenant: the basis of NO_CAPACITY's Retry-After
    spares_checked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class FleetEnvironment(SQLModel, table=True):
    """A fleet environment: the services in it run on its size."""

    __tablename__ = "environments"
    __table_args__ = (UniqueConstraint("tenant_id", "name"),)

    id: str = Field(primary_key=True)  # env_…
    tenant_id: str = Field(foreign_key="tenants.id", index=True)
    name: str
    size: str
    created_at: datetime = Field(sa_type=UTCDateTime)
    updated_at: datetime = Field(sa_type=UTCDateTime)


class Service(SQLModel, table=True):
    """A service of a workspace, on serverless or managed hosting."""

    __tablename__ = "services"
    __table_args__ = (UniqueConstraint("tenant_id", "workspace", "name"),)

    id: str = Field(primary_key=True)  # svc_…
    tenant_id: str = Field(foreign_key="tenants.id", index=True)
    workspace: str
    name: str
    hosting: str = "serverless"  # serverless | managed
    deployed: bool = False
    size: str | None = None  # None: deployed before sizes existed, treated as Large
    environment_id: str | None = Field(default=None, foreign_key="environments.id", index=True)
    instance_id: str | None = Field(default=None, index=True)  # the instance serving it
    created_at: datetime = Field(sa_type=UTCDateTime)
    updated_at: datetime = Field(sa_type=UTCDateTime)
    deployed_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class PipelineIndex(SQLModel, table=True):
    """A pipeline index; a pod size of None is the default pod size, which never blocks a size."""

    __tablename__ = "pipeline_indexes"
    __table_args__ = (UniqueConstraint("tenant_id", "workspace", "name"),)

    id: str = Field(primary_key=True)  # idx_…
    tenant_id: str = Field(foreign_key="tenants.id", index=True)
    workspace: str
    name: str
    pod_size: str | None = None
    deployed: bool = False
    created_at: datetime = Field(sa_type=UTCDateTime)
    updated_at: datetime = Field(sa_type=UTCDateTime)

"""Tables of tenants and IAM: principals, hashed tokens, policies and their attachments."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, UniqueConstraint
from sqlmodel import Field, SQLModel

from bcfleet.store.types import UTCDateTime, empty_list


class Tenant(SQLModel, table=True):
    __tablename__ = "tenants"

    id: str = Field(primary_key=True, max_length=63)
    name: str
    created_at: datetime = Field(sa_type=UTCDateTime)
    managed: bool = False


class Principal(SQLModel, table=True):
    __tablename__ = "principals"
    __table_args__ = (UniqueConstraint("tenant_id", "name"),)

    id: str = Field(primary_key=True)
    tenant_id: str = Field(foreign_key="tenants.id", index=True)
    name: str
    role: str  # admin | member | viewer | agent
    created_at: datetime = Field(sa_type=UTCDateTime)
    # The host (node id) an agent principal is bound to; None for every other role. No
    # foreign key: a removed host leaves its agent bound to a node that is gone (allowed nothing).
    host_id: str | None = Field(default=None)


class ApiToken(SQLModel, table=True):
    __tablename__ = "api_tokens"

    id: str = Field(primary_key=True)
    principal_id: str = Field(foreign_key="principals.id", index=True)
    token_hash: str = Field(unique=True)
    hint: str  # the last four characters, to tell tokens apart in listings
    created_at: datetime = Field(sa_type=UTCDateTime)
    expires_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class Policy(SQLModel, table=True):
    __tablename__ = "policies"
    __table_args__ = (UniqueConstraint("tenant_id", "name"),)

    id: str = Field(primary_key=True)
    tenant_id: str = Field(foreign_key="tenants.id", index=True)
    name: str
    statements: list[dict[str, Any]] = Field(default_factory=empty_list, sa_type=JSON)
    created_at: datetime = Field(sa_type=UTCDateTime)


class PolicyAttachment(SQLModel, table=True):
    __tablename__ = "policy_attachments"

    policy_id: str = Field(foreign_key="policies.id", primary_key=True)
    principal_id: str = Field(foreign_key="principals.id", primary_key=True)

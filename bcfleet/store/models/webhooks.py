"""Webhooks of a tenant and their deliveries (pending, delivered, or dead-lettered after the last try)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Index, UniqueConstraint
from sqlmodel import Field, SQLModel

from bcfleet.domain.states import DeliveryState
from bcfleet.store.types import (
    BigCounter,
    DeliveryStateColumn,
    UTCDateTime,
    empty_dict,
    empty_list,
)


class Webhook(SQLModel, table=True):
    """Where one tenant's events are POSTed, signed with its secret; cursor is the last seq queued."""

    __tablename__ = "webhooks"

    id: str = Field(primary_key=True)
    tenant_id: str = Field(foreign_key="tenants.id", index=True)
    url: str
    secret: str  # the HMAC key: needed to sign, so kept (and shown only when created)
    event_types: list[str] = Field(default_factory=empty_list, sa_type=JSON)  # empty: every type
    active: bool = True
    cursor: int = Field(default=0, sa_type=BigCounter)
    created_at: datetime = Field(sa_type=UTCDateTime)
    updated_at: datetime = Field(sa_type=UTCDateTime)


class WebhookDelivery(SQLModel, table=True):
    """One event for one webhook: pending until a 2xx answer, dead after the last failed try."""

    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("webhook_id", "event_seq"),
        Index("ix_webhook_deliveries_due", "state", "next_attempt_at"),
    )

    id: int | None = Field(default=None, primary_key=True, sa_type=BigCounter)
    webhook_id: str = Field(foreign_key="webhooks.id", index=True)
    tenant_id: str = Field(index=True)
    event_seq: int = Field(sa_type=BigCounter)
    event_id: str
    event_type: str
    payload: dict[str, Any] = Field(default_factory=empty_dict, sa_type=JSON)
    state: DeliveryState = Field(default=DeliveryState.PENDING, sa_type=DeliveryStateColumn)
    attempts: int = 0
    next_attempt_at: datetime = Field(sa_type=UTCDateTime)
    last_status: int | None = None
    last_error: str | None = None
    created_at: datetime = Field(sa_type=UTCDateTime)
    updated_at: datetime = Field(sa_type=UTCDateTime)
    delivered_at: datetime | None = Field(default=None, sa_type=UTCDateTime)

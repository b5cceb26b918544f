"""The billing-meter catalogue: usage for a meter not listed here is dead-lettered, not billed."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from bcfleet.store.types import UTCDateTime


class BillingMeter(SQLModel, table=True):
    __tablename__ = "billing_meters"

    name: str = Field(primary_key=True)  # vps.vcpu.hours, gpu.l40s.spot.hours, credits, …
    unit: str = "hours"
    description: str = ""
    created_at: datetime = Field(sa_type=UTCDateTime)

"""The fleet's identity: one id per database, the bcfleet.fleet label on every provider server it makes."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from bcfleet.store.types import UTCDateTime


class FleetIdentity(SQLModel, table=True):
    """One row (id 1): the fleet id that providers.reconcile labels its servers with.

    Servers carrying another fleet's id, or none, are never touched, so two fleets
    (or a test and a production fleet) can share one provider project.
    """

    __tablename__ = "fleet_identity"

    id: int = Field(default=1, primary_key=True)
    fleet_id: str = Field(unique=True)
    created_at: datetime = Field(sa_type=UTCDateTime)

"""What every area of the API shares: the fleet handle and the first step of a call."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlmodel import Session

from bcfleet.api.auth import Actor, Credential, authenticate

if TYPE_CHECKING:
    from bcfleet.fleet import Fleet


class Area:
    """One area of the API (flavors, pools, …) bound to a fleet."""

    def __init__(self, fleet: Fleet) -> None:
        self.fleet = fleet

    def actor(
        self, session: Session, credential: Credential | None, tenant_id: str | None
    ) -> Actor:
        return authenticate(session, credential, tenant_id, self.fleet.now())

"""The state's revision: one integer that every write transaction bumps, for "has anything changed?"."""

from __future__ import annotations

from bcfleet.api.auth import Credential, tenant_resource
from bcfleet.api.base import Area
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.store.uow import current_revision


class StateAPI(Area):
    """A cheap change marker for dashboards that refetch only when the state moved."""

    def revision(self, credential: Credential | None) -> int | None:
        """The revision for root's principals; None (unknown: read again) for other tenants,
        whom the fleet-wide counter would tell of other tenants' writes."""
        with self.fleet.read() as session:
            actor = self.actor(session, credential, None)
            actor.require("compute:state:read", tenant_resource(actor.tenant_id))
            if actor.tenant_id != ROOT_TENANT:
                return None
            return current_revision(session)

"""`fleet doctor`: warnings an operator should act on (vps.hosts.capacity, vps.hosts.inventory, <job>.failed, …) and the invariant checks."""

from __future__ import annotations

from typing import Any

from sqlmodel import col, select

from bcfleet.api.auth import Credential, tenant_resource
from bcfleet.api.base import Area
from bcfleet.api.fault_views import fault_warning
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.domain.states import PoolKind
from bcfleet.placement.invariants import HostFacts, check_all
from bcfleet.store.job_faults import all_faults
from bcfleet.store.models import Host, NodeResource, Pool


class DoctorAPI(Area):
    def check(self, credential: Credential | None, *, invariants: bool = False) -> dict[str, Any]:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, None)
            actor.require("compute:doctor:read", tenant_resource(ROOT_TENANT))
            warnings: list[dict[str, Any]] = []
            with_rows = select(NodeResource.node_id).distinct()
            waiting = session.execute(
                select(Host.name, Pool.name)
                .join(Pool, col(Pool.id) == col(Host.pool_id))
                .where(
                    Pool.kind == PoolKind.VPS_HOST,
                    col(Host.tenant_controlled).is_(False),
                    col(Host.id).not_in(with_rows),
                )
                .order_by(col(Host.name))
            ).all()
            for host_name, pool_name in waiting:
                warnings.append(
                    {
                        "code": "vps.hosts.capacity",
                        "host": host_name,
                        "pool": pool_name,
                        "message": f"host {host_name} in pool {pool_name} has no capacity rows: it has not "
                        "reported inventory (or vps.hosts has not run since), so it is no candidate",
                    }
                )
            failing = session.execute(
                select(Host.name, Pool.name, Host.inventory_error)
                .join(Pool, col(Pool.id) == col(Host.pool_id))
                .where(col(Host.inventory_error).is_not(None))
                .order_by(col(Host.name))
            ).all()
            for host_name, pool_name, error in failing:
                warnings.append(
                    {
                        "code": "vps.hosts.inventory",
                        "host": host_name,
                        "pool": pool_name,
                        "message": f"host {host_name} in pool {pool_name}: vps.hosts cannot derive "
                        f"capacity from its inventory ({error}); it keeps its old rows until the "
                        "agent reports a valid inventory",
                    }
                )
            warnings.extend(fault_warning(fault) for fault in all_faults(session))
            body: dict[str, Any] = {"warnings": warnings}
            if invariants:
                facts = HostFacts(self.fleet.now(), self.fleet.settings.host_reserve)
                body["invariants"] = check_all(session, facts)
            return body

"""`fleet.api.dependents`: what depends on a row before it is deleted or taken away, for a confirm to name.

The deployed services an instance serves (deleting it is refused while one does:
InstancesAPI.delete asks `serving`), and a tenant's live instances and pending or
active reservations in a pool whose offer would be taken back (the offer may go:
they keep what they hold; new placements there are refused).
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from bcfleet.api.auth import Credential, acting_for, resolve
from bcfleet.api.base import Area
from bcfleet.api.lookup import find_pool
from bcfleet.domain.dependents import Dependent, DependentsJson
from bcfleet.domain.states import INSTANCE_LIVE, InstanceState, ReservationState
from bcfleet.errors import NotFoundError
from bcfleet.store.models import Instance

HOLDING = (
    ReservationState.PENDING,
    ReservationState.PLACED,
    ReservationState.BINDING,
    ReservationState.ACTIVE,
)
"""Reservations that still hold, or wait for, GPUs of their pool."""


def serving(session: Session, instance_id: str) -> list[Dependent]:
    """The deployed services this instance serves, by name."""
    from bcfleet.store.models.compute import Service  # mapped when first needed

    rows = session.exec(
        select(Service)
        .where(Service.instance_id == instance_id, Service.deployed == True)  # noqa: E712
        .order_by(col(Service.workspace), col(Service.name))
    ).all()
    return [Dependent("service", s.id, f"{s.workspace}/{s.name}", "deployed") for s in rows]


def in_pool(session: Session, tenant_id: str, pool_id: str) -> list[Dependent]:
    """A tenant's live instances and holding reservations in a pool."""
    from bcfleet.store.models.reservations import Reservation  # mapped when first needed

    live = (*INSTANCE_LIVE, InstanceState.PENDING)
    instances = session.exec(
        select(Instance)
        .where(
            Instance.tenant_id == tenant_id,
            Instance.pool_id == pool_id,
            col(Instance.state).in_(live),
        )
        .order_by(col(Instance.name))
    ).all()
    reservations = session.exec(
        select(Reservation)
        .where(
            Reservation.tenant_id == tenant_id,
            Reservation.pool_id == pool_id,
            col(Reservation.state).in_(HOLDING),
        )
        .order_by(col(Reservation.id))
    ).all()
    return [
        *(Dependent("instance", i.id, i.name, str(i.state)) for i in instances),
        *(Dependent("reservation", r.id, r.id, str(r.state)) for r in reservations),
    ]


class DependentsAPI(Area):
    def of_instance(
        self, credential: Credential | None, instance_id: str, *, tenant_id: str | None = None
    ) -> DependentsJson:
        """What depends on an instance (the services it serves); NOT_FOUND as instances.show."""
        with self.fleet.read() as session:
            actor = acting_for(session, resolve(session, credential, self.fleet.now()), tenant_id)
            instance = session.get(Instance, instance_id)
            visible = instance is not None and (
                actor.is_root_admin or instance.tenant_id == actor.tenant_id
            )
            if instance is None or not visible:
                raise NotFoundError(
                    f"instance {instance_id!r} not found", {"instance": instance_id}
                )
            return {"items": [d.to_json() for d in serving(session, instance.id)]}

    def of_offer(
        self, credential: Credential | None, *, tenant_id: str, pool: str, to: str
    ) -> DependentsJson:
        """What a tenant holds in a pool whose offer would be taken back. Only root's admin is
        told (another tenant's objects are never named to a pool's owner): others get none."""
        with self.fleet.read() as session:
            caller = resolve(session, credential, self.fleet.now())
            actor = acting_for(session, caller, tenant_id)
            row = find_pool(session, actor, pool)
            if not caller.is_root_admin:
                return {"items": []}
            return {"items": [d.to_json() for d in in_pool(session, to, row.id)]}

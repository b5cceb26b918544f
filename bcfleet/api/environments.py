"""Fleet environments of document 004: a size their services run on; set to a size, they hold it even when empty."""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from sqlalchemy import func
from sqlmodel import Session, col, select

from bcfleet.api.auth import Actor, Credential, tenant_resource
from bcfleet.api.base import Area
from bcfleet.api.compute_state import owned_for, require_usable
from bcfleet.api.compute_views import environment_json
from bcfleet.api.documents import DeletedJson, EnvironmentJson, EnvironmentPageJson
from bcfleet.api.events import emit
from bcfleet.api.pools import validate_name
from bcfleet.api.serverless_ops import rehome
from bcfleet.api.views import deleted_json
from bcfleet.errors import ConflictError
from bcfleet.placement.tenant_compute import load_settings, lock_compute
from bcfleet.store.faults import flush_or_conflict
from bcfleet.store.models.compute import FleetEnvironment, Service

if TYPE_CHECKING:
    from bcfleet.api.handle import ApiHandle

MANAGE, READ = "compute:environments:manage", "compute:environments:read"


def services_in(session: Session, environment_id: str) -> list[Service]:
    return list(
        session.exec(
            select(Service)
            .where(Service.environment_id == environment_id)
            .order_by(col(Service.workspace), col(Service.name))
        ).all()
    )


class EnvironmentsAPI(Area):
    """`fleet.api.environments`: fleet environments and their sizes."""

    def __init__(self, fleet: ApiHandle, rng: random.Random | None = None) -> None:
        super().__init__(fleet)
        self.rng = rng or random.Random()

    def _environment(
        self,
        session: Session,
        credential: Credential | None,
        environment_id: str,
        action: str,
        tenant_id: str | None = None,
    ) -> tuple[Actor, FleetEnvironment]:
        actor = self.actor(session, credential, tenant_id)
        return owned_for(
            session,
            actor,
            FleetEnvironment,
            environment_id,
            "environment",
            action,
            changes=action == MANAGE,
        )

    def _event(self, session: Session, env: FleetEnvironment, kind: str) -> None:
        emit(
            session,
            self.fleet.ids,
            self.fleet.now(),
            f"environment.{kind}",
            tenant_id=env.tenant_id,
            subject_id=env.id,
            data={"name": env.name, "size": env.size},
        )

    def create(
        self, credential: Credential | None, *, tenant_id: str, name: str, size: str
    ) -> EnvironmentJson:
        """A new environment on an enabled size; CONFLICT for a second name in the tenant."""
        validate_name("environment", name)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require(MANAGE, tenant_resource(tenant_id))
            lock_compute(session, tenant_id)
            _, settings = load_settings(session, tenant_id)
            now = self.fleet.now()
            env = FleetEnvironment(
                id=self.fleet.new_id("env"), tenant_id=tenant_id, name=name,
                size=require_usable(settings, size), created_at=now, updated_at=now,
            )  # fmt: skip
            session.add(env)
            flush_or_conflict(
                session,
                ConflictError(f"environment {name!r} already exists", {"name": name}),
            )
            self._event(session, env, "created")
            return environment_json(env, 0)

    def update(
        self, credential: Credential | None, environment_id: str, *, size: str
    ) -> EnvironmentJson:
        """Move an environment to a size; its deployed serverless services move onto spares of it.

        NO_CAPACITY (and nothing moved) when there are not enough ready spares.
        """
        with self.fleet.write() as session:
            _, env = self._environment(session, credential, environment_id, MANAGE)
            _, settings = load_settings(session, env.tenant_id)
            new = require_usable(settings, size, current=env.size)
            services = services_in(session, env.id)
            if new != env.size:
                for service in services:
                    rehome(session, self.fleet, service, new, self.rng)
                    session.add(service)
            env.size, env.updated_at = new, self.fleet.now()
            session.add(env)
            self._event(session, env, "updated")
            return environment_json(env, len(services))

    def list(
        self, credential: Credential | None, *, tenant_id: str | None = None
    ) -> EnvironmentPageJson:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require(READ, tenant_resource(actor.tenant_id))
            envs = select(FleetEnvironment)
            users = select(Service.environment_id, func.count())
            if not (actor.is_root_admin and tenant_id is None):  # root's admin: every tenant's
                envs = envs.where(FleetEnvironment.tenant_id == actor.tenant_id)
                users = users.where(Service.tenant_id == actor.tenant_id)
            order = (col(FleetEnvironment.tenant_id), col(FleetEnvironment.name))
            rows = session.exec(envs.order_by(*order)).all()
            counts = dict(session.exec(users.group_by(col(Service.environment_id))).all())
            return {"items": [environment_json(e, counts.get(e.id, 0)) for e in rows]}

    def show(
        self, credential: Credential | None, environment_id: str, *, tenant_id: str | None = None
    ) -> EnvironmentJson:
        with self.fleet.read() as session:
            _, env = self._environment(session, credential, environment_id, READ, tenant_id)
            return environment_json(env, len(services_in(session, env.id)))

    def delete(self, credential: Credential | None, environment_id: str) -> DeletedJson:
        """Delete an environment no service is in; CONFLICT naming the services otherwise."""
        with self.fleet.write() as session:
            _, env = self._environment(session, credential, environment_id, MANAGE)
            services = services_in(session, env.id)
            if services:
                names = ", ".join(f"{s.name} (workspace {s.workspace})" for s in services)
                raise ConflictError(
                    f"environment {env.name} still has services: {names}",
                    {"services": [s.id for s in services]},
                )
            self._event(session, env, "deleted")
            session.delete(env)
            return deleted_json(environment_id)

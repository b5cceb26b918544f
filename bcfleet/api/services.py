"""Services of document 004: create, list, show, deploy (at once, or streaming), undeploy, move size, delete.

A service runs on its environment's size when it has one, else on its own
size; a service created through the API without a size is Medium, whatever
the tenant's default (the default is what the UI preselects). Deploying a
serverless service takes a ready spare of its size at once or fails with
NO_CAPACITY; `deploy_stream` (the CLI's `--wait`, a streaming run) instead
starts an instance and waits until its agent says it is ready. Managed hosting
runs elsewhere and takes no instance. Every call is one transaction, except
`deploy_stream`, which is a sequence of them with waits between.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from sqlmodel import Session, col, select

from bcfleet.api.auth import Actor, Credential, tenant_resource
from bcfleet.api.base import Area
from bcfleet.api.compute_state import (
    effective_size,
    find_environment,
    owned_for,
    require_usable,
)
from bcfleet.api.compute_views import service_json
from bcfleet.api.documents import DeletedJson, ServiceJson, ServicePageJson
from bcfleet.api.events import emit
from bcfleet.api.serverless_ops import attach, detach, idle_retry_after, rehome, take_or_fail
from bcfleet.api.views import deleted_json
from bcfleet.domain.bounds import check_identifier, check_seconds
from bcfleet.domain.sizes import SIZES, label, label_with_shape, size_for_api_service
from bcfleet.errors import ConflictError, InvalidInputError, NoCapacityError
from bcfleet.placement.serverless import (
    place_for_service,
    take_booting_spare,
    take_ready_spare,
)
from bcfleet.placement.tenant_compute import load_settings, lock_compute
from bcfleet.store.faults import flush_or_conflict
from bcfleet.store.models import Instance, Pool
from bcfleet.store.models.compute import FleetEnvironment, Service

if TYPE_CHECKING:
    from bcfleet.api.handle import ApiHandle

HOSTINGS = ("serverless", "managed")
COMPUTE_NAME_MAX = 128  # a service's or index's workspace and name
MANAGE, READ = "compute:services:manage", "compute:services:read"


def validate_names(workspace: str, name: str) -> None:
    """A service's (or index's) workspace and name: 1-128 printable characters, not all blank,
    an identifier's (bounds.identifier_problem: no look-alikes of other names)."""
    for field, value in (("workspace", workspace), ("name", name)):
        check_identifier(field, value, COMPUTE_NAME_MAX)
        if not value.strip():
            raise InvalidInputError(f"a {field} cannot be blank", {"field": field})


def memory_notice(old: str, new: str, legacy: bool) -> str | None:
    """What a move that lowers memory must say (document 004: legacy services ran with 8 GiB)."""
    before, after = SIZES[old].service.memory_gib, SIZES[new].service.memory_gib
    if after >= before:
        return None
    ran = "Services deployed before instance sizes existed ran with" if legacy else "It had"
    return (
        f"{ran} {before} GiB memory; on {label(new)} its memory drops to {after} GiB. "
        f"Choose {label(old)} to keep {before} GiB."
    )


def _size_of_new_service(
    session: Session, tenant_id: str, size: str | None, env: FleetEnvironment | None
) -> str:
    """The size asked for, else the environment's, else Medium; it must be enabled."""
    chosen = size_for_api_service(size if env is None else size or env.size)
    if env is not None and chosen != env.size:
        raise InvalidInputError(
            f"services in environment {env.name} run on its size, {label(env.size)}",
            {"field": "size", "environment": env.id, "size": env.size},
        )
    _, settings = load_settings(session, tenant_id)
    return require_usable(settings, chosen)


class ServicesAPI(Area):
    """`fleet.api.services`: the services that use instance sizes."""

    def __init__(self, fleet: ApiHandle, rng: random.Random | None = None) -> None:
        super().__init__(fleet)
        self.rng = rng or random.Random()

    # -- helpers -------------------------------------------------------------

    def _service(
        self,
        session: Session,
        credential: Credential | None,
        service_id: str,
        action: str,
        tenant_id: str | None = None,
    ) -> tuple[Actor, Service]:
        actor = self.actor(session, credential, tenant_id)
        return owned_for(
            session, actor, Service, service_id, "service", action, changes=action == MANAGE
        )

    def _json(self, session: Session, service: Service) -> ServiceJson:
        environment = (
            session.get(FleetEnvironment, service.environment_id)
            if service.environment_id
            else None
        )
        instance = session.get(Instance, service.instance_id) if service.instance_id else None
        return service_json(
            service,
            effective_size=effective_size(session, service),
            environment=environment,
            instance=instance,
        )

    def _event(self, session: Session, service: Service, kind: str, **data: Any) -> None:
        emit(
            session,
            self.fleet.ids,
            self.fleet.now(),
            f"service.{kind}",
            tenant_id=service.tenant_id,
            subject_id=service.id,
            data={"name": service.name, "workspace": service.workspace, **data},
        )

    # -- create, read --------------------------------------------------------

    def create(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        workspace: str,
        name: str,
        hosting: str = "serverless",
        size: str | None = None,
        environment: str | None = None,
    ) -> ServiceJson:
        """A new, undeployed service; without a size it is Medium, in an environment the environment's size."""
        validate_names(workspace, name)
        if hosting not in HOSTINGS:
            raise InvalidInputError(
                f"hosting must be one of {', '.join(HOSTINGS)}", {"field": "hosting"}
            )
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require(MANAGE, tenant_resource(tenant_id))
            lock_compute(session, tenant_id)
            env = find_environment(session, tenant_id, environment) if environment else None
            chosen = _size_of_new_service(session, tenant_id, size, env)
            now = self.fleet.now()
            service = Service(
                id=self.fleet.new_id("svc"), tenant_id=tenant_id, workspace=workspace, name=name,
                hosting=hosting, size=chosen, environment_id=env.id if env else None,
                created_at=now, updated_at=now,
            )  # fmt: skip
            session.add(service)
            flush_or_conflict(
                session,
                ConflictError(
                    f"service {name!r} already exists in workspace {workspace!r}",
                    {"workspace": workspace, "name": name},
                ),
            )
            self._event(session, service, "created", size=chosen)
            return self._json(session, service)

    def list(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        workspace: str | None = None,
    ) -> ServicePageJson:
        """{ items } of one tenant's services (root's admin without tenant_id: every tenant's,
        as show finds them), by tenant, workspace and name."""
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require(READ, tenant_resource(actor.tenant_id))
            query = select(Service)
            if not (actor.is_root_admin and tenant_id is None):
                query = query.where(Service.tenant_id == actor.tenant_id)
            if workspace is not None:
                query = query.where(Service.workspace == workspace)
            order = (col(Service.tenant_id), col(Service.workspace), col(Service.name))
            rows = session.exec(query.order_by(*order)).all()
            return {"items": [self._json(session, s) for s in rows]}

    def show(
        self, credential: Credential | None, service_id: str, *, tenant_id: str | None = None
    ) -> ServiceJson:
        with self.fleet.read() as session:
            _, service = self._service(session, credential, service_id, READ, tenant_id)
            return self._json(session, service)

    def check_deploy(self, credential: Credential | None, service_id: str) -> None:
        """NOT_FOUND or FORBIDDEN as deploy would answer, changing nothing: the streaming
        deploy asks before its answer starts, so a refusal is an HTTP error, not a 200."""
        with self.fleet.read() as session:
            actor = self.actor(session, credential, None)
            owned_for(session, actor, Service, service_id, "service", MANAGE, changes=False)

    # -- deploy, undeploy ----------------------------------------------------

    def deploy(self, credential: Credential | None, service_id: str) -> ServiceJson:
        """Deploy at once: a serverless service takes a ready spare of its size, or NO_CAPACITY.

        Deploying a deployed service changes nothing. INVALID_INPUT when the
        service's size is turned off (it is not in use while undeployed).
        """
        with self.fleet.write() as session:
            _, service = self._service(session, credential, service_id, MANAGE)
            if service.deployed:
                return self._json(session, service)
            size = self._deployable_size(session, service)
            if service.hosting == "serverless":
                instance = take_or_fail(session, self.fleet, service.tenant_id, size, self.rng)
                attach(service, instance, self.fleet)
            self._mark_deployed(session, service, size)
            return self._json(session, service)

    def _deployable_size(self, session: Session, service: Service) -> str:
        """The size a deploy puts the service on, which must be enabled for serverless hosting.

        A managed service runs on its own hosting, not on the size's instances,
        so it keeps a size that was turned off after it got it.
        """
        _, settings = load_settings(session, service.tenant_id)
        size = effective_size(session, service)
        require_usable(settings, size, current=size if service.hosting == "managed" else None)
        return size

    def _mark_deployed(self, session: Session, service: Service, size: str) -> None:
        now = self.fleet.now()
        service.deployed, service.deployed_at, service.updated_at = True, now, now
        session.add(service)
        self._event(session, service, "deployed", size=size, instanceId=service.instance_id)

    def start(self, credential: Credential | None, service_id: str) -> ServiceJson:
        """Deploy without failing for capacity: a ready spare, else a booting one, else a new instance.

        The service is deployed from then on (its size is in use) and its
        status is `starting` until the instance's agent says it is ready.
        """
        with self.fleet.write() as session:
            _, service = self._service(session, credential, service_id, MANAGE)
            if service.deployed:
                return self._json(session, service)
            size = self._deployable_size(session, service)
            if service.hosting == "serverless":
                attach(service, self._any_instance(session, service, size), self.fleet)
            self._mark_deployed(session, service, size)
            return self._json(session, service)

    def _any_instance(self, session: Session, service: Service, size: str) -> Instance:
        tenant = service.tenant_id
        found = take_ready_spare(session, self.fleet, tenant_id=tenant, size=size)
        found = found or take_booting_spare(session, self.fleet, tenant_id=tenant, size=size)
        if found is not None:
            return found
        return place_for_service(
            session,
            self.fleet,
            tenant_id=tenant,
            pool=self._serverless_pool(session, tenant),
            size=size,
            service_name=service.name,
        )

    def _serverless_pool(self, session: Session, tenant_id: str) -> Pool:
        _, settings = load_settings(session, tenant_id)
        pool = session.get(Pool, settings.serverless_pool) if settings.serverless_pool else None
        if pool is None:
            raise InvalidInputError(
                "no serverless pool is set for this organization: an admin sets one with "
                "`fleet settings compute set --serverless-pool POOL`",
                {"field": "serverlessPool"},
            )
        return pool

    def deploy_stream(
        self,
        credential: Credential | None,
        service_id: str,
        *,
        poll_seconds: float = 5.0,
        timeout_seconds: float = 900.0,
        stop: threading.Event | None = None,
    ) -> Iterator[dict[str, Any]]:
        """A streaming deploy: yields progress until the service's instance is ready.

        Phases: `deployed` (a spare was free; the last one), `no-capacity`
        (none was: an instance starts), `starting`, `waiting` (every
        poll_seconds on the fleet's clock), `ready` (the last one). After
        timeout_seconds, NO_CAPACITY; the service stays deployed and its
        instance keeps starting. Both are finite numbers of seconds within
        bounds.WAIT_SECONDS_MAX (poll at least 0.01): INVALID_INPUT otherwise.
        Once `stop` is set (the watcher went, the server stops) the wait ends
        at once and so do the steps, the instance still starting.
        """
        check_seconds("pollSeconds", poll_seconds, low=0.01)
        check_seconds("timeoutSeconds", timeout_seconds)
        watching = stop or threading.Event()  # never set: the caller watches to the end
        try:
            yield {"phase": "deployed", "service": self.deploy(credential, service_id)}
            return
        except NoCapacityError as error:
            yield {"phase": "no-capacity", "instanceSize": error.instance_size,
                   "message": error.message}  # fmt: skip
        body = self.start(credential, service_id)
        yield {"phase": "starting", "service": body, "waitedSeconds": 0.0}
        waited = 0.0
        while body["status"] != "deployed":
            if waited >= timeout_seconds:
                raise self._timed_out(body, waited)
            if self.fleet.clock.sleep_unless(poll_seconds, watching):
                return
            waited += poll_seconds
            body = self.show(credential, service_id)  # a pending one is placed by the vps.hosts job
            if body["status"] == "undeployed":
                raise ConflictError(
                    f"service {body['name']} was undeployed while its instance was starting",
                    {"serviceId": service_id},
                )
            if body["status"] != "deployed":
                yield {"phase": "waiting", "service": body, "waitedSeconds": waited}
        yield {"phase": "ready", "service": body, "waitedSeconds": waited}

    def _timed_out(self, body: ServiceJson, waited: float) -> NoCapacityError:
        size = body["effectiveSize"]
        return NoCapacityError(
            f"No {label(size)} instance was ready after {waited:g} seconds. The service stays "
            f"deployed and its instance keeps starting: `fleet services show {body['id']}` "
            "tells when it is ready.",
            instance_size=size,
            retry_after_seconds=idle_retry_after(self.fleet),
            details={"serviceId": body["id"], "waitedSeconds": waited},
        )

    def undeploy(self, credential: Credential | None, service_id: str) -> ServiceJson:
        """Undeploy: the instance serving it is released; the service no longer holds its size."""
        with self.fleet.write() as session:
            _, service = self._service(session, credential, service_id, MANAGE)
            if not service.deployed:
                return self._json(session, service)
            detach(session, self.fleet, service, reason="service undeployed")
            service.deployed = False
            session.add(service)
            self._event(session, service, "undeployed")
            return self._json(session, service)

    # -- move, delete --------------------------------------------------------

    def set_size(self, credential: Credential | None, service_id: str, size: str) -> ServiceJson:
        """Move a service to a size (enabled, or the one it has); a deployed one moves onto a spare.

        The answer's `notices` say when memory drops, e.g. a service from
        before sizes (8 GiB, Large) moved to Medium (4 GiB).
        """
        with self.fleet.write() as session:
            _, service = self._service(session, credential, service_id, MANAGE)
            if service.environment_id is not None:
                raise InvalidInputError(
                    "this service runs on its environment's size: change the environment's size",
                    {"field": "size", "environment": service.environment_id},
                )
            _, settings = load_settings(session, service.tenant_id)
            old = effective_size(session, service)
            new = require_usable(settings, size, current=old)
            notice = memory_notice(old, new, legacy=service.size is None)
            if new != old:
                rehome(session, self.fleet, service, new, self.rng)
            service.size, service.updated_at = new, self.fleet.now()
            session.add(service)
            self._event(session, service, "resized", size=new, previous=old)
            body = self._json(session, service)
            body["notices"] = [notice] if notice else []
            body["message"] = f"Service {service.name} runs on {label_with_shape(new)}."
            return body

    def delete(self, credential: Credential | None, service_id: str) -> DeletedJson:
        """Delete a service; a deployed one is undeployed first (its instance released)."""
        with self.fleet.write() as session:
            _, service = self._service(session, credential, service_id, MANAGE)
            detach(session, self.fleet, service, reason="service deleted")
            self._event(session, service, "deleted")
            session.delete(service)
            return deleted_json(service_id)

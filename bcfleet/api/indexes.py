"""Pipeline indexes of document 004: their pod size (or the default pod size) and whether they are deployed.

An index with a pod size holds that size whether it is deployed or not (an
undeployed index claims it again the next time it is deployed); an index
without one uses the default pod size and never blocks turning a size off.
Undeploying an index does not free its size: moving it or resetting it to the
default pod size does.
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from bcfleet.api.auth import Actor, Credential, tenant_resource
from bcfleet.api.base import Area
from bcfleet.api.compute_state import owned_for, require_usable
from bcfleet.api.compute_views import index_json
from bcfleet.api.documents import DeletedJson, IndexJson, IndexPageJson
from bcfleet.api.events import emit
from bcfleet.api.services import validate_names
from bcfleet.api.views import deleted_json
from bcfleet.errors import ConflictError, InvalidInputError
from bcfleet.placement.tenant_compute import load_settings, lock_compute
from bcfleet.store.faults import flush_or_conflict
from bcfleet.store.models.compute import PipelineIndex

MANAGE, READ = "compute:indexes:manage", "compute:indexes:read"


class IndexesAPI(Area):
    """`fleet.api.indexes`: pipeline indexes and their pod sizes."""

    def _index(
        self,
        session: Session,
        credential: Credential | None,
        index_id: str,
        action: str,
        tenant_id: str | None = None,
    ) -> tuple[Actor, PipelineIndex]:
        actor = self.actor(session, credential, tenant_id)
        return owned_for(
            session, actor, PipelineIndex, index_id, "index", action, changes=action == MANAGE
        )

    def _event(self, session: Session, index: PipelineIndex, kind: str) -> None:
        emit(
            session,
            self.fleet.ids,
            self.fleet.now(),
            f"index.{kind}",
            tenant_id=index.tenant_id,
            subject_id=index.id,
            data={"name": index.name, "workspace": index.workspace, "podSize": index.pod_size},
        )

    def create(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        workspace: str,
        name: str,
        pod_size: str | None = None,
        deployed: bool = False,
    ) -> IndexJson:
        """A new index; its pod size must be an enabled size (None: the default pod size)."""
        validate_names(workspace, name)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require(MANAGE, tenant_resource(tenant_id))
            lock_compute(session, tenant_id)
            _, settings = load_settings(session, tenant_id)
            size = require_usable(settings, pod_size) if pod_size is not None else None
            now = self.fleet.now()
            index = PipelineIndex(
                id=self.fleet.new_id("idx"), tenant_id=tenant_id, workspace=workspace, name=name,
                pod_size=size, deployed=deployed, created_at=now, updated_at=now,
            )  # fmt: skip
            session.add(index)
            flush_or_conflict(
                session,
                ConflictError(
                    f"index {name!r} already exists in workspace {workspace!r}",
                    {"workspace": workspace, "name": name},
                ),
            )
            self._event(session, index, "created")
            return index_json(index)

    def update(
        self,
        credential: Credential | None,
        index_id: str,
        *,
        pod_size: str | None = None,
        default_pod_size: bool = False,
        deployed: bool | None = None,
    ) -> IndexJson:
        """Move an index to a pod size (enabled, or the one it has), reset it to the default, deploy or undeploy it."""
        if pod_size is not None and default_pod_size:
            raise InvalidInputError(
                "Choose a pod size or reset to the default pod size, not both",
                {"field": "podSize"},
            )
        with self.fleet.write() as session:
            _, index = self._index(session, credential, index_id, MANAGE)
            if pod_size is not None:
                _, settings = load_settings(session, index.tenant_id)
                index.pod_size = require_usable(settings, pod_size, current=index.pod_size)
            elif default_pod_size:
                index.pod_size = None
            if deployed is not None:
                index.deployed = deployed
            index.updated_at = self.fleet.now()
            session.add(index)
            self._event(session, index, "updated")
            return index_json(index)

    def list(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        workspace: str | None = None,
    ) -> IndexPageJson:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require(READ, tenant_resource(actor.tenant_id))
            query = select(PipelineIndex)
            if not (actor.is_root_admin and tenant_id is None):  # root's admin: every tenant's
                query = query.where(PipelineIndex.tenant_id == actor.tenant_id)
            if workspace is not None:
                query = query.where(PipelineIndex.workspace == workspace)
            order = (
                col(PipelineIndex.tenant_id),
                col(PipelineIndex.workspace),
                col(PipelineIndex.name),
            )
            return {"items": [index_json(i) for i in session.exec(query.order_by(*order)).all()]}

    def show(
        self, credential: Credential | None, index_id: str, *, tenant_id: str | None = None
    ) -> IndexJson:
        with self.fleet.read() as session:
            _, index = self._index(session, credential, index_id, READ, tenant_id)
            return index_json(index)

    def delete(self, credential: Credential | None, index_id: str) -> DeletedJson:
        with self.fleet.write() as session:
            _, index = self._index(session, credential, index_id, MANAGE)
            self._event(session, index, "deleted")
            session.delete(index)
            return deleted_json(index_id)

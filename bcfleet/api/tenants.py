"""Tenants (the documents' organizations): created and listed by root's admin."""

from __future__ import annotations

from sqlmodel import select

from bcfleet.api.auth import Credential, tenant_resource
from bcfleet.api.base import Area
from bcfleet.api.documents import DeletedJson, TenantJson, TenantPageJson
from bcfleet.api.lookup import get_tenant
from bcfleet.api.views import deleted_json, tenant_json
from bcfleet.domain.bounds import (
    TENANT_NAME_MAX,
    check_optional_text,
    check_text,
    tenant_id_problem,
)
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.domain.tenant_removal import still_has
from bcfleet.errors import ConflictError, InvalidInputError
from bcfleet.store.faults import flush_or_conflict
from bcfleet.store.models import Tenant
from bcfleet.store.models.compute import ComputeSettingsRow
from bcfleet.store.tenant_holders import tenant_holders


def validate_tenant_id(tenant_id: str) -> None:
    """INVALID_INPUT unless bounds.TENANT_ID."""
    problem = tenant_id_problem(tenant_id)
    if problem is not None:
        raise InvalidInputError(problem, {"field": "id", "value": tenant_id})


class TenantsAPI(Area):
    def create(
        self,
        credential: Credential | None,
        tenant_id: str,
        *,
        name: str | None = None,
        managed: bool = False,
    ) -> TenantJson:
        validate_tenant_id(tenant_id)
        check_optional_text("name", name, TENANT_NAME_MAX)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, None)
            actor.require("compute:tenants:manage", tenant_resource(tenant_id))
            if session.get(Tenant, tenant_id) is not None:
                raise ConflictError(f"tenant {tenant_id!r} already exists", {"tenant": tenant_id})
            tenant = Tenant(
                id=tenant_id, name=name or tenant_id, created_at=self.fleet.now(), managed=managed
            )
            session.add(tenant)
            return tenant_json(tenant)

    def update(self, credential: Credential | None, tenant_id: str, *, name: str) -> TenantJson:
        """Rename a tenant (its display name; the id never changes)."""
        check_text("name", name, TENANT_NAME_MAX)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, None)
            actor.require("compute:tenants:manage", tenant_resource(tenant_id))
            tenant = get_tenant(session, tenant_id)
            tenant.name = name
            session.add(tenant)
            return tenant_json(tenant)

    def set_managed(
        self, credential: Credential | None, tenant_id: str, *, managed: bool = True
    ) -> TenantJson:
        """Bring a tenant under FleetConfig management (or release it)."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, None)
            actor.require("compute:tenants:manage", tenant_resource(tenant_id))
            tenant = get_tenant(session, tenant_id)
            tenant.managed = managed
            session.add(tenant)
            return tenant_json(tenant)

    def delete(self, credential: Credential | None, tenant_id: str) -> DeletedJson:
        """Delete a tenant that owns nothing (its compute settings go with it): CONFLICT naming
        what it still has; root never."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, None)
            actor.require("compute:tenants:manage", tenant_resource(tenant_id))
            tenant = get_tenant(session, tenant_id)
            if tenant_id == ROOT_TENANT:
                raise ConflictError("the root tenant cannot be deleted", {"tenant": tenant_id})
            holders = tenant_holders(session, [tenant_id]).get(tenant_id, [])
            if holders:
                raise ConflictError(
                    still_has(tenant_id, holders),
                    {"tenant": tenant_id, "has": holders},
                )
            settings = session.get(ComputeSettingsRow, tenant_id)
            if settings is not None:  # a tenant's compute settings go with it
                session.delete(settings)
                session.flush()
            session.delete(tenant)
            # a table that names tenants and is not in tenant_holders.HOLDERS yet: still CONFLICT
            flush_or_conflict(
                session,
                ConflictError(
                    f"tenant {tenant_id!r} is still referenced by rows that name it",
                    {"tenant": tenant_id},
                ),
            )
            return deleted_json(tenant_id)

    def list(self, credential: Credential | None) -> TenantPageJson:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, None)
            actor.require("compute:tenants:read", tenant_resource(actor.tenant_id))
            query = select(Tenant).order_by(Tenant.id)
            if not actor.is_root_admin:
                query = query.where(Tenant.id == actor.tenant_id)
            return {"items": [tenant_json(t) for t in session.exec(query).all()]}

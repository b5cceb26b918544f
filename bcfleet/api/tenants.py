"""Tenants (the documents' organizations): created and listed by root's admin."""

from __future__ import annotations

import re
from typing import Any

from sqlmodel import select

from bcfleet.api.auth import Credential, tenant_resource
from bcfleet.api.base import Area
from bcfleet.api.views import tenant_json
from bcfleet.errors import ConflictError, InvalidInputError
from bcfleet.store.models import Tenant

TENANT_ID = re.compile(r"^[a-z][a-z0-9-]{0,62}$")


def validate_tenant_id(tenant_id: str) -> None:
    if not TENANT_ID.match(tenant_id):
        raise InvalidInputError(
            f"tenant id {tenant_id!r} must be lower-case letters, digits and '-', starting with a letter",
            {"field": "id", "value": tenant_id},
        )


class TenantsAPI(Area):
    def create(
        self, credential: Credential | None, tenant_id: str, *, name: str | None = None
    ) -> dict[str, Any]:
        validate_tenant_id(tenant_id)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, None)
            actor.require("compute:tenants:manage", tenant_resource(tenant_id))
            if session.get(Tenant, tenant_id) is not None:
                raise ConflictError(f"tenant {tenant_id!r} already exists", {"tenant": tenant_id})
            tenant = Tenant(id=tenant_id, name=name or tenant_id, created_at=self.fleet.now())
            session.add(tenant)
            return tenant_json(tenant)

    def list(self, credential: Credential | None) -> dict[str, Any]:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, None)
            query = select(Tenant).order_by(Tenant.id)
            if not actor.is_root_admin:
                query = query.where(Tenant.id == actor.tenant_id)
            return {"items": [tenant_json(t) for t in session.exec(query).all()]}

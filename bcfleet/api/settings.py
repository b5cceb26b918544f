"""Tenant settings: the Compute tab of document 004 (`fleet.api.settings.compute_show/compute_set`).

Only organization admins view and change these settings: the document says
"You must be an organization admin to view and change these settings", so
both reading and saving require `compute:settings:manage` on the tenant, which
the built-in admin role has and members and viewers have not (their
`compute:*:read` would otherwise let them read it).

A save is one transaction: lock the tenant's compute changes, load the current
settings and everything that uses a size, run the pure `apply_change`, write.
So a service deployed after the form was opened still blocks turning its size
off, and on SIZE_IN_USE (or any error) the settings stay as they were.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace

from sqlmodel import Session

from bcfleet.api.auth import Actor, Credential, tenant_resource
from bcfleet.api.base import Area
from bcfleet.api.compute_state import load_size_users, write_settings
from bcfleet.api.compute_views import settings_json
from bcfleet.api.documents import ComputeSettingsJson, DeletedJson
from bcfleet.api.events import emit
from bcfleet.api.fault_views import last_error_json
from bcfleet.api.lookup import find_pool, get_tenant
from bcfleet.api.views import deleted_json
from bcfleet.domain.compute_settings import (
    ComputeChange,
    apply_change,
    check_default,
    check_in_use,
    draft_change,
    serverless_pool_problem,
)
from bcfleet.errors import InvalidInputError, SizeInUseError
from bcfleet.placement.tenant_compute import load_settings, lock_compute
from bcfleet.store.job_faults import fault_of
from bcfleet.store.models import Pool

MANAGE = "compute:settings:manage"
SPARES_JOB = "spares"  # the job whose faults on a tenant the settings show as lastError


class SettingsAPI(Area):
    """The Compute tab: sizes, spare instances, credits per month, default size, serverless pool."""

    def _admin(self, session: Session, credential: Credential | None, tenant_id: str) -> Actor:
        actor = self.actor(session, credential, tenant_id)
        actor.require(MANAGE, tenant_resource(tenant_id))
        get_tenant(session, tenant_id)
        return actor

    def compute_show(self, credential: Credential | None, *, tenant_id: str) -> ComputeSettingsJson:
        """The settings with credits per size and in total, and what uses each size now."""
        with self.fleet.read() as session:
            self._admin(session, credential, tenant_id)
            row, settings = load_settings(session, tenant_id)
            pool = session.get(Pool, settings.serverless_pool) if settings.serverless_pool else None
            users = load_size_users(session, tenant_id)
            fault = last_error_json(fault_of(session, SPARES_JOB, "tenant", tenant_id))
            return settings_json(tenant_id, settings, row, pool, users, fault)

    def compute_set(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        enable: Iterable[str] = (),
        disable: Iterable[str] = (),
        spares: Mapping[str, int] | None = None,
        default_size: str | None = None,
        clear_default: bool = False,
        serverless_pool: str | None = None,
    ) -> ComputeSettingsJson:
        """Save a change given as the CLI's flags; see compute_save."""
        change = ComputeChange.from_flags(
            enable=enable,
            disable=disable,
            spares=spares,
            default_size=default_size,
            clear_default=clear_default,
            serverless_pool=serverless_pool,
        )
        return self.compute_save(credential, tenant_id=tenant_id, change=change)

    def compute_save(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        change: ComputeChange,
        managed: bool | None = None,
    ) -> ComputeSettingsJson:
        """Save: "Your compute settings are saved." with notices, or an error and nothing changed.

        INVALID_INPUT for bad sizes or spares and the default-size rules,
        SIZE_IN_USE naming each service (with its workspace), environment and
        index on a size this change turns off, NOT_FOUND for an unknown pool.
        """
        with self.fleet.write() as session:
            actor = self._admin(session, credential, tenant_id)
            lock_compute(session, tenant_id)
            change, pool = self._resolve_pool(session, actor, change)
            row, current = load_settings(session, tenant_id)
            result = apply_change(current, change, load_size_users(session, tenant_id))
            now = self.fleet.now()
            row = write_settings(session, row, tenant_id, result.settings, now=now, managed=managed)
            notices = [n.to_json() for n in result.notices]
            emit(
                session,
                self.fleet.ids,
                now,
                "compute.settings.saved",
                tenant_id=tenant_id,
                subject_id=tenant_id,
                data={"version": row.version, "notices": notices},
            )
            if pool is None and result.settings.serverless_pool:
                pool = session.get(Pool, result.settings.serverless_pool)
            body = settings_json(tenant_id, result.settings, row, pool, None)
            body["message"] = result.message
            body["notices"] = notices
            return body

    def compute_delete(self, credential: Credential | None, *, tenant_id: str) -> DeletedJson:
        """Forget a tenant's saved settings (FleetConfig's delete): back to the defaults, which turn
        every size on, so nothing in use is turned off; its serverless pool is named no more."""
        with self.fleet.write() as session:
            self._admin(session, credential, tenant_id)
            lock_compute(session, tenant_id)
            row, _ = load_settings(session, tenant_id)
            if row is not None:
                session.delete(row)
                session.flush()  # the pool it named can be deleted next, in this transaction
                emit(
                    session,
                    self.fleet.ids,
                    self.fleet.now(),
                    "compute.settings.deleted",
                    tenant_id=tenant_id,
                    subject_id=tenant_id,
                    data={"version": row.version},
                )
            return deleted_json(tenant_id)

    def compute_draft(
        self, credential: Credential | None, *, tenant_id: str, change: ComputeChange
    ) -> ComputeSettingsJson:
        """What the form shows while editing, saving nothing: credits, notices, and what would block.

        `problems` holds the default-size rule a save would break and `inUse` the
        users of each size the draft turns off, as of now.
        """
        with self.fleet.read() as session:
            actor = self._admin(session, credential, tenant_id)
            change, pool = self._resolve_pool(session, actor, change)
            row, current = load_settings(session, tenant_id)
            drafted = draft_change(current, change)
            users = load_size_users(session, tenant_id)
            if pool is None and drafted.settings.serverless_pool:
                pool = session.get(Pool, drafted.settings.serverless_pool)
            body = settings_json(tenant_id, drafted.settings, row, pool, users)
        body["notices"] = [n.to_json() for n in drafted.notices]
        body["problems"], body["inUse"] = [], []
        try:
            check_default(current, drafted.settings)
        except InvalidInputError as error:
            body["problems"].append(error.message)
        try:
            check_in_use(current, drafted.settings, users)
        except SizeInUseError as error:
            body["inUse"] = error.details["sizes"]
        return body

    def _resolve_pool(
        self, session: Session, actor: Actor, change: ComputeChange
    ) -> tuple[ComputeChange, Pool | None]:
        """The change with its serverless pool (id or name) as a visible vps-host pool's id."""
        if change.serverless_pool is None:
            return change, None
        pool = find_pool(session, actor, change.serverless_pool)
        problem = serverless_pool_problem(pool.name, pool.kind)
        if problem is not None:
            raise InvalidInputError(problem, {"field": "serverlessPool", "pool": pool.id})
        return replace(change, serverless_pool=pool.id), pool

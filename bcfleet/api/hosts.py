"""Hosts: adopt by name into a vps-host pool, report inventory, drain, list and show."""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete
from sqlmodel import Session, col, select

from bcfleet.api.auth import Credential, pool_resource, require_host_report, sees_guests
from bcfleet.api.documents import AgentReportJson, DeletedJson, HostDetailJson, HostJson
from bcfleet.api.events import emit
from bcfleet.api.host_list import HostReads, Scope, list_hosts
from bcfleet.api.lookup import find_host, find_pool
from bcfleet.api.names import add_named, require_free_name
from bcfleet.api.pools import validate_name
from bcfleet.api.token_revocation import host_agent_tokens, revoke
from bcfleet.api.views import deleted_json, health_json, host_json
from bcfleet.domain.bounds import label_problem, printable
from bcfleet.domain.states import HostState, PoolKind
from bcfleet.errors import ConflictError, InvalidInputError
from bcfleet.placement.holdings import with_shortfall
from bcfleet.schemas.inventory import validate_inventory
from bcfleet.store.faults import flush_or_conflict
from bcfleet.store.models import (
    Allocation,
    Booking,
    GpuAtom,
    Host,
    Instance,
    NodeResource,
    Pool,
)

PLACEMENT_LABEL = "bc.dev/cap.instance.placement"


def host_cpus(inventory: dict[str, Any] | None, reserve_vcpu: int) -> list[int] | None:
    """The CPUs the host keeps for itself, as the placement chooser works them out (None: no inventory)."""
    if inventory is None:
        return None
    from bcfleet.domain.numa import reserved_cpus  # not needed to list hosts
    from bcfleet.domain.shapes import Inventory

    return sorted(reserved_cpus(Inventory.from_json(inventory), reserve_vcpu))


def validate_labels(labels: dict[str, str]) -> None:
    """INVALID_INPUT for the first label bounds.label_problem refuses."""
    for key, value in labels.items():
        problem = label_problem(key, value)
        if problem is not None:
            raise InvalidInputError(f"invalid label: {problem}", {"label": printable(str(key))})


def _resources(session: Session, node_ids: list[str]) -> dict[str, list[NodeResource]]:
    rows: dict[str, list[NodeResource]] = {n: [] for n in node_ids}
    if node_ids:
        query = (
            select(NodeResource)
            .where(col(NodeResource.node_id).in_(node_ids))
            .order_by(col(NodeResource.node_id), col(NodeResource.resource))
        )
        for row in session.exec(query).all():
            rows[row.node_id].append(row)
    return rows


def host_history(session: Session, node_id: str) -> list[str]:
    """What ties a host's row to the past or present: instances, allocations, GPU bookings."""
    checks = (
        ("instances", select(Instance.id).where(Instance.node_id == node_id)),
        ("allocations", select(Allocation.id).where(Allocation.node_id == node_id)),
        ("GPU bookings", select(Booking.id).where(Booking.node_id == node_id)),
    )
    return [label for label, query in checks if session.exec(query.limit(1)).first() is not None]


def _live_allocations(session: Session, node_id: str) -> bool:
    query = select(Allocation.id).where(
        Allocation.node_id == node_id, col(Allocation.released_at).is_(None)
    )
    return session.exec(query.limit(1)).first() is not None


class HostsAPI(HostReads):
    """Hosts: adopt, update, report, drain (set_state), show, remove; list is HostReads', on Core alone."""

    def adopt(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        pool: str,
        name: str,
        labels: dict[str, str] | None = None,
        tenant_controlled: bool = False,
        managed: bool = False,
    ) -> HostJson:
        validate_name("host", name)
        validate_labels(labels or {})
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            row = find_pool(session, actor, pool)
            actor.require("compute:hosts:manage", pool_resource(row))
            if row.kind != PoolKind.VPS_HOST:
                raise InvalidInputError(
                    f"pool {row.name!r} is a {row.kind} pool; hosts are adopted into vps-host pools",
                    {"pool": row.id},
                )
            require_free_name(session, Host, name)
            host = Host(
                id=self.fleet.new_id("node"),
                name=name,
                pool_id=row.id,
                labels=dict(labels or {}),
                tenant_controlled=tenant_controlled,
                created_at=self.fleet.now(),
                managed=managed,
            )
            add_named(session, host)
            emit(
                session,
                self.fleet.ids,
                self.fleet.now(),
                "host.adopted",
                tenant_id=row.owner_tenant_id,
                subject_id=host.id,
                data={"name": name},
            )
            return host_json(host, row, [])

    def update(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        host: str,
        labels: dict[str, str] | None = None,
        tenant_controlled: bool | None = None,
        pool: str | None = None,
    ) -> HostJson:
        """Replace a host's labels, its tenant-controlled flag, or move it (without allocations)
        to another vps-host pool; what is left out (None) stays as it is."""
        if labels is not None:
            validate_labels(labels)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            row, current = find_host(session, actor, host)
            actor.require("compute:hosts:manage", pool_resource(current))
            target = current
            if pool is not None:
                target = self._move(session, row, current, find_pool(session, actor, pool))
                actor.require("compute:hosts:manage", pool_resource(target))
            if labels is not None:
                row.labels = dict(labels)
            if tenant_controlled is not None:
                row.tenant_controlled = tenant_controlled
            session.add(row)
            return host_json(row, target, _resources(session, [row.id])[row.id])

    def _move(self, session: Session, row: Host, current: Pool, target: Pool) -> Pool:
        if target.id == current.id:
            return target
        if target.kind != PoolKind.VPS_HOST:
            raise InvalidInputError(
                f"pool {target.name!r} is a {target.kind} pool; hosts belong to vps-host pools",
                {"pool": target.id},
            )
        if _live_allocations(session, row.id):
            raise ConflictError(
                f"host {row.name!r} has allocations; drain it before moving it to another pool",
                {"host": row.id},
            )
        row.pool_id = target.id
        return target

    def set_managed(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        host: str,
        managed: bool = True,
    ) -> HostJson:
        """Bring a host under FleetConfig management (or release it)."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            row, pool = find_host(session, actor, host)
            actor.require("compute:hosts:manage", pool_resource(pool))
            row.managed = managed
            session.add(row)
            return host_json(row, pool)

    def remove(
        self, credential: Credential | None, *, tenant_id: str | None = None, host: str
    ) -> DeletedJson:
        """Forget a host with no instances, allocations or bookings, past or present; CONFLICT
        otherwise (drain it instead). Its capacity rows and GPU atoms go with it, and the
        tokens of its agents are revoked (their principals stay, bound to nothing live)."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            row, pool = find_host(session, actor, host)
            actor.require("compute:hosts:manage", pool_resource(pool))
            history = host_history(session, row.id)
            if history:
                raise ConflictError(
                    f"host {row.name!r} has {', '.join(history)}; drain it instead",
                    {"host": row.id, "has": history},
                )
            now = self.fleet.now()
            revoked = [token for token, _agent in host_agent_tokens(session, row.id)]
            for token in revoked:
                revoke(session, token, now)
            session.execute(delete(NodeResource).where(col(NodeResource.node_id) == row.id))
            session.execute(delete(GpuAtom).where(col(GpuAtom.node_id) == row.id))
            session.delete(row)
            flush_or_conflict(
                session,
                ConflictError(f"host {row.name!r} is still referenced", {"host": row.id}),
            )
            emit(
                session,
                self.fleet.ids,
                now,
                "host.removed",
                tenant_id=pool.owner_tenant_id,
                subject_id=row.id,
                data={"name": row.name, "revokedTokens": [token.id for token in revoked]},
            )
            return deleted_json(row.id)

    def report(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        host: str,
        inventory: Any,
    ) -> HostJson:
        """Store a host's applied inventory; vps.hosts derives its capacity rows from it."""
        validate_inventory(inventory)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            row, pool = find_host(session, actor, host)
            require_host_report(actor, row, pool)
            row.inventory = inventory
            row.inventory_reported_at = self.fleet.now()
            row.inventory_generation += 1
            session.add(row)
            session.flush()
            row.conditions = with_shortfall(
                session.connection(),
                row.id,
                list(row.conditions or []),
                self.fleet.now(),
                self.fleet.settings.host_reserve,
            )
            return host_json(row, pool, _resources(session, [row.id])[row.id])

    def report_guests(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        host: str,
        health: Any = None,
        guests: Any = None,
    ) -> AgentReportJson:
        """A host agent reports the host's health and, per listed guest, its conditions and
        balloon, each replacing what was reported before (api.agent_reports)."""
        from bcfleet.api.agent_reports import check_report, store_report

        checked_health, checked = check_report(health, guests)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            row, pool = find_host(session, actor, host)
            require_host_report(actor, row, pool)
            store_report(
                session,
                row,
                checked_health,
                checked,
                real_ids=sees_guests(actor),
                at=self.fleet.now(),
            )
            return {"host": row.name, "health": health_json(row.agent_health), "guests": checked}

    def set_state(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        host: str,
        draining: bool,
    ) -> HostJson:
        """Drain a host (no new placements) or return it to ready."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            row, pool = find_host(session, actor, host)
            actor.require("compute:hosts:manage", pool_resource(pool))
            row.state = HostState.DRAINING if draining else HostState.READY
            session.add(row)
            emit(
                session,
                self.fleet.ids,
                self.fleet.now(),
                f"host.{row.state}",
                tenant_id=pool.owner_tenant_id,
                subject_id=row.id,
                data={"name": row.name},
            )
            return host_json(row, pool, _resources(session, [row.id])[row.id])

    def show(
        self, credential: Credential | None, *, tenant_id: str | None = None, host: str
    ) -> HostDetailJson:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            row, pool = find_host(session, actor, host)
            actor.require("compute:hosts:read", pool_resource(pool))
            # The listing's item (the same JSON hosts.list gives) and the inventory document.
            [item] = list_hosts(session, Scope(node_id=row.id), self.fleet.now())
            reserve = self.fleet.settings.host_reserve.with_overrides(pool.host_reserve)
            return {
                **item,
                "inventory": row.inventory,
                "reservedCpus": host_cpus(row.inventory, reserve.vcpu),
            }

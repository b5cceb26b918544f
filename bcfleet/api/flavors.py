"""Flavors: named instance shapes per pool (document 000, "Define a flavor" to "Update and delete")."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert
from sqlmodel import Session, SQLModel, col, select

from bcfleet.api.auth import Actor, Credential, pool_resource
from bcfleet.api.base import Area
from bcfleet.api.documents import FlavorDeletedJson, FlavorJson, FlavorPageJson
from bcfleet.api.events import emit
from bcfleet.api.lookup import find_flavor, find_pool
from bcfleet.api.views import flavor_json, flavor_row_json
from bcfleet.domain.bounds import text_problem
from bcfleet.domain.flavor_rules import (
    name_problem,
    normalize_placement,
    placement_problems,
    shape_problems,
    whole_shape,
)
from bcfleet.domain.states import PoolKind
from bcfleet.errors import ConflictError, InvalidInputError
from bcfleet.store.faults import flush_or_conflict
from bcfleet.store.models import Flavor, Instance, Pool

if TYPE_CHECKING:
    from bcfleet.api.handle import ApiHandle

# A check of a provider pool's offer (issue of provider pools); returns warnings, raises on unknown.
OfferCheck = Callable[[Session, Pool, str], list[str]]
# Called with (credential, tenant_id, pool) before the write transaction, so that the
# provider is asked for offers with no transaction open (providers/offer_catalog.py).
OfferPrefetch = Callable[[Credential | None, str, str], None]


def validate_flavor_input(
    pool: Pool,
    *,
    name: Any,
    vcpu: Any,
    memory_gib: Any,
    disk_gib: Any,
    gpus: Any,
    offer_id: str | None,
    placement: Mapping[str, Any] | None,
) -> None:
    """INVALID_INPUT naming every bad field: shape, name, offerId and placement rules."""
    problems = shape_problems(vcpu, memory_gib, disk_gib, gpus)
    problem = name_problem(name)
    if problem:
        problems["name"] = problem
    problems.update(placement_problems(placement))
    offer_problem = text_problem("offerId", offer_id) if offer_id else None
    if offer_problem:
        problems["offerId"] = offer_problem
    if pool.kind == PoolKind.PROVIDER and not offer_id:
        problems["offerId"] = (
            "a provider pool's flavor needs offerId, the provider's offer it names"
        )
    if pool.kind == PoolKind.VPS_HOST and offer_id:
        problems["offerId"] = "offerId is for provider pools; hosted pools place flavors on hosts"
    if pool.kind == PoolKind.PROVIDER and normalize_placement(placement):
        problems["placement"] = "placement applies to hosted pools only"
    if problems:
        message = "; ".join(problems.values())
        raise InvalidInputError(f"invalid flavor: {message}", {"fields": problems})


_REFERENCING = select(Instance.id).where(col(Instance.flavor_id).is_not(None))


def referenced(session: Session, flavor_id: str) -> bool:
    """Whether any instance row, deleted ones included, references the flavor (the rule a flavor
    is archived rather than deleted by)."""
    found = session.exec(_REFERENCING.where(Instance.flavor_id == flavor_id).limit(1)).first()
    return found is not None


def referenced_flavors(session: Session) -> set[str]:
    """The ids of every flavor referenced() holds referenced, in one query (FleetConfig's plan)."""
    query = select(Instance.flavor_id).where(col(Instance.flavor_id).is_not(None))
    return {flavor_id for flavor_id in session.exec(query.distinct()) if flavor_id is not None}


def _item(pool: Pool, raw: Mapping[str, Any]) -> dict[str, Any]:
    """One item of create_many, validated as create validates, with its defaults."""
    item = {
        "name": raw.get("name"),
        "vcpu": raw.get("vcpu"),
        "memory_gib": raw.get("memory_gib"),
        "disk_gib": raw.get("disk_gib"),
        "gpus": raw.get("gpus", 0),
        "offer_id": raw.get("offer_id"),
        "placement": raw.get("placement"),
    }
    validate_flavor_input(pool, **item)
    shape = whole_shape(item["vcpu"], item["memory_gib"], item["disk_gib"], item["gpus"])
    item["vcpu"], item["memory_gib"], item["disk_gib"], item["gpus"] = shape
    item["placement"] = normalize_placement(item["placement"])
    return item


def _check_names_free(session: Session, pool: Pool, names: list[str]) -> None:
    """CONFLICT for a name given twice or already in the pool (archived ones included)."""
    twice = {name for name, count in Counter(names).items() if count > 1}
    taken = session.exec(
        select(Flavor.name).where(Flavor.pool_id == pool.id, col(Flavor.name).in_(names))
    ).all()
    clash = sorted(set(taken) | twice)
    if clash:
        raise ConflictError(
            f"flavors {', '.join(map(repr, clash))} already exist in pool {pool.name!r}",
            {"flavors": clash, "pool": pool.id},
        )


def _created_event(
    fleet: ApiHandle, pool: Pool, row: Mapping[str, Any], now: datetime
) -> dict[str, Any]:
    return {
        "id": fleet.ids.new("evt", now),
        "type": "flavor.created",
        "tenant_id": pool.owner_tenant_id,
        "subject_id": row["id"],
        "data": {"name": row["name"], "poolId": pool.id},
        "at": now,
    }


class FlavorsAPI(Area):
    offer_check: OfferCheck | None = None
    offer_prefetch: OfferPrefetch | None = None

    def _pool_for_manage(self, session: Session, actor: Actor, pool: str) -> Pool:
        row = find_pool(session, actor, pool)
        actor.require("compute:flavors:manage", pool_resource(row))
        return row

    def create(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        pool_id: str,
        name: str,
        vcpu: int,
        memory_gib: int,
        disk_gib: int,
        gpus: int = 0,
        offer_id: str | None = None,
        placement: Mapping[str, Any] | None = None,
        managed: bool = False,
    ) -> FlavorJson:
        """compute:flavors:manage on the pool; CONFLICT for a second name in the pool."""
        if self.offer_prefetch and offer_id:
            self.offer_prefetch(credential, tenant_id, pool_id)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            pool = self._pool_for_manage(session, actor, pool_id)
            validate_flavor_input(
                pool,
                name=name,
                vcpu=vcpu,
                memory_gib=memory_gib,
                disk_gib=disk_gib,
                gpus=gpus,
                offer_id=offer_id,
                placement=placement,
            )
            vcpu, memory_gib, disk_gib, gpus = whole_shape(vcpu, memory_gib, disk_gib, gpus)
            warnings = (
                self.offer_check(session, pool, offer_id) if self.offer_check and offer_id else []
            )
            existing = session.exec(
                select(Flavor).where(Flavor.pool_id == pool.id, Flavor.name == name)
            ).first()
            if existing is not None:
                hint = " (archived: flavors update restores it)" if existing.archived else ""
                raise ConflictError(
                    f"flavor {name!r} already exists in pool {pool.name!r}{hint}",
                    {"flavor": name, "pool": pool.id, "archived": existing.archived},
                )
            now = self.fleet.now()
            flavor = Flavor(
                id=self.fleet.new_id("flv"),
                pool_id=pool.id,
                name=name,
                vcpu=vcpu,
                memory_gib=memory_gib,
                disk_gib=disk_gib,
                gpus=gpus,
                offer_id=offer_id,
                placement=normalize_placement(placement),
                created_at=now,
                updated_at=now,
                managed=managed,
            )
            session.add(flavor)
            pool_name = pool.name
            # a concurrent create of the same name may have won the race
            flush_or_conflict(
                session,
                ConflictError(
                    f"flavor {name!r} already exists in pool {pool_name!r}", {"flavor": name}
                ),
            )
            emit(
                session,
                self.fleet.ids,
                now,
                "flavor.created",
                tenant_id=pool.owner_tenant_id,
                subject_id=flavor.id,
                data={"name": name, "poolId": pool.id},
            )
            body = flavor_json(flavor)
            if warnings:
                body["warnings"] = warnings
            return body

    def create_many(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        pool_id: str,
        flavors: Sequence[Mapping[str, Any]],
        managed: bool = False,
    ) -> dict[str, Any]:
        """Several flavors of one pool at once, with every rule of create: all of them or none.

        Each item has create's fields (name, vcpu, memory_gib, disk_gib, and optionally gpus,
        offer_id, placement). One authorization, one lookup of the names taken, and the rows
        and their flavor.created events written in bulk (`fleet apply` of large documents).
        """
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            pool = self._pool_for_manage(session, actor, pool_id)
            items = [_item(pool, raw) for raw in flavors]
            warnings = {
                item["name"]: self.offer_check(session, pool, item["offer_id"])
                for item in items
                if self.offer_check and item["offer_id"]
            }
            _check_names_free(session, pool, [item["name"] for item in items])
            now = self.fleet.now()
            rows = [
                {"id": self.fleet.new_id("flv"), "pool_id": pool.id, **item, "archived": False,
                 "version": 1, "created_at": now, "updated_at": now, "managed": managed}
                for item in items
            ]  # fmt: skip
            if rows:  # Core inserts of the tables: one executemany each, no ORM bookkeeping
                events = [_created_event(self.fleet, pool, row, now) for row in rows]
                session.execute(insert(SQLModel.metadata.tables["flavors"]), rows)
                session.execute(insert(SQLModel.metadata.tables["events"]), events)
            bodies = [flavor_row_json(row) for row in rows]
            for body in bodies:
                if warnings.get(body["name"]):
                    body["warnings"] = warnings[body["name"]]
            return {"items": bodies}

    def list(
        self, credential: Credential | None, *, tenant_id: str, pool_id: str
    ) -> FlavorPageJson:
        """compute:flavors:read: { items } sorted by name, archived ones hidden."""
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            pool = find_pool(session, actor, pool_id)
            actor.require("compute:flavors:read", pool_resource(pool))
            rows = session.exec(
                select(Flavor)
                .where(Flavor.pool_id == pool.id, Flavor.archived == False)  # noqa: E712
                .order_by(Flavor.name)
            ).all()
            return {"items": [flavor_json(f) for f in rows]}

    def get(
        self, credential: Credential | None, *, tenant_id: str, pool_id: str, name: str
    ) -> FlavorJson:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            pool = find_pool(session, actor, pool_id)
            actor.require("compute:flavors:read", pool_resource(pool))
            return flavor_json(find_flavor(session, pool, name))

    def update(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        pool_id: str,
        name: str,
        vcpu: int,
        memory_gib: int,
        disk_gib: int,
        gpus: int | None = None,
        offer_id: str | None = None,
        placement: Mapping[str, Any] | None = None,
    ) -> FlavorJson:
        """Replace the shape: gpus falls back to 0, offerId keeps its value; restores an archived flavor."""
        if self.offer_prefetch and offer_id:
            self.offer_prefetch(credential, tenant_id, pool_id)
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            pool = self._pool_for_manage(session, actor, pool_id)
            flavor = find_flavor(session, pool, name, include_archived=True)
            new_offer = offer_id if offer_id is not None else flavor.offer_id
            new_gpus = 0 if gpus is None else gpus
            validate_flavor_input(
                pool,
                name=name,
                vcpu=vcpu,
                memory_gib=memory_gib,
                disk_gib=disk_gib,
                gpus=new_gpus,
                offer_id=new_offer,
                placement=placement,
            )
            warnings = (
                self.offer_check(session, pool, new_offer)
                if self.offer_check and new_offer and new_offer != flavor.offer_id
                else []
            )
            vcpu, memory_gib, disk_gib, new_gpus = whole_shape(vcpu, memory_gib, disk_gib, new_gpus)
            flavor.vcpu, flavor.memory_gib, flavor.disk_gib = vcpu, memory_gib, disk_gib
            flavor.gpus, flavor.offer_id = new_gpus, new_offer
            flavor.placement = normalize_placement(placement)
            flavor.archived = False
            flavor.version += 1
            flavor.updated_at = self.fleet.now()
            session.add(flavor)
            emit(
                session,
                self.fleet.ids,
                flavor.updated_at,
                "flavor.updated",
                tenant_id=pool.owner_tenant_id,
                subject_id=flavor.id,
                data={"name": name, "version": flavor.version},
            )
            body = flavor_json(flavor)
            if warnings:
                body["warnings"] = warnings
            return body

    def set_managed(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        pool_id: str,
        name: str,
        managed: bool = True,
    ) -> FlavorJson:
        """Bring a flavor, archived or not, under FleetConfig management (or release it)."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            pool = self._pool_for_manage(session, actor, pool_id)
            flavor = find_flavor(session, pool, name, include_archived=True)
            flavor.managed = managed
            session.add(flavor)
            return flavor_json(flavor)

    def delete(
        self, credential: Credential | None, *, tenant_id: str, pool_id: str, name: str
    ) -> FlavorDeletedJson:
        """Delete a flavor no instance ever used; archive one that any instance row references."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            pool = self._pool_for_manage(session, actor, pool_id)
            flavor = find_flavor(session, pool, name)
            if referenced(session, flavor.id):
                flavor.archived = True
                flavor.updated_at = self.fleet.now()
                session.add(flavor)
                result: FlavorDeletedJson = {"deleted": False, "archived": True}
            else:
                session.delete(flavor)
                result = {"deleted": True, "archived": False}
            emit(
                session,
                self.fleet.ids,
                self.fleet.now(),
                "flavor.archived" if result["archived"] else "flavor.deleted",
                tenant_id=pool.owner_tenant_id,
                subject_id=flavor.id,
                data={"name": name},
            )
            return result

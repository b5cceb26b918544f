"""Instances: create (admit + place), list, show, stop, start, delete, resize, and the host's InstanceSpec."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from bcfleet.api.auth import (
    Actor,
    Credential,
    owned_resource,
    pool_resource,
    require_host_report,
    resolve,
    sees_guests,
)
from bcfleet.api.base import Area
from bcfleet.api.dependents import serving
from bcfleet.api.documents import (
    GuestStateJson,
    HostSpecsJson,
    InstanceBatchJson,
    InstanceJson,
    InstancePageJson,
)
from bcfleet.api.events import emit
from bcfleet.api.guests import guest_state_json, host_guest
from bcfleet.api.host_view import host_view, pool_host_view
from bcfleet.api.instance_list import (
    FEW_MATCHES,
    FIELDS,
    TIME_FIELDS,
    check_condition,
    count_instances,
    instance_body,
    list_instances,
    read_documents,
    searched,
)
from bcfleet.api.lookup import find_flavor, find_for_placement, find_host, find_pool
from bcfleet.clock import format_time
from bcfleet.domain.bounds import check_limit, check_optional_text
from bcfleet.domain.cursors import check_cursor
from bcfleet.domain.dependents import named
from bcfleet.domain.guest_view import guest_spec
from bcfleet.domain.host_ids import HostView
from bcfleet.domain.idempotency import check_idempotency_key, check_replay, input_digest
from bcfleet.domain.instance_query import check_sort, search_words
from bcfleet.domain.instance_spec import InstanceSpecJson, instance_spec, render_libvirt_domain
from bcfleet.domain.numa import HostPlacement
from bcfleet.domain.shapes import Shape, shape_delta
from bcfleet.domain.states import AGENT_UP, INSTANCE_ON_HOST, AgentReport, InstanceState, PoolKind
from bcfleet.errors import ConflictError, InvalidInputError, NotFoundError, UnsupportedError
from bcfleet.placement.candidate_window import WindowSearch
from bcfleet.placement.candidates import SearchAhead
from bcfleet.placement.catalog_cache import CatalogCache
from bcfleet.placement.instance_placer import (
    ShapeTexts,
    place_instance,
    release_instance,
    shape_texts,
)
from bcfleet.placement.resize import resize_hosted
from bcfleet.store.faults import may_run_again_carefully
from bcfleet.store.models import Booking, Flavor, GpuAtom, Host, Instance, Pool
from bcfleet.store.new_rows import fresh_values
from bcfleet.store.tables import INSTANCES

INSTANCE_NAME_MAX = 63


def flavor_shape(flavor: Flavor) -> dict[str, Any]:
    """The shape an instance keeps: a copy of its flavor's at admission (document 000)."""
    shape: dict[str, Any] = {
        "vcpu": flavor.vcpu,
        "memoryGiB": flavor.memory_gib,
        "diskGiB": flavor.disk_gib,
        "gpus": flavor.gpus,
    }
    if flavor.offer_id:
        shape["offerId"] = flavor.offer_id
    if flavor.placement:
        shape["placement"] = dict(flavor.placement)
    return shape


def default_name(flavor_name: str, at: datetime) -> str:
    """An instance's name when its create gives none: its flavor's and the time, `b1.small-101502`
    (the hour, minute and second as strftime's %H%M%S writes them, without its cost)."""
    return f"{flavor_name}-{at.hour:02}{at.minute:02}{at.second:02}"


def parsed_shape(flavor: Flavor) -> tuple[dict[str, Any], Shape]:
    """A flavor's shape (flavor_shape) and the same parsed (Shape.from_json): what a placement
    of the flavor starts from. Never change the dict: the catalog cache keeps it (derived)."""
    shape = flavor_shape(flavor)
    return shape, Shape.from_json(shape)


def kept_shape(catalog: CatalogCache | None, flavor: Flavor) -> tuple[dict[str, Any], Shape]:
    """parsed_shape(flavor), made once for a flavor the catalog cache handed out (None: no
    cache, made every time)."""
    return parsed_shape(flavor) if catalog is None else catalog.derived(flavor, parsed_shape)


def kept_texts(catalog: CatalogCache | None, flavor: Flavor) -> ShapeTexts | None:
    """The flavor's shape and claims as stored texts, made once for a flavor the catalog cache
    handed out; None without the cache (place_instance writes them itself)."""
    return None if catalog is None else catalog.derived(flavor, _shape_texts)


def _shape_texts(flavor: Flavor) -> ShapeTexts:
    return shape_texts(*parsed_shape(flavor))


def instance_json(
    session: Session,
    actor: Actor,
    instance: Instance,
    flavor_name: str | None = None,
    view: HostView | None = None,
) -> InstanceJson:
    """One instance's JSON, its node as the actor sees it (api.host_view, unless `view` is given)."""
    fresh = fresh_values(instance)  # a row just made: its dict holds every column
    if fresh is not None:
        # Its documents are the values the code made, never a stored text: none is unreadable.
        values = {name: fresh[name] for name in FIELDS}
        values["unreadable"] = ()
    else:
        values = {name: getattr(instance, name) for name in FIELDS}
        read_documents(values)
    for name in TIME_FIELDS:
        values[name] = format_time(values[name]) if values[name] is not None else None
    if view is None:
        view = host_view(session, actor, [instance.node_id])
    return instance_body(values, flavor_name, view)


def _find(session: Session, actor: Actor, instance_id: str, *, lock: bool = False) -> Instance:
    """An instance of the actor's tenant (root's admin: any); NOT_FOUND otherwise."""
    instance = session.get(Instance, instance_id, with_for_update=lock or None)
    if instance is None or not (actor.is_root_admin or instance.tenant_id == actor.tenant_id):
        raise NotFoundError(f"instance {instance_id!r} not found", {"instance": instance_id})
    return instance


def _flavor_names(session: Session, ids: list[str]) -> dict[str, str]:
    if not ids:
        return {}
    return dict(
        session.execute(select(Flavor.id, Flavor.name).where(col(Flavor.id).in_(ids))).all()
    )


class InstancesAPI(Area):
    def create(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        pool_id: str,
        flavor: str,
        name: str | None = None,
        idempotency_key: str | None = None,
    ) -> InstanceJson:
        """Admit and place in one transaction; pending with a counted Unschedulable reason when nothing fits.

        With an idempotency key, a create sent again with the same input answers the instance
        the first one made (whatever its state now) and makes nothing; other input is CONFLICT.
        """
        check_optional_text("name", name, INSTANCE_NAME_MAX)
        check_idempotency_key(idempotency_key)
        try:
            return self._create(credential, tenant_id, pool_id, flavor, name, idempotency_key)
        except IntegrityError:
            if idempotency_key is None:
                raise
            # Another create with the same key committed first: answer as a replay would.
            return self._create(credential, tenant_id, pool_id, flavor, name, idempotency_key)

    def _create(
        self,
        credential: Credential | None,
        tenant_id: str,
        pool_id: str,
        flavor: str,
        name: str | None,
        key: str | None,
    ) -> InstanceJson:
        now = self.fleet.now()  # the call's time: the token's check, the name's and the event's
        with self.fleet.write_on_connection() as session:
            credential_actor = resolve(session, credential, now)
            # The search's first page, as the last create with these references read it, goes
            # behind the lookup (PostgreSQL: one round trip fewer when it is the page it reads).
            ahead = SearchAhead(self.fleet.placement, (pool_id, flavor))
            # The catalog cache only in a transaction of the call's own (Fleet.write_on_connection):
            # an enclosing one may have changed the catalog, uncommitted.
            catalog = self.fleet.placement.catalog if self.fleet.session is None else None
            # The kept candidate window likewise, on SQLite (placement/candidate_window.py).
            window = WindowSearch.on(session, self.fleet.placement) if catalog is not None else None
            actor, pool, row = find_for_placement(
                session,
                catalog,
                credential_actor,
                tenant_id,
                pool_id,
                flavor,
                after_sending=lambda: ahead.send(session),
                window=window,
            )
            flavor_name = row.name
            actor.require(
                "compute:instances:create",
                pool_resource(pool),
                {"gpus": row.gpus, "flavor": flavor_name, "spot": False},
            )
            digest = None  # what a replay is compared by: only a create with a key keeps one
            if key is not None:
                digest = input_digest({"pool": pool.id, "flavor": row.id, "name": name})
                made = session.exec(
                    select(Instance).where(
                        Instance.tenant_id == actor.tenant_id, Instance.idempotency_key == key
                    )
                ).first()
                if made is not None:
                    check_replay(key, digest, made.input_hash, "instance", made.id)
                    return instance_json(session, actor, made, flavor_name)
            shape, parsed = kept_shape(catalog, row)
            texts = kept_texts(catalog, row)
            instance = place_instance(
                session,
                self.fleet,
                tenant_id=actor.tenant_id,
                pool=pool,
                shape=shape,
                parsed=parsed,
                texts=texts,
                name=name or default_name(flavor_name, now),
                flavor_id=row.id,
                idempotency_key=key,
                input_hash=digest,
                may_run_again=may_run_again_carefully(),
                join_session=False,  # read below for its answer only
                ahead=ahead,
                window=window,
            )
            node_id = instance.node_id  # read once: an ORM attribute is a Python call
            kind = "instance.placed" if node_id else "instance.unschedulable"
            if pool.kind == PoolKind.PROVIDER:
                kind = "instance.provisioning"
            emit(
                session,
                self.fleet.ids,
                now,
                kind,
                tenant_id=instance.tenant_id,
                subject_id=instance.id,
                data={"state": str(instance.state)},
            )
            view = pool_host_view(actor, pool, [node_id])  # placed in `pool`, if at all
            return instance_json(session, actor, instance, flavor_name, view)

    def create_batch(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        pool_id: str,
        flavor: str,
        count: int,
        name: str | None = None,
        idempotency_key: str | None = None,
        all_or_nothing: bool = False,
    ) -> InstanceBatchJson:
        """Admit `count` instances of one flavor and place them in one transaction: as many as
        fit (the rest refused and counted, not made), or with all_or_nothing all of them or
        none (CAPACITY_UNAVAILABLE). Names, keys and the answer: api/instance_batches.py."""
        from bcfleet.api.instance_batches import create_batch

        return create_batch(
            self,
            credential,
            tenant_id=tenant_id,
            pool_id=pool_id,
            flavor=flavor,
            count=count,
            name=name,
            idempotency_key=idempotency_key,
            all_or_nothing=all_or_nothing,
        )

    def list(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        pool: str | None = None,
        include_deleted: bool = False,
        state: str | None = None,
        condition: str | None = None,
        limit: int | None = None,
        q: str | None = None,
        owner: str | None = None,
        host: str | None = None,
        sort: str | None = None,
        descending: bool = False,
        after: int | None = None,
    ) -> InstancePageJson:
        """The caller's instances (root's admin: every tenant's), oldest first; deleted ones only
        with include_deleted or state="deleted". `condition` keeps those with a condition of
        that type set (status True), such as PlacementDegraded; `q` those with each of its words
        in their name or id; `owner`, `pool` and `host` (an id or a name) those of that tenant,
        pool and host. `sort` orders by one of domain.instance_query.SORT_KEYS (`descending`:
        the other way round). With `limit` (1..PAGE_MAX): at most that many, by default pending
        ones first and then the newest, after the first `after` of that order; the answer then
        says how many there are in all (`total`) and the `after` of the next page (`cursor`,
        null on the last one)."""
        check_condition(condition)
        check_sort(sort)
        words = search_words(q)
        check_optional_text("owner", owner)
        if limit is not None:
            limit = check_limit(limit)
        start = check_cursor(after) or 0
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require(
                "compute:instances:read", owned_resource(actor.tenant_id, "instances", "*")
            )
            c = INSTANCES.c
            where = searched(words, session.connection().dialect.name)
            if not (actor.is_root_admin and tenant_id is None):
                where.append(c.tenant_id == actor.tenant_id)
            if owner is not None:
                where.append(c.tenant_id == owner)
            if pool is not None:
                where.append(c.pool_id == find_pool(session, actor, pool).id)
            if host is not None:
                where.append(c.node_id == find_host(session, actor, host)[0].id)
            if state is not None:
                where.append(c.state == state)
            elif not include_deleted:
                where.append(c.state != InstanceState.DELETED)
            total = None
            if limit is not None and condition is None:
                total = count_instances(session, where)
            items = list_instances(
                session, actor, where, condition, limit,
                sort=sort, descending=descending, after=start, ordered=after is not None,
                scans=bool(words) and total is not None and total <= FEW_MATCHES,
            )  # fmt: skip
            if limit is None:
                return {"items": items}
            if total is None:  # the condition is read from each row's JSON
                total = len(list_instances(session, actor, where, condition))
            following = start + len(items)
            return {"items": items, "total": total,
                    "cursor": following if following < total else None}  # fmt: skip

    def show(
        self, credential: Credential | None, instance_id: str, *, tenant_id: str | None = None
    ) -> InstanceJson:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            instance = _find(session, actor, instance_id)
            actor.require(
                "compute:instances:read",
                owned_resource(instance.tenant_id, "instance", instance.id),
            )
            names = _flavor_names(session, [instance.flavor_id] if instance.flavor_id else [])
            return instance_json(session, actor, instance, names.get(instance.flavor_id or ""))

    def _set_state(
        self,
        credential: Credential | None,
        instance_id: str,
        tenant_id: str | None,
        action: str,
        target: InstanceState,
        allowed_from: tuple[InstanceState, ...],
    ) -> InstanceJson:
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            instance = _find(session, actor, instance_id, lock=True)
            actor.require(
                f"compute:instances:{action}",
                owned_resource(instance.tenant_id, "instance", instance.id),
            )
            if instance.state == target:
                return instance_json(session, actor, instance)
            if instance.state not in allowed_from:
                raise ConflictError(
                    f"cannot {action} an instance that is {instance.state}",
                    {"state": instance.state, "allowedFrom": list(allowed_from)},
                )
            instance.state = target
            instance.updated_at = self.fleet.now()
            session.add(instance)
            emit(
                session,
                self.fleet.ids,
                self.fleet.now(),
                f"instance.{target}",
                tenant_id=instance.tenant_id,
                subject_id=instance.id,
                data={},
            )
            return instance_json(session, actor, instance)

    def stop(
        self, credential: Credential | None, instance_id: str, *, tenant_id: str | None = None
    ) -> InstanceJson:
        """Stop a running instance; it keeps its allocation (and so its claims) while stopped."""
        return self._set_state(
            credential,
            instance_id,
            tenant_id,
            "stop",
            InstanceState.STOPPED,
            (InstanceState.RUNNING,),
        )

    def start(
        self, credential: Credential | None, instance_id: str, *, tenant_id: str | None = None
    ) -> InstanceJson:
        return self._set_state(
            credential,
            instance_id,
            tenant_id,
            "start",
            InstanceState.RUNNING,
            (InstanceState.STOPPED,),
        )

    def delete(
        self, credential: Credential | None, instance_id: str, *, tenant_id: str | None = None
    ) -> InstanceJson:
        """Release the allocation and GPU atoms and refund quota; start and end times stay for
        metering. CONFLICT, naming them, while it serves a deployed service."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            instance = _find(session, actor, instance_id, lock=True)
            actor.require(
                "compute:instances:delete",
                owned_resource(instance.tenant_id, "instance", instance.id),
            )
            if instance.state == InstanceState.DELETED:
                raise NotFoundError(
                    f"instance {instance_id!r} not found", {"instance": instance_id}
                )
            served = serving(session, instance.id)
            if served:  # deleting it would leave each deployed with no instance
                raise ConflictError(
                    f"instance {instance.name} serves {named(served)}: undeploy it first",
                    {"instance": instance.id, "dependents": [d.to_json() for d in served]},
                )
            release_instance(session, self.fleet, instance, reason="deleted")
            emit(
                session,
                self.fleet.ids,
                self.fleet.now(),
                "instance.deleted",
                tenant_id=instance.tenant_id,
                subject_id=instance.id,
                data={},
            )
            return instance_json(session, actor, instance)

    def resize(
        self,
        credential: Credential | None,
        instance_id: str,
        *,
        flavor: str,
        tenant_id: str | None = None,
    ) -> InstanceJson:
        """Document 000's resize: stopped hosted instances, same GPU count and placement, in place on its node."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            instance = _find(session, actor, instance_id, lock=True)
            actor.require(
                "compute:instances:resize",
                owned_resource(instance.tenant_id, "instance", instance.id),
            )
            pool = session.get(Pool, instance.pool_id)
            assert pool is not None
            if pool.kind == PoolKind.PROVIDER:
                raise UnsupportedError(
                    "resizing a provider instance is not supported; create a new instance",
                    {"instance": instance.id},
                )
            if instance.state != InstanceState.STOPPED:
                raise ConflictError(
                    f"resize needs a stopped instance; this one is {instance.state}",
                    {"state": instance.state, "required": InstanceState.STOPPED},
                )
            target = find_flavor(session, pool, flavor)
            new_shape = flavor_shape(target)
            _check_resizable(instance.shape, new_shape)
            resize_hosted(session, self.fleet, instance, pool, new_shape, target.id)
            emit(
                session,
                self.fleet.ids,
                self.fleet.now(),
                "instance.resized",
                tenant_id=instance.tenant_id,
                subject_id=instance.id,
                data={"flavor": target.name},
            )
            return instance_json(session, actor, instance, target.name)

    def spec(
        self,
        credential: Credential | None,
        instance_id: str,
        *,
        tenant_id: str | None = None,
        format: str = "json",
    ) -> InstanceSpecJson | str:
        """The InstanceSpec the host agent receives, or its libvirt domain XML."""
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            instance = _find(session, actor, instance_id)
            actor.require(
                "compute:instances:read",
                owned_resource(instance.tenant_id, "instance", instance.id),
            )
            if instance.host_placement is None:
                raise ConflictError(
                    "the instance is not placed on a host yet", {"state": instance.state}
                )
            spec = spec_of(session, instance, self.fleet.settings.balloon_floor_percent)
        if format == "libvirt":
            return render_libvirt_domain(spec)
        if format != "json":
            raise InvalidInputError("format is json or libvirt", {"format": format})
        return spec

    def report_state(
        self, credential: Credential | None, *, host: str, instance_id: str, state: str
    ) -> InstanceJson | GuestStateJson:
        """A host agent reports an instance's observed state: ready (never running) marks it ready, spares counting from then.

        The instance is named by the id the agent got from specs_for_host: root's admin
        gets the instance back, anyone else the guest's opaque id and state."""
        if state not in tuple(AgentReport):
            raise InvalidInputError(
                f"state must be one of {', '.join(AgentReport)}", {"state": state}
            )
        with self.fleet.write() as session:
            actor = self.actor(session, credential, None)
            row, pool = find_host(session, actor, host)
            require_host_report(actor, row, pool)
            real_ids = sees_guests(actor)
            instance = host_guest(session, row, instance_id, real_ids=real_ids)
            if instance is None:
                raise NotFoundError(
                    f"instance {instance_id!r} is not on host {row.name!r}",
                    {"instance": instance_id},
                )
            if report_state_of(session, self.fleet, instance, state):
                emit(session, self.fleet.ids, self.fleet.now(), "instance.ready",
                     tenant_id=instance.tenant_id, subject_id=instance.id,
                     data={"host": row.name, "nodeId": row.id})  # fmt: skip
            if not real_ids:
                return guest_state_json(row, instance)
            return instance_json(session, actor, instance)

    def specs_for_host(self, credential: Credential | None, host: str) -> HostSpecsJson:
        """Every live instance's spec on one host: what its agent pulls (domain.guest_view:
        without names and under opaque ids for anyone but root's admin)."""
        with self.fleet.read() as session:
            actor = self.actor(session, credential, None)
            row, pool = find_host(session, actor, host)
            require_host_report(actor, row, pool)
            instances = session.scalars(
                select(Instance).where(
                    Instance.node_id == row.id, col(Instance.state).in_(INSTANCE_ON_HOST)
                )
            ).all()
            floor = self.fleet.settings.balloon_floor_percent
            specs = [spec_of(session, i, floor) for i in instances]
            if not sees_guests(actor):
                specs = [guest_spec(row.id, spec) for spec in specs]
            return {"host": row.name, "items": specs}


def report_state_of(session: Session, fleet: Any, instance: Instance, state: str) -> bool:
    """Record what a host agent observed; True when it changed something (ready_at set once)."""
    if state in AGENT_UP and instance.ready_at is None and instance.state == InstanceState.RUNNING:
        instance.ready_at = fleet.now()
        instance.updated_at = fleet.now()
        session.add(instance)
        return True
    return False


def spec_of(session: Session, instance: Instance, balloon_floor_percent: int) -> InstanceSpecJson:
    pci = (
        session.execute(
            select(GpuAtom.pci_address)
            .join(Booking, col(Booking.atom_id) == col(GpuAtom.id))
            .where(Booking.consumer_id == instance.id, col(Booking.released_at).is_(None))
            .order_by(col(GpuAtom.index))
        )
        .scalars()
        .all()
    )
    return instance_spec(
        instance_id=instance.id,
        name=instance.name,
        state=str(instance.state),
        shape=Shape.from_json(instance.shape),
        placement=HostPlacement.from_json(instance.host_placement or {}),
        gpu_pci_addresses=tuple(pci),
        balloon_floor_percent=balloon_floor_percent,
    )


def _check_resizable(old: dict[str, Any], new: dict[str, Any]) -> None:
    """UNSUPPORTED for a different GPU count or a different placement (document 000)."""
    delta = shape_delta(Shape.from_json(old), Shape.from_json(new))
    if delta.changes_gpus:
        raise UnsupportedError(
            "resize cannot change the GPU count; create a new instance instead",
            {"gpusBefore": old.get("gpus", 0), "gpusAfter": new.get("gpus", 0)},
        )
    if (old.get("placement") or None) != (new.get("placement") or None):
        raise UnsupportedError(
            "resize cannot change the placement; create a new instance instead",
            {"placementBefore": old.get("placement"), "placementAfter": new.get("placement")},
        )


def host_name(session: Session, node_id: str | None) -> str | None:
    if node_id is None:
        return None
    host = session.get(Host, node_id)
    return host.name if host else None

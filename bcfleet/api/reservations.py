"""GPU reservations (document 003): create (admit, place, maybe preempt), get, list, cancel.

A reservation asks for `gpus` GPUs on each of `nodes` nodes of a vps-host pool
for `duration` from `start` (default now), regular or spot, binding 'pool' (any
free GPUs) or 'node' (whole nodes; never spot). Admission charges the tenant's
gpu quota (gpus × nodes, spot alike); placement and preemption live in
bcfleet/placement. The same idempotency key with the same input returns the same
reservation; with other input it is CONFLICT.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session, col, select

from bcfleet.api.auth import (
    Actor,
    Credential,
    owned_resource,
    pool_resource,
    require_host_report,
    sees_guests,
)
from bcfleet.api.base import Area
from bcfleet.api.documents import HostReservationsJson, ReservationJson, ReservationPageJson
from bcfleet.api.host_view import host_view
from bcfleet.api.lookup import find_host, find_pool
from bcfleet.clock import format_time, parse_time
from bcfleet.domain.bounds import check_whole
from bcfleet.domain.durations import format_duration, parse_duration
from bcfleet.domain.guest_view import HostBookingJson, guest_booking
from bcfleet.domain.host_ids import HostView
from bcfleet.domain.idempotency import check_idempotency_key, check_replay, input_digest
from bcfleet.domain.states import PoolKind, ReservationState
from bcfleet.errors import InvalidInputError, NotFoundError
from bcfleet.placement.reservation_placer import place
from bcfleet.placement.reservations import admit, during_json, record_event, release
from bcfleet.store.models import Booking, GpuAtom, Pool, Reservation
from bcfleet.store.models.reservations import GpuNodeVersion

BINDINGS = ("pool", "node")
MAX_GPUS = 1024
MAX_NODES = 1024
MAX_BATCH = 100


@dataclass(frozen=True)
class Ask:
    """A validated reservation or preview request."""

    gpus: int
    nodes: int
    binding: str
    spot: bool
    duration: timedelta
    start: datetime | None

    def attributes(self) -> dict[str, Any]:
        """What the authorization request carries, so a policy can condition on `spot: true`."""
        return {"spot": self.spot, "gpus": self.gpus, "nodes": self.nodes, "binding": self.binding}

    def digest(self, pool_id: str) -> str:
        body = {"pool": pool_id, "gpus": self.gpus, "nodes": self.nodes, "binding": self.binding,
                "spot": self.spot, "seconds": int(self.duration.total_seconds()),
                "start": format_time(self.start)}  # fmt: skip
        return input_digest(body)


BATCH_FIELDS = frozenset(
    {"gpus", "duration", "start", "spot", "binding", "nodes", "idempotency_key"}
)


def _batch_item(position: int, fields: Mapping[str, Any]) -> tuple[Ask, str | None]:
    unknown = sorted(set(fields) - BATCH_FIELDS)
    if unknown:
        raise InvalidInputError(f"requests[{position}]: unknown fields {', '.join(unknown)}",
                                {"field": f"requests[{position}]"})  # fmt: skip
    missing = sorted({"gpus", "duration"} - set(fields))
    if missing:
        raise InvalidInputError(f"requests[{position}]: {', '.join(missing)} required",
                                {"field": f"requests[{position}]"})  # fmt: skip
    key = fields.get("idempotency_key")
    check_idempotency_key(key)
    values = {k: v for k, v in fields.items() if k != "idempotency_key"}
    return parse_ask(**values), key


def _whole(value: Any, field: str, most: int) -> int:
    return check_whole(field, value, 1, most)


def parse_ask(
    *,
    gpus: Any,
    duration: Any,
    nodes: Any = 1,
    binding: Any = "pool",
    spot: Any = False,
    start: Any = None,
) -> Ask:
    """INVALID_INPUT for bad fields, and for a spot node lease (document 003)."""
    count = _whole(gpus, "gpus", MAX_GPUS)
    node_count = _whole(nodes, "nodes", MAX_NODES)
    if binding not in BINDINGS:
        raise InvalidInputError("binding must be 'pool' or 'node'", {"field": "binding"})
    if not isinstance(spot, bool):
        raise InvalidInputError("spot must be true or false", {"field": "spot"})
    if binding == "node" and spot:
        raise InvalidInputError(
            "binding: 'node' leases cannot be spot", {"field": "spot", "binding": "node"}
        )
    length = duration if isinstance(duration, timedelta) else parse_duration(duration)
    if length <= timedelta(0):
        raise InvalidInputError("duration must be longer than zero", {"field": "duration"})
    when = start if isinstance(start, datetime) or start is None else parse_time(str(start))
    return Ask(count, node_count, str(binding), spot, length, when)


def reservation_json(rsv: Reservation, view: HostView) -> ReservationJson:
    """The reservation as document 003 shows it: devices, during {start, end}, conditions;
    its nodes as the reader's view shows them (opaque ids for a guest tenant)."""
    window = during_json(rsv)
    body: ReservationJson = {
        "id": rsv.id,
        "tenantId": rsv.tenant_id,
        "poolId": rsv.pool_id,
        "devices": [{"class": "gpu", "count": rsv.gpus}],
        "nodes": rsv.nodes,
        "binding": rsv.binding,
        "spot": rsv.spot,
        "state": str(rsv.state),
        "duration": format_duration(timedelta(seconds=rsv.duration_seconds)),
        "requestedStart": format_time(rsv.requested_start),
        "during": None if window is None else {"start": window["start"], "end": window["end"]},
        "nodeIds": view.nodes(rsv.node_ids),
        "conditions": list(rsv.conditions),
        "createdAt": format_time(rsv.created_at),
        "updatedAt": format_time(rsv.updated_at),
    }
    if rsv.idempotency_key is not None:
        body["idempotencyKey"] = rsv.idempotency_key
    if rsv.deadline is not None:
        body["deadline"] = format_time(rsv.deadline)
    if rsv.activated_at is not None:
        body["activatedAt"] = format_time(rsv.activated_at)
    if rsv.released_at is not None:
        body["releasedAt"] = format_time(rsv.released_at)
    if rsv.release_reason is not None:
        body["releaseReason"] = rsv.release_reason
    return body


def _find(
    session: Session, actor: Actor, reservation_id: str, *, lock: bool = False
) -> Reservation:
    """A reservation of the actor's tenant (root's admin: any); NOT_FOUND otherwise."""
    rsv = session.get(Reservation, reservation_id, with_for_update=lock or None)
    if rsv is None or not (actor.is_root_admin or rsv.tenant_id == actor.tenant_id):
        raise NotFoundError(
            f"reservation {reservation_id!r} not found", {"reservation": reservation_id}
        )
    return rsv


def _render(session: Session, actor: Actor, rsv: Reservation) -> ReservationJson:
    return reservation_json(rsv, host_view(session, actor, rsv.node_ids))


def vps_pool(session: Session, actor: Actor, ref: str) -> Pool:
    pool = find_pool(session, actor, ref)
    if pool.kind != PoolKind.VPS_HOST:
        raise InvalidInputError(
            "GPU reservations need a vps-host pool", {"pool": pool.id, "kind": pool.kind}
        )
    return pool


class ReservationsAPI(Area):
    def create(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        pool_id: str,
        gpus: int,
        duration: str | timedelta,
        start: str | datetime | None = None,
        spot: bool = False,
        binding: str = "pool",
        nodes: int = 1,
        idempotency_key: str | None = None,
    ) -> ReservationJson:
        """Admit, then place (or preempt, or leave pending with the counted reason), in one transaction."""
        ask = parse_ask(gpus=gpus, duration=duration, nodes=nodes, binding=binding, spot=spot,
                        start=start)  # fmt: skip
        check_idempotency_key(idempotency_key)
        try:
            return self._create(credential, tenant_id, pool_id, ask, idempotency_key)
        except IntegrityError:
            if idempotency_key is None:
                raise
            # Another request with the same key committed first: answer as a replay would.
            return self._create(credential, tenant_id, pool_id, ask, idempotency_key)

    def _create(
        self,
        credential: Credential | None,
        tenant_id: str,
        pool_ref: str,
        ask: Ask,
        key: str | None,
    ) -> ReservationJson:
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            pool = vps_pool(session, actor, pool_ref)
            return self._admit(session, actor, pool, ask, key)

    def create_batch(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        pool_id: str,
        requests: Sequence[Mapping[str, Any]],
    ) -> ReservationPageJson:
        """A pool-lease batch: reservations admitted in order in one transaction, all or none.

        Each request takes create's fields (gpus, duration, start, spot, binding, nodes,
        idempotency_key); a regular one that would go pending preempts as at admission.
        """
        if not 0 < len(requests) <= MAX_BATCH:
            raise InvalidInputError(
                f"a batch holds 1 to {MAX_BATCH} requests", {"field": "requests"}
            )
        asks = [_batch_item(i, fields) for i, fields in enumerate(requests)]
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            pool = vps_pool(session, actor, pool_id)
            return {"items": [self._admit(session, actor, pool, ask, key) for ask, key in asks]}

    def _admit(
        self, session: Session, actor: Actor, pool: Pool, ask: Ask, key: str | None
    ) -> ReservationJson:
        """Authorize, replay or admit and place one reservation in the caller's transaction."""
        actor.require("compute:reservations:create", pool_resource(pool), ask.attributes())
        digest = ask.digest(pool.id)
        if key is not None:
            replay = self._replay(session, actor, key, digest)
            if replay is not None:
                return replay
        now = self.fleet.now()
        if ask.start is not None and ask.start < now:
            raise InvalidInputError("start is in the past", {"field": "start",
                                    "start": format_time(ask.start), "now": format_time(now)})  # fmt: skip
        rsv = Reservation(
            id=self.fleet.new_id("rsv"), tenant_id=actor.tenant_id, pool_id=pool.id, gpus=ask.gpus,
            nodes=ask.nodes, binding=ask.binding, spot=ask.spot, requested_start=ask.start or now,
            duration_seconds=int(ask.duration.total_seconds()), idempotency_key=key,
            input_hash=digest, created_at=now, updated_at=now,
        )  # fmt: skip
        session.add(rsv)
        session.flush()
        admit(session, rsv)
        if not place(session, self.fleet, rsv):
            record_event(session, self.fleet.ids, now, "reservation.pending", rsv,
                         {"state": ReservationState.PENDING, "conditions": list(rsv.conditions)})  # fmt: skip
        return _render(session, actor, rsv)

    def _replay(
        self, session: Session, actor: Actor, key: str, digest: str
    ) -> ReservationJson | None:
        existing = session.exec(
            select(Reservation).where(
                Reservation.tenant_id == actor.tenant_id, Reservation.idempotency_key == key
            )
        ).first()
        if existing is None:
            return None
        check_replay(key, digest, existing.input_hash, "reservation", existing.id)
        return _render(session, actor, existing)

    def get(
        self, credential: Credential | None, reservation_id: str, *, tenant_id: str | None = None
    ) -> ReservationJson:
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            rsv = _find(session, actor, reservation_id)
            actor.require("compute:reservations:read",
                          owned_resource(rsv.tenant_id, "reservation", rsv.id))  # fmt: skip
            return _render(session, actor, rsv)

    def list(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        pool: str | None = None,
        state: str | None = None,
        include_released: bool = False,
    ) -> ReservationPageJson:
        """The tenant's reservations, oldest first (released ones only when asked for)."""
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require(
                "compute:reservations:read", owned_resource(actor.tenant_id, "reservations", "*")
            )
            query = select(Reservation).order_by(col(Reservation.created_at), col(Reservation.id))
            if not (actor.is_root_admin and tenant_id is None):
                query = query.where(Reservation.tenant_id == actor.tenant_id)
            if pool is not None:
                query = query.where(Reservation.pool_id == find_pool(session, actor, pool).id)
            if state is not None:
                query = query.where(Reservation.state == state)
            elif not include_released:
                query = query.where(Reservation.state != ReservationState.RELEASED)
            rows = session.exec(query).all()
            view = host_view(session, actor, (n for r in rows for n in r.node_ids))
            return {"items": [reservation_json(r, view) for r in rows]}

    def cancel(
        self, credential: Credential | None, reservation_id: str, *, tenant_id: str | None = None
    ) -> ReservationJson:
        """Release now: bookings freed, quota refunded, reservation.released with reason cancelled."""
        with self.fleet.write() as session:
            actor = self.actor(session, credential, tenant_id)
            rsv = _find(session, actor, reservation_id, lock=True)
            actor.require("compute:reservations:cancel",
                          owned_resource(rsv.tenant_id, "reservation", rsv.id))  # fmt: skip
            if rsv.state != ReservationState.RELEASED:
                release(session, self.fleet, rsv, "cancelled", self.fleet.now())
            return _render(session, actor, rsv)

    def for_host(self, credential: Credential | None, host: str) -> HostReservationsJson:
        """A node's desired GPU state: the reservations booked on it, their GPUs and windows.

        Derived from the bookings, so a cut-back victim shows its deadline as the end the
        moment it is preempted; `generation` changes whenever the node's bookings change.
        Anyone but root's admin gets each booking under an opaque id, without the
        reservation's id or tenant (domain.guest_view).
        """
        with self.fleet.read() as session:
            actor = self.actor(session, credential, None)
            row, pool = find_host(session, actor, host)
            require_host_report(actor, row, pool)
            version = session.get(GpuNodeVersion, row.id)
            items: dict[str, HostBookingJson] = {}
            for rsv, pci, start, end in session.execute(
                select(Reservation, GpuAtom.pci_address, Booking.starts_at, Booking.ends_at)
                .join(Booking, col(Booking.consumer_id) == col(Reservation.id))
                .join(GpuAtom, col(GpuAtom.id) == col(Booking.atom_id))
                .where(col(Booking.node_id) == row.id, col(Booking.released_at).is_(None))
                .order_by(col(Booking.starts_at), col(GpuAtom.index))
            ).all():
                item = items.setdefault(rsv.id, {"reservationId": rsv.id, "tenantId": rsv.tenant_id,
                                                 "state": str(rsv.state), "spot": rsv.spot, "gpus": [],
                                                 "start": format_time(start), "end": format_time(end)})  # fmt: skip
                item["gpus"].append(pci)
            booked = list(items.values())
            if not sees_guests(actor):
                booked = [guest_booking(row.id, item) for item in booked]
            return {"host": row.name, "generation": version.version if version else 0,
                    "items": booked}  # fmt: skip

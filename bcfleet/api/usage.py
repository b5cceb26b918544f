"""Usage: list and export metered windows, list and replay dead letters, and set up the standard meters.

Tenants read only their own windows (compute:usage:read); root's admin reads
everyone's. Replaying dead letters and creating meters are billing:meters:manage
on the root tenant. Quantities are decimal strings with 6 places, exact.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql import Select
from sqlmodel import Session, col

from bcfleet.api.auth import Actor, Credential, tenant_resource
from bcfleet.api.base import Area
from bcfleet.api.documents import (
    DeadLetterPageJson,
    ReplayedJson,
    UsagePageJson,
    UsageWindowJson,
)
from bcfleet.clock import format_time
from bcfleet.domain.bounds import check_limit
from bcfleet.domain.cursors import check_cursor
from bcfleet.domain.pages import USAGE, USAGE_DEAD_LETTERS
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.domain.usage import METER_CREDITS, METER_MEMORY, METER_VCPU, WINDOW, gpu_meter
from bcfleet.errors import InvalidInputError
from bcfleet.store.models import BillingMeter, Pool
from bcfleet.store.models.usage import DeadLetter, UsageWindow

EXPORT_PAGE = 2_000
KEY = ["subject_id", "meter", "window_start"]
COPIED = ["tenant_id", "subject_id", "subject_kind", "pool_id", "meter", "window_start", "quantity"]

STANDARD_METERS = {
    METER_VCPU: ("hours", "vCPU-hours of hosted instances (document 000)"),
    METER_MEMORY: ("hours", "GiB-hours of hosted instances' memory (document 000)"),
    METER_CREDITS: (
        "credits",
        "credits of instances of a size, 1 per instance-hour (document 004)",
    ),
}


def _quantity(value: Any) -> str:
    return f"{value:.6f}"


def window_json(row: UsageWindow | DeadLetter) -> UsageWindowJson:
    """A stored window (its id is the cursor); a dead letter says why and when it was replayed."""
    assert row.id is not None, "a window is shown once stored"
    body: UsageWindowJson = {
        "id": row.id,
        "tenantId": row.tenant_id,
        "subjectId": row.subject_id,
        "subjectKind": row.subject_kind,
        "poolId": row.pool_id,
        "meter": row.meter,
        "windowStart": format_time(row.window_start),
        "windowEnd": format_time(row.window_start + WINDOW),
        "quantity": _quantity(row.quantity),
        "createdAt": format_time(row.created_at),
    }
    if isinstance(row, DeadLetter):
        body["reason"] = row.reason
        body["replayedAt"] = format_time(row.replayed_at)
    return body


def _filtered(
    query: Select[Any],
    model: type[UsageWindow] | type[DeadLetter],
    actor: Actor,
    tenant_id: str | None,
    *,
    meter: str | None,
    subject: str | None,
    since: datetime | None,
    until: datetime | None,
) -> Select[Any]:
    if not (actor.is_root_admin and tenant_id is None):
        query = query.where(col(model.tenant_id) == actor.tenant_id)
    if meter:
        query = query.where(col(model.meter) == meter)
    if subject:
        query = query.where(col(model.subject_id) == subject)
    if since is not None:
        query = query.where(col(model.window_start) >= since)
    if until is not None:
        query = query.where(col(model.window_start) < until)
    return query


def _check_range(since: datetime | None, until: datetime | None) -> None:
    if since is not None and until is not None and until < since:
        raise InvalidInputError(
            "until is before since", {"since": format_time(since), "until": format_time(until)}
        )


def _insert(session: Session, model: Any) -> postgresql.Insert | sqlite.Insert:
    if session.get_bind().dialect.name == "postgresql":
        return postgresql.insert(model)
    return sqlite.insert(model)


class UsageAPI(Area):
    def _reader(
        self, session: Session, credential: Credential | None, tenant_id: str | None
    ) -> Actor:
        actor = self.actor(session, credential, tenant_id)
        actor.require("compute:usage:read", tenant_resource(actor.tenant_id))
        return actor

    def list(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        meter: str | None = None,
        subject: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        after: int | None = None,
        limit: int = USAGE.default,
    ) -> UsagePageJson:
        """One page of windows in id order; `cursor` is the `after` of the next page."""
        _check_range(since, until)
        check_limit(limit, USAGE.maximum)
        check_cursor(after)
        with self.fleet.read() as session:
            actor = self._reader(session, credential, tenant_id)
            query = select(UsageWindow).order_by(col(UsageWindow.id)).limit(limit)
            if after is not None:
                query = query.where(col(UsageWindow.id) > after)
            query = _filtered(
                query,
                UsageWindow,
                actor,
                tenant_id,
                meter=meter,
                subject=subject,
                since=since,
                until=until,
            )
            rows = session.execute(query).scalars().all()
        items = [window_json(r) for r in rows]
        return {"items": items, "cursor": items[-1]["id"] if items else after}

    def export(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        meter: str | None = None,
        subject: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> Iterator[UsageWindowJson]:
        """Every matching window, streamed in id order from one read transaction."""
        _check_range(since, until)
        with self.fleet.read() as session:
            actor = self._reader(session, credential, tenant_id)
            query = _filtered(
                select(UsageWindow).order_by(col(UsageWindow.id)),
                UsageWindow,
                actor,
                tenant_id,
                meter=meter,
                subject=subject,
                since=since,
                until=until,
            )
            result = session.execute(query.execution_options(yield_per=EXPORT_PAGE))
            for row in result.scalars():
                yield window_json(row)

    def dead_letters(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        pending_only: bool = False,
        limit: int = USAGE_DEAD_LETTERS.default,
    ) -> DeadLetterPageJson:
        """Windows of meters missing from the catalogue, oldest first."""
        check_limit(limit, USAGE_DEAD_LETTERS.maximum)
        with self.fleet.read() as session:
            actor = self._reader(session, credential, tenant_id)
            query = select(DeadLetter).order_by(col(DeadLetter.id)).limit(limit)
            query = _filtered(
                query,
                DeadLetter,
                actor,
                tenant_id,
                meter=None,
                subject=None,
                since=None,
                until=None,
            )
            if pending_only:
                query = query.where(col(DeadLetter.replayed_at).is_(None))
            rows = session.execute(query).scalars().all()
        return {"items": [window_json(r) for r in rows]}

    def replay(self, credential: Credential | None) -> ReplayedJson:
        """Bill every dead letter whose meter exists now, once; the rest stay dead-lettered."""
        with self.fleet.write(bump_revision=False) as session:
            actor = self.actor(session, credential, None)
            actor.require("billing:meters:manage", tenant_resource(ROOT_TENANT))
            known = select(col(BillingMeter.name))
            pending = (
                col(DeadLetter.replayed_at).is_(None),
                col(DeadLetter.meter).in_(known),
            )
            copied = [col(getattr(DeadLetter, c)) for c in COPIED]
            rows = select(*copied, col(DeadLetter.created_at)).where(*pending)
            statement = _insert(session, UsageWindow).from_select([*COPIED, "created_at"], rows)
            connection = session.connection()
            billed = connection.execute(
                statement.on_conflict_do_nothing(index_elements=KEY).execution_options(
                    preserve_rowcount=True
                )
            ).rowcount
            replayed = connection.execute(
                update(DeadLetter).where(*pending).values(replayed_at=self.fleet.now())
            ).rowcount
            left = session.execute(
                select(func.count()).where(col(DeadLetter.replayed_at).is_(None))
            ).scalar_one()
        return {"replayed": int(replayed), "billed": int(billed), "pending": int(left)}

    def setup_meters(self, credential: Credential | None) -> dict[str, Any]:
        """`fleet iam setup --meters`: the standard meters and gpu.<model>.hours per pool GPU model.

        Not the spot meters: document 003 has them created on purpose, before
        spot capacity is sold; until then spot windows are dead-lettered.
        """
        with self.fleet.write() as session:
            actor = self.actor(session, credential, None)
            actor.require("billing:meters:manage", tenant_resource(ROOT_TENANT))
            wanted = dict(STANDARD_METERS)
            models = session.execute(
                select(col(Pool.gpu_model)).where(col(Pool.gpu_model).is_not(None)).distinct()
            ).scalars()
            for model in models:
                if model and model.strip():
                    name = gpu_meter(model)
                    wanted[name] = ("hours", f"GPU-hours of {model} GPUs (documents 000, 003)")
            existing = set(session.execute(select(col(BillingMeter.name))).scalars().all())
            created = sorted(set(wanted) - existing)
            for name in created:
                unit, description = wanted[name]
                session.add(
                    BillingMeter(
                        name=name, unit=unit, description=description, created_at=self.fleet.now()
                    )
                )
        return {"created": created, "existing": sorted(set(wanted) & existing)}

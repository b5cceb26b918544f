"""The event log: emit inside the caller's transaction; list and watch one tenant's events by cursor."""

from __future__ import annotations

from collections.abc import Sequence

from sqlmodel import col, select

from bcfleet.api.auth import Credential, owned_resource
from bcfleet.api.base import Area
from bcfleet.api.documents import EventPageJson
from bcfleet.api.host_view import host_view
from bcfleet.domain.bounds import check_limit
from bcfleet.domain.cursors import check_cursor
from bcfleet.domain.host_ids import node_refs
from bcfleet.domain.pages import EVENTS
from bcfleet.store.event_log import emit, event_data, event_json
from bcfleet.store.models import Event

__all__ = ["EventsAPI", "emit"]


class EventsAPI(Area):
    """compute:events:read: a tenant reads only its own copies; root's admin reads all."""

    def list(
        self,
        credential: Credential | None,
        *,
        tenant_id: str | None = None,
        after: int | None = None,
        types: Sequence[str] = (),
        limit: int = EVENTS.default,
    ) -> EventPageJson:
        check_limit(limit, EVENTS.maximum)
        check_cursor(after)
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            actor.require("compute:events:read", owned_resource(actor.tenant_id, "events", "*"))
            query = select(Event).order_by(col(Event.seq)).limit(limit)
            if not (actor.is_root_admin and tenant_id is None):
                query = query.where(Event.tenant_id == actor.tenant_id)
            if after is not None:
                query = query.where(col(Event.seq) > after)
            if types:
                query = query.where(col(Event.type).in_(list(types)))
            rows = session.exec(query).all()
            view = host_view(session, actor, (n for e in rows for n in node_refs(event_data(e))))
        items = [event_json(e, view) for e in rows]
        cursor = items[-1]["seq"] if items else after
        return {"items": items, "cursor": cursor}

"""A host's guests as its agent knows them: resolving the id an agent reports on, answering it.

instances.report_state calls these; the views themselves come from domain.guest_view.
Root's admin knows guests by their instance ids; everyone else by their opaque guest ids.
"""

from __future__ import annotations

from sqlmodel import Session, select

from bcfleet.api.documents import GuestStateJson
from bcfleet.clock import format_time
from bcfleet.domain.guest_view import GUEST_PREFIX, find_guest, opaque_guest_id
from bcfleet.domain.states import InstanceState
from bcfleet.store.models import Host, Instance


def host_guest(session: Session, host: Host, guest_id: str, *, real_ids: bool) -> Instance | None:
    """The live instance on the host that the agent's id names (locked), or None.

    With real_ids an instance id is taken as it is; an opaque guest id is always looked
    up among the host's live guests (a handful of rows: ids only, then one row locked).
    """
    instance_id: str | None = guest_id
    if not real_ids or guest_id.startswith(GUEST_PREFIX):
        ids = session.scalars(
            select(Instance.id).where(
                Instance.node_id == host.id, Instance.state != InstanceState.DELETED
            )
        ).all()
        instance_id = find_guest(host.id, guest_id, ids)
    if instance_id is None:
        return None
    instance = session.get(Instance, instance_id, with_for_update=True)
    if instance is None or instance.node_id != host.id or instance.state == InstanceState.DELETED:
        return None
    return instance


def guest_state_json(host: Host, instance: Instance) -> GuestStateJson:
    """What an agent that is not root's admin hears back about the guest it reported on."""
    return {
        "id": opaque_guest_id(host.id, instance.id),
        "state": str(instance.state),
        "readyAt": format_time(instance.ready_at) if instance.ready_at is not None else None,
    }

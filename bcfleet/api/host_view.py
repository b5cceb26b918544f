"""The HostView of one API caller: which of the node ids a rendering names it sees as they are.

The rule is ``auth.owns_pool``: root's admin sees every host as it is; any other caller
sees the hosts of pools its tenant owns as they are and every other host under its
opaque id (``domain.host_ids``). Instances, reservations, events and capacity previews
ask here with the node ids they are about to render.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlmodel import Session

from bcfleet.api.auth import Actor, owns_pool
from bcfleet.domain.host_ids import HostView
from bcfleet.store.host_view import tenant_host_view
from bcfleet.store.models import Pool


def host_view(session: Session, actor: Actor, node_ids: Iterable[str | None]) -> HostView:
    """The actor's view of these nodes (root's admin: every node as it is)."""
    if actor.is_root_admin:
        return HostView()
    return tenant_host_view(session, actor.tenant_id, node_ids)


def pool_host_view(actor: Actor, pool: Pool, node_ids: Iterable[str | None]) -> HostView:
    """The actor's view of nodes known to be hosts of `pool` (no query: owns_pool decides)."""
    if actor.is_root_admin:
        return HostView()
    shown = frozenset(n for n in node_ids if n) if owns_pool(actor, pool) else frozenset()
    return HostView(actor.tenant_id, shown)

"""A tenant's view of hosts in SQL: which of some node ids are hosts of the tenant's own pools.

The rule is ``auth.owns_pool`` (the pool's owner sees its hosts as they are; root's admin
is handled by ``api.host_view``); everything else becomes the tenant's opaque id
(``domain.host_ids``). The API areas ask through ``api.host_view``; the webhooks job asks
here directly for the webhook's tenant. One query per rendering, over the rendered ids only.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlmodel import Session, col, select

from bcfleet.domain.host_ids import HostView
from bcfleet.store.id_chunks import id_chunks
from bcfleet.store.models import Host, Pool


def tenant_host_view(session: Session, tenant_id: str, node_ids: Iterable[str | None]) -> HostView:
    """A tenant's view of these nodes: its own pools' hosts as they are, the rest opaque."""
    ids = sorted({n for n in node_ids if n})
    shown: set[str] = set()
    for chunk in id_chunks(ids):
        shown.update(
            session.exec(
                select(Host.id)
                .join(Pool, col(Pool.id) == col(Host.pool_id))
                .where(col(Host.id).in_(chunk))
                .where(Pool.owner_tenant_id == tenant_id)
            ).all()
        )
    return HostView(tenant_id, frozenset(shown))

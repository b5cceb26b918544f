"""What a tenant learns of the hosts it runs on: the owner's node ids, or opaque ids of its own.

A guest tenant (any tenant that neither owns a host's pool nor is root's admin) sees a
host as ``hid_<SHA-224 hex>`` of (its tenant id, the node id), as OpenStack Nova shows
``hostId`` (a SHA-224 of project id and host): two of its instances on one host share
the id, another tenant's id for that host differs, and nothing of the owner's ids or
names comes through. The API areas (instances, reservations, events, capacity preview,
webhook deliveries) build one ``HostView`` per call (``bcfleet.api.host_view``) and
render every node id through it. Pure: no I/O.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, overload

from bcfleet.domain.preview_document import PreviewCandidateJson

HOST_ID_PREFIX = "hid_"

NODE_KEY = "nodeId"
"""An event's data key holding one node id."""
NODE_LIST_KEYS = ("nodes", "nodeIds")
"""An event's data keys holding lists of node ids (reservation.placed's ``nodes``)."""
HOST_NAME_KEY = "host"
"""An event's data key holding a host's name: kept only beside a node id the reader sees."""


def guest_host_id(tenant_id: str, node_id: str) -> str:
    """The id a guest tenant knows a host by: stable, its own, not reversible."""
    digest = hashlib.sha224(f"{tenant_id}\0{node_id}".encode()).hexdigest()
    return HOST_ID_PREFIX + digest


def node_refs(data: Mapping[str, Any]) -> set[str]:
    """The node ids an event's data names (what a HostView must be asked about)."""
    refs = {data[NODE_KEY]} if isinstance(data.get(NODE_KEY), str) else set()
    for key in NODE_LIST_KEYS:
        value = data.get(key)
        if isinstance(value, list):
            refs.update(v for v in value if isinstance(v, str))
    return refs


@dataclass(frozen=True)
class HostView:
    """One reader's view of hosts: ``tenant_id`` None sees every node as it is (root's admin);
    otherwise the nodes in ``shown`` (hosts of the reader's own pools) as they are, and every
    other node under the reader's opaque id, without its name."""

    tenant_id: str | None = None
    shown: frozenset[str] = field(default_factory=frozenset)

    def sees(self, node_id: str) -> bool:
        return self.tenant_id is None or node_id in self.shown

    @overload
    def node(self, node_id: str) -> str: ...
    @overload
    def node(self, node_id: None) -> None: ...
    def node(self, node_id: str | None) -> str | None:
        if node_id is None or self.sees(node_id):
            return node_id
        assert self.tenant_id is not None
        return guest_host_id(self.tenant_id, node_id)

    def nodes(self, node_ids: Iterable[str]) -> list[str]:
        return [self.node(n) or n for n in node_ids]

    def candidates(self, items: Iterable[PreviewCandidateJson]) -> list[PreviewCandidateJson]:
        """capacity.preview's candidates: ``{id, name}`` as they are, or ``{id}`` opaque."""
        return [c.copy() if self.sees(c["id"]) else {"id": self.node(c["id"])} for c in items]

    def event_data(self, data: Mapping[str, Any]) -> dict[str, Any]:
        """An event's data with its node ids through this view; a host name stays only beside
        a node id the reader sees as it is."""
        body = dict(data)
        node = body.get(NODE_KEY)
        if isinstance(node, str):
            body[NODE_KEY] = self.node(node)
        for key in NODE_LIST_KEYS:
            value = body.get(key)
            if isinstance(value, list):
                body[key] = [self.node(v) if isinstance(v, str) else v for v in value]
        named = self.tenant_id is None or (isinstance(node, str) and self.sees(node))
        if HOST_NAME_KEY in body and not named:
            del body[HOST_NAME_KEY]
        return body

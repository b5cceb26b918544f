"""capacity.preview (document 003): would a reservation fit now, and if not, would it by preempting spot work?"""

from __future__ import annotations

from datetime import datetime, timedelta

from bcfleet.api.auth import Credential, pool_resource
from bcfleet.api.base import Area
from bcfleet.api.host_view import host_view
from bcfleet.api.reservations import parse_ask, vps_pool
from bcfleet.domain.gpu_plan import GpuRequest
from bcfleet.domain.preview_document import PreviewJson
from bcfleet.placement.reservation_placer import preview


class CapacityAPI(Area):
    def preview(
        self,
        credential: Credential | None,
        *,
        tenant_id: str,
        pool_id: str,
        gpus: int,
        duration: str | timedelta,
        nodes: int = 1,
        spot: bool = False,
        start: str | datetime | None = None,
        binding: str = "pool",
    ) -> PreviewJson:
        """{fits, candidates, reason, preemptible: {reservations, startsAt}}: a count, never ids.

        A request that does not fit and preempting would not help has preemptReason
        instead (a spot request never preempts, nothing to preempt, or preempting every
        spot reservation in its window still would not fit). A spot request's preview
        never has preemptible; startsAt is epoch milliseconds of the
        start after the notice (spotNoticeMs), the same setting admission uses. Candidates
        are {id, name} for the pool's owner and root's admin, {id} opaque for a guest tenant.
        """
        ask = parse_ask(gpus=gpus, duration=duration, nodes=nodes, binding=binding, spot=spot,
                        start=start)  # fmt: skip
        with self.fleet.read() as session:
            actor = self.actor(session, credential, tenant_id)
            pool = vps_pool(session, actor, pool_id)
            actor.require("compute:capacity:preview", pool_resource(pool), ask.attributes())
            begin = max(ask.start or self.fleet.now(), self.fleet.now())
            request = GpuRequest(ask.gpus, begin, begin + ask.duration, nodes=ask.nodes,
                                 binding=ask.binding, spot=ask.spot)  # fmt: skip
            body = preview(session, self.fleet, pool.id, request)
            ids = [c["id"] for c in body["candidates"]]
            body["candidates"] = host_view(session, actor, ids).candidates(body["candidates"])
            return body

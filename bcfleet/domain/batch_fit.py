"""How a batch of one shape spreads over candidate hosts: how many instances each host takes (placement/batch_placer.py asks).

The batch is given out one instance at a time to the host the placement weigher ranks first,
that host's rows charged with the instance before the next is given out, so N instances land
where N single placements, each seeing the one before, would put them: spread fills the
emptiest host first, pack the fullest. Whether one more fits is check_fit's answer, the one
fit rule. A heap keeps it at O(N log H) for N instances over H hosts.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from bcfleet.domain.fit import HostSnapshot, ResourceRow, Weigher, check_fit
from bcfleet.domain.shapes import PlacementPolicy, Shape


def scaled(claims: Mapping[str, int], times: int) -> dict[str, int]:
    """A shape's claims (or quota charge) for `times` instances of it."""
    return {resource: amount * times for resource, amount in claims.items()}


def charged(
    host: HostSnapshot, shape: Shape, claims: Mapping[str, int] | None = None
) -> HostSnapshot:
    """The host as it is once one more instance of the shape holds its claims and GPUs
    (`claims`: the shape's, when the caller has them already)."""
    if claims is None:
        claims = shape.claims()
    rows: dict[str, ResourceRow] = {}
    for resource, row in host.rows.items():
        claim = claims.get(resource, 0)
        if claim:  # as row._replace(allocated=…), without its keyword and map machinery
            row = ResourceRow(
                row.resource, row.allocatable, row.ratio, row.capacity, row.allocated + claim
            )
        rows[resource] = row
    after = object.__new__(HostSnapshot)  # as HostSnapshot.of_candidate: a copy without the
    values = after.__dict__  # frozen constructor's field-by-field setting, made once an instance
    values.update(host.__dict__)
    values["rows"] = rows
    values["gpus_free"] = host.gpus_free - shape.gpus
    return after


def assign(
    hosts: Sequence[HostSnapshot],
    shape: Shape,
    count: int,
    by: Weigher,
    policy: PlacementPolicy | None = None,
) -> list[tuple[HostSnapshot, int]]:
    """Up to `count` instances over `hosts`: each host used and how many it takes, in the order
    the hosts were given; fewer than `count` in all when the hosts cannot take more.

    Whether a host takes one more is asked when it comes first (check_fit), not when it is
    weighed: a host that does not fit is then dropped, which leaves the others' order as it
    was, and a host charged and weighed again but never first again is never checked.
    """
    claims = shape.claims()
    heap = [(-by(host), host.node_id, index, host) for index, host in enumerate(hosts)]
    heapq.heapify(heap)
    taken: dict[int, int] = {}
    given = 0
    while heap and given < count:
        _, node_id, index, host = heapq.heappop(heap)
        if check_fit(host, shape, policy) is not None:
            continue
        taken[index] = taken.get(index, 0) + 1
        given += 1
        after = charged(host, shape, claims)
        heapq.heappush(heap, (-by(after), node_id, index, after))
    return [(hosts[index], taken[index]) for index in sorted(taken)]

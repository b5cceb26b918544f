"""Which webhook deliveries one round of the webhooks job sends, and in which lanes; pure.

The webhooks job (bcfleet/jobs/webhooks.py) reads the due deliveries and asks ``choose``
for the round's lanes. Fair share, so that one tenant's slow or dead receivers never hold
back another tenant's deliveries:

- round-robin across tenants: each tenant's oldest delivery, then each one's second, …;
  tenants in the order of their oldest due delivery;
- a per-tenant budget: at most ``per_tenant`` deliveries of one tenant in a round, and at
  most ``total`` in all (the rest stay due for the next round);
- one lane per destination (the URL's scheme, host and port): a lane's deliveries are
  sent one after another, so at most one is in flight to a destination at a time, while
  lanes run side by side. Lanes are ordered by their first delivery in the round-robin, so
  every tenant's first delivery is among the first sends of the round.

A webhook has one URL, so its deliveries stay in their order inside one lane.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Pending:
    """One due delivery: its id, its tenant and where it goes (``destination(url)``)."""

    id: int
    tenant_id: str
    destination: str


@dataclass(frozen=True)
class Share:
    """How much a round sends: per tenant, and in all."""

    per_tenant: int = 20
    total: int = 200


def destination(url: str) -> str:
    """The receiver a URL names, as the lanes key it: ``scheme://host:port`` (host lowercased)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return url
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    return f"{scheme}://{host}:{port or DEFAULT_PORTS.get(scheme, 0)}"


def round_robin(pending: Sequence[Pending], share: Share) -> list[Pending]:
    """The deliveries a round sends, in round-robin order across tenants within the budgets."""
    queues: dict[str, list[Pending]] = {}
    for item in pending:
        queues.setdefault(item.tenant_id, []).append(item)
    chosen: list[Pending] = []
    for turn in range(max(share.per_tenant, 0)):
        taken = [queue[turn] for queue in queues.values() if turn < len(queue)]
        if not taken:
            break
        chosen += taken[: max(share.total - len(chosen), 0)]
    return chosen


def lanes(chosen: Sequence[Pending]) -> list[list[int]]:
    """The chosen deliveries' ids, one lane per destination, each in the chosen order."""
    by_destination: dict[str, list[int]] = {}
    for item in chosen:
        by_destination.setdefault(item.destination, []).append(item.id)
    return list(by_destination.values())


def choose(pending: Sequence[Pending], share: Share) -> list[list[int]]:
    """The round's lanes (ids per destination), from the due deliveries oldest first."""
    return lanes(round_robin(pending, share))

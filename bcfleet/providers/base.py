"""The ProviderImpl seam: what a provider pool asks of a cloud provider and what it gets back.

The reconciler (``providers.reconcile``) and ``providerAccounts.offers`` talk to
providers only through :class:`ProviderImpl`; the Hetzner Cloud client and any
test double implement it. Values crossing the seam are frozen dataclasses whose
``to_json()`` uses the documents' camelCase (document 000's offer example).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from bcfleet.clock import format_time


@dataclass(frozen=True)
class Offer:
    """One server type the provider sells in one region, at one price.

    ``available`` is false when the region does not sell it right now (sold out,
    not offered there, or past its end of sale); ``deprecated`` is true once the
    provider has announced its end. Neither kind may be used silently.
    """

    id: str
    kind: str
    region: str
    vcpu: int
    memory_gib: float
    disk_gib: int
    price_per_hour: float
    currency: str
    available: bool
    deprecated: bool

    def to_json(self) -> dict[str, Any]:
        """The offer as document 000 shows it, plus ``deprecated``."""
        return {
            "id": self.id,
            "kind": self.kind,
            "region": self.region,
            "vcpu": self.vcpu,
            "memoryGiB": _number(self.memory_gib),
            "diskGiB": self.disk_gib,
            "pricePerHour": self.price_per_hour,
            "currency": self.currency,
            "available": self.available,
            "deprecated": self.deprecated,
        }


@dataclass(frozen=True)
class ProviderServer:
    """A server as the provider reports it; ``id`` is the provider's id as a string."""

    id: str
    name: str
    status: str
    offer_id: str
    labels: Mapping[str, str] = field(hash=False)
    created: datetime
    region: str | None = None

    def to_json(self) -> dict[str, Any]:
        """camelCase JSON with an RFC 3339 ``created``."""
        return {
            "id": self.id,
            "name": self.name,
            "status": self.status,
            "offerId": self.offer_id,
            "labels": dict(self.labels),
            "created": format_time(self.created),
            "region": self.region,
        }


@runtime_checkable
class ProviderImpl(Protocol):
    """What a provider pool needs from a cloud provider.

    Server names are unique per provider project and serve as the idempotency
    key: ``create_server`` never leaves two servers behind for one name, and
    ``get_server_by_name`` finds the one a lost response created. ``close``
    releases connections.
    """

    def offers(self, kind: str | None = None, min_vcpu: int | None = None) -> list[Offer]: ...

    def create_server(
        self,
        name: str,
        offer_id: str,
        image: str,
        location: str,
        labels: Mapping[str, str],
    ) -> ProviderServer: ...

    def delete_server(self, server_id: str) -> None: ...

    def list_servers(self, label_selector: Mapping[str, str]) -> list[ProviderServer]: ...

    def get_server_by_name(self, name: str) -> ProviderServer | None: ...

    def close(self) -> None: ...


def filter_offers(
    offers: list[Offer], kind: str | None = None, min_vcpu: int | None = None
) -> list[Offer]:
    """The offers of one kind with at least ``min_vcpu`` vCPUs, sorted by id then region."""
    kept = [
        offer
        for offer in offers
        if (kind is None or offer.kind == kind) and (min_vcpu is None or offer.vcpu >= min_vcpu)
    ]
    return sorted(kept, key=lambda offer: (offer.id, offer.region))


def _number(value: float) -> float | int:
    """4.0 → 4, so whole GiB render as integers like the documents' examples."""
    return int(value) if float(value).is_integer() else value

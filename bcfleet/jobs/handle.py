"""What a job is handed instead of the Fleet: what placement and the provider catalog read, and
the fleet's one offer catalog, which the composition root passes in (store/handle.py says why)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from bcfleet.placement.handle import PlacementHandle
from bcfleet.providers.offer_catalog import CatalogHandle

if TYPE_CHECKING:
    from bcfleet.providers.offer_catalog import OfferCatalog


class JobHandle(PlacementHandle, CatalogHandle, Protocol):
    """A fleet as a job sees it: run_x(fleet, now)."""

    @property
    def offer_catalog(self) -> OfferCatalog:
        """The fleet's one offer catalog (the API's), shared by providers.reconcile."""
        ...

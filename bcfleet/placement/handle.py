"""What placement is handed instead of the Fleet: the store's handle, the settings, and the
placement context kept between its transactions (store/handle.py says why)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from bcfleet.store.handle import StoreHandle

if TYPE_CHECKING:
    from bcfleet.placement.context import PlacementContext
    from bcfleet.settings import FleetSettings


class PlacementHandle(StoreHandle, Protocol):
    """A fleet as placement sees it."""

    @property
    def settings(self) -> FleetSettings: ...

    @property
    def placement(self) -> PlacementContext:
        """Cursors, parsed inventories, GPU snapshots: one per fleet handle."""
        ...

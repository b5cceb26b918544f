"""What placement keeps between transactions of one fleet handle: pool cursors, parsed inventories, GPU snapshots, first pages, lone guests' placements, the catalog's lookups, candidate windows.

Everything here only guides placement: cursors say where the next search starts, inventories
are keyed by the generation the host row carries, GPU snapshots are re-checked under row
locks before anything is booked, a first page sent ahead is used only when it is the page the
search reads, a charge finished behind its claim runs again in the lock order when it was
not what was remembered, and a lone guest's placement is the pure chooser's answer for the
same inputs; a catalog lookup is used only while the catalog revision read in the placement's
own transaction is the one it was read at (placement/catalog_cache.py), and a candidate window
only while the state revision read in the placement's own transaction is the one it was kept at
(placement/candidate_window.py). Threads of one process share a context; processes do not.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bcfleet.domain.gpu_plan import GpuSnapshot
from bcfleet.domain.numa import HostPlacement
from bcfleet.domain.shapes import Inventory
from bcfleet.placement.catalog_cache import CatalogCache
from bcfleet.store.stored_json import Written, written

if TYPE_CHECKING:
    from bcfleet.placement.candidate_window import CandidateWindow

INVENTORY_HOSTS_MAX = 20_000
INVENTORY_DOCUMENTS_MAX = 1_000
FIRST_PAGES_MAX = 1_000
CHARGES_MAX = 10_000
ALONE_PLACEMENTS_MAX = 1_000
WINDOWS_MAX = 1_000


@dataclass(frozen=True)
class PoolView:
    """A pool's GPU snapshot and what it was built from."""

    snapshot: GpuSnapshot
    node_ids: frozenset[str]
    fingerprint: tuple[Any, ...]
    token: str | None
    version: int


@dataclass
class PlacementContext:
    """Per-fleet placement memory, each table behind one lock.

    `random_start`: a pool's first search starts after a random host (processes placing at
    once start apart); off for a reproducible fleet (seeded ids), whose searches start at the
    first host so the same calls place alike.
    """

    random_start: bool = True
    _cursors: dict[str, str] = field(default_factory=dict)
    _inventories: dict[str, tuple[int, Inventory]] = field(default_factory=dict)
    _documents: dict[str, Inventory] = field(default_factory=dict)
    _gpu_pools: dict[str, PoolView] = field(default_factory=dict)
    _first_pages: dict[Hashable, tuple[bool, dict[str, Any]]] = field(default_factory=dict)
    _striped: dict[tuple[str, str], bool] = field(default_factory=dict)
    _alone: dict[tuple[Any, ...], tuple[Inventory, HostPlacement]] = field(default_factory=dict)
    # The JSON text of each kept lone placement, by the placement's identity, once written.
    _alone_texts: dict[int, tuple[HostPlacement, Written | None]] = field(default_factory=dict)
    _windows: dict[str, CandidateWindow] = field(default_factory=dict)
    catalog: CatalogCache = field(default_factory=CatalogCache)
    """Pools and flavors placements found, under the catalog revision (its own lock)."""
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def cursor(self, pool_id: str) -> str | None:
        """Where the pool's next candidate search starts (after this host id); None before the first."""
        with self._lock:
            return self._cursors.get(pool_id)

    def advance_cursor(self, pool_id: str, node_id: str) -> None:
        """Start the pool's next search after the host just used."""
        with self._lock:
            self._cursors[pool_id] = node_id

    def first_page(self, key: Hashable) -> tuple[bool, dict[str, Any]] | None:
        """The first candidate page the last placement with this key read (SearchAhead)."""
        with self._lock:
            return self._first_pages.get(key)

    def remember_first_page(self, key: Hashable, with_labels: bool, params: dict[str, Any]) -> None:
        with self._lock:
            if len(self._first_pages) >= FIRST_PAGES_MAX and key not in self._first_pages:
                self._first_pages.clear()
            self._first_pages[key] = (with_labels, params)

    def window(self, pool_id: str) -> CandidateWindow | None:
        """The pool's kept candidate window (candidate_window.WindowSearch)."""
        with self._lock:
            return self._windows.get(pool_id)

    def keep_window(self, window: CandidateWindow) -> None:
        """Keep a pool's window unless one of a later revision is kept already (another
        thread's placement committed after the one keeping this)."""
        with self._lock:
            current = self._windows.get(window.pool_id)
            if current is not None and current.revision > window.revision:
                return
            if len(self._windows) >= WINDOWS_MAX and current is None:
                self._windows.clear()
            self._windows[window.pool_id] = window

    def charges_striped(self, tenant_id: str, pool_id: str) -> bool:
        """Whether the tenant's last charge in the pool was finished by its stripes alone
        (quotas.start_charge), so the next may be finished behind its claim."""
        with self._lock:
            return self._striped.get((tenant_id, pool_id), False)

    def remember_charge(self, tenant_id: str, pool_id: str, striped: bool) -> None:
        with self._lock:
            if len(self._striped) >= CHARGES_MAX and (tenant_id, pool_id) not in self._striped:
                self._striped.clear()
            self._striped[(tenant_id, pool_id)] = striped

    def kept_inventory(self, node_id: str) -> tuple[int, Inventory] | None:
        """The host's last parsed inventory and the generation it was parsed at."""
        with self._lock:
            return self._inventories.get(node_id)

    def inventory_of_document(self, document: str) -> Inventory | None:
        """A parsed inventory shared by every host reporting the same document text."""
        with self._lock:
            return self._documents.get(document)

    def keep_inventory(
        self, node_id: str, generation: int, document: str, inventory: Inventory
    ) -> None:
        with self._lock:
            if len(self._documents) >= INVENTORY_DOCUMENTS_MAX:
                self._documents.clear()
            self._documents[document] = inventory
            if len(self._inventories) >= INVENTORY_HOSTS_MAX:
                self._inventories.clear()
            self._inventories[node_id] = (generation, inventory)

    def alone_placement(self, inventory: Inventory, key: Hashable) -> HostPlacement | None:
        """The NUMA chooser's answer for a guest alone on a host of this very (kept) inventory.

        `key` holds the chooser's other inputs (shape, policy, reserve, memory ratio); the
        inventory is matched by identity, as the kept copies are shared (keep_inventory).
        """
        with self._lock:
            found = self._alone.get((id(inventory), key))
        return found[1] if found is not None and found[0] is inventory else None

    def keep_alone_placement(
        self, inventory: Inventory, key: Hashable, placement: HostPlacement
    ) -> None:
        with self._lock:
            if len(self._alone) >= ALONE_PLACEMENTS_MAX:
                self._alone.clear()
                self._alone_texts.clear()
            self._alone[(id(inventory), key)] = (inventory, placement)
            self._alone_texts[id(placement)] = (placement, None)

    def placement_text(self, placement: HostPlacement) -> Written:
        """The placement's JSON document as its stored text (stored_json.written), written once
        for a kept lone placement (every guest placed alone on a host of that inventory shares
        it: its cpuset alone is one number a CPU), and anew for any other."""
        with self._lock:
            kept = self._alone_texts.get(id(placement))
        if kept is None or kept[0] is not placement:
            return written(placement.to_json())
        text = kept[1]
        if text is None:
            text = written(placement.to_json())
            with self._lock:
                if self._alone_texts.get(id(placement), kept)[0] is placement:  # still kept
                    self._alone_texts[id(placement)] = (placement, text)
        return text

    def gpu_pool(self, pool_id: str) -> PoolView | None:
        with self._lock:
            return self._gpu_pools.get(pool_id)

    def keep_gpu_pool(self, pool_id: str, view: PoolView, *, replace: bool) -> None:
        """Keep a pool's view unless a newer one is kept already (always when `replace`)."""
        with self._lock:
            current = self._gpu_pools.get(pool_id)
            if current is None or replace or current.version <= view.version:
                self._gpu_pools[pool_id] = view

    def forget_gpu_pools(self, pool_id: str | None = None) -> None:
        """Drop kept GPU snapshots (of one pool, or all): the next reader rebuilds."""
        with self._lock:
            for key in [k for k in self._gpu_pools if pool_id is None or k == pool_id]:
                del self._gpu_pools[key]

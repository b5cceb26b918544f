"""What a placement's lookup found, kept per fleet handle under the catalog revision it was read at (store/catalog_revision.py)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from bcfleet.store.models import Flavor, Pool

CATALOG_ENTRIES_MAX = 1_000

CatalogKey = tuple[str, str, str]
"""The acting tenant, the pool's reference and the flavor's, as the call gave them."""


@dataclass(frozen=True)
class CatalogEntry:
    """The pool and the live flavor found for a key, whether the pool is offered to the
    tenant, and whether the tenant's own row was seen (the check of a tenant acted for)."""

    revision: int
    pool: Pool
    flavor: Flavor
    offered: bool
    tenant_seen: bool

    def holds(self, revision: int | None, tenant_checked: bool) -> bool:
        """Whether it answers a lookup made at `revision`, one that would check the tenant
        when `tenant_checked`."""
        return revision == self.revision and (self.tenant_seen or not tenant_checked)


@dataclass
class CatalogCache:
    """Entries found by placements, one a key. Only found pools and flavors are kept: what
    was not found, or not visible, is looked up again every time."""

    _entries: dict[CatalogKey, CatalogEntry] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: CatalogKey) -> CatalogEntry | None:
        with self._lock:
            return self._entries.get(key)

    def keep(self, key: CatalogKey, entry: CatalogEntry) -> None:
        with self._lock:
            if len(self._entries) >= CATALOG_ENTRIES_MAX and key not in self._entries:
                self._entries.clear()
            self._entries[key] = entry

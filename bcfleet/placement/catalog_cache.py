"""What a placement's lookup found, kept per fleet handle under the catalog revision it was read at (store/catalog_revision.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from bcfleet.store.models import Flavor, Pool

CATALOG_ENTRIES_MAX = 1_000

T = TypeVar("T")

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
    was not found, or not visible, is looked up again every time.

    With a kept flavor, what a call derives from it alone (its shape, parsed) is kept too
    (derived): the flavor is the same object, never changed, while its entry is kept, and a
    catalog change finds a new one."""

    _entries: dict[CatalogKey, CatalogEntry] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # id of a kept flavor: the flavor (its id stays its own while held here) and what was
    # derived from it, by the function that derived it
    _derived: dict[int, tuple[Flavor, dict[Callable[[Flavor], Any], Any]]] = field(
        default_factory=dict
    )

    def get(self, key: CatalogKey) -> CatalogEntry | None:
        with self._lock:
            return self._entries.get(key)

    def keep(self, key: CatalogKey, entry: CatalogEntry) -> None:
        with self._lock:
            if len(self._entries) >= CATALOG_ENTRIES_MAX and key not in self._entries:
                self._entries.clear()
            if len(self._derived) >= CATALOG_ENTRIES_MAX:
                self._derived.clear()
            self._entries[key] = entry
            self._derived.setdefault(id(entry.flavor), (entry.flavor, {}))

    def derived(self, flavor: Flavor, derive: Callable[[Flavor], T]) -> T:
        """derive(flavor), made once for a flavor this cache handed out (derive must read
        nothing but the flavor); for any other flavor made every time."""
        found = self._derived.get(id(flavor))
        if found is None or found[0] is not flavor:
            return derive(flavor)
        made: dict[Callable[[Flavor], Any], Any] = found[1]
        if derive in made:
            kept: T = made[derive]
            return kept
        value = made[derive] = derive(flavor)  # a race only derives twice, alike
        return value

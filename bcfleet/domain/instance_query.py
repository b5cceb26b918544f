"""What instances.list filters and sorts by: the sort keys and the search words' bounds, for the
API, HTTP (OpenAPI), CLI and console alike."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bcfleet.domain.bounds import check_optional_text
from bcfleet.errors import InvalidInputError

SORT_KEYS = ("name", "tenant", "state", "flavor", "host", "pool", "created")
"""The orders instances.list knows. Without one: pending instances first, then the newest.
`created` is oldest first (descending: newest first); ties go by id in the same direction."""
DEFAULT_SORT = None
SEARCH_MAX = 200
"""The longest search (`q`): a few words, each at most a name's length."""


@dataclass(frozen=True, slots=True)
class InstanceQuery:
    """A filtered, sorted listing of instances: `q` words each in the name or id
    (case-insensitive), an exact state, owning tenant, pool and host, and the order."""

    q: str | None = None
    state: str | None = None
    owner: str | None = None
    pool: str | None = None
    host: str | None = None
    sort: str | None = DEFAULT_SORT
    descending: bool = False

    @property
    def filtered(self) -> bool:
        """Whether anything narrows the listing (the order does not)."""
        return any((self.q, self.state, self.owner, self.pool, self.host))


def check_sort(sort: str | None) -> str | None:
    """The sort key itself, or INVALID_INPUT naming the keys there are."""
    if sort is not None and sort not in SORT_KEYS:
        raise InvalidInputError(
            f"sort must be one of {', '.join(SORT_KEYS)}", {"sort": sort, "allowed": SORT_KEYS}
        )
    return sort


def search_words(q: str | None) -> Sequence[str]:
    """The words of a search, each to be found in the name or id; INVALID_INPUT for a search
    too long or holding control characters."""
    text = check_optional_text("q", q, SEARCH_MAX)
    return tuple(text.split()) if text else ()

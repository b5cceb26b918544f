"""The Instances view's reading of a large fleet: what of the `/` filter and the sort the server
is asked (instances.list's q, state, owner, host, sort), a page at a time, and the "N of M".

A fleet of up to PAGE_MAX instances is read whole and the view filters and sorts it as every
other view does. Beyond that, the filter's plain words go to the server as its search (each
in the name or the id), `state:`, `tenant:` and `host:` terms as its filters, and the sorted
column as its order; the other terms (`!word`, `~regex`, `flavor:…`) are checked by the table
on the rows read, and the status line says so. The Pager is used from the UI thread (ask,
near_the_end, shown) and from the fetch worker (fetch), never both at once: the view fetches
one at a time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bcfleet.domain.bounds import PAGE_MAX
from bcfleet.domain.instance_query import SEARCH_MAX, InstanceQuery
from bcfleet.domain.states import InstanceState
from bcfleet.errors import NotFoundError
from bcfleet.tui.history import exact_value
from bcfleet.tui.source import FleetSource, InstanceRowJson
from bcfleet.tui.widgets.table_rows import Column

PAGE = 200
"""The rows read at a time from a large fleet: a few screens, quick to read and to draw."""
NEAR_END = 40
"""The cursor this many rows before the last row read reads the next page."""
SERVER_SORTS = {"name": "name", "tenant": "tenant", "state": "state", "flavor": "flavor",
                "host": "host", "age": "created"}  # fmt: skip
"""The columns the server sorts by (their instances.list sort key); REASON is sorted here."""
FILTERS = {"state": "state", "tenant": "owner", "host": "host"}
"""`column:value` filter terms the server applies (exact values), by the query field."""


@dataclass(frozen=True)
class Listing:
    """What the view shows: the rows read, how many the query keeps (`total`) and the fleet
    holds (`fleet_total`), whether it is read a page at a time, and the next page's cursor."""

    items: list[InstanceRowJson]
    total: int
    fleet_total: int
    query: InstanceQuery
    paged: bool
    cursor: int | None = None
    problem: str | None = None
    revision: int | None = None
    """The source's revision when it was read (None: unknown)."""


def _a_state(value: str) -> bool:
    """Whether a `state:` term names an instance state (others are checked on the rows read)."""
    try:
        InstanceState(value.lower())
    except ValueError:
        return False
    return True


def server_query(
    text: str, columns: Sequence[Column], sort_index: int | None, reverse: bool
) -> tuple[InstanceQuery, tuple[str, ...]]:
    """The query the server is asked for a filter and a sort, and the terms it is not asked
    (the table checks them on the rows read)."""
    words: list[str] = []
    fields: dict[str, str] = {}
    local: list[str] = []
    for term in text.split():
        name, sep, value = term.partition(":")
        field = FILTERS.get(name.lower()) if sep else None
        value = exact_value(value) or value  # a drill-down's 'tenant:~^acme$' is tenant acme
        exact = value and not value.startswith(("~", "!")) and field not in fields
        if field is not None and exact and (field != "state" or _a_state(value)):
            fields[field] = value.lower() if field == "state" else value
        elif not sep and not term.startswith(("!", "~")):
            words.append(term)
        else:
            local.append(term)
    q = " ".join(words)
    if len(q) > SEARCH_MAX:
        local, q = [*words, *local], ""
    sort, descending = None, False
    if sort_index is not None:
        key = columns[sort_index].key
        sort = SERVER_SORTS.get(key)
        # AGE ▲ is the youngest first: the newest created first.
        descending = (not reverse) if key == "age" else reverse
        if sort is None:
            descending = False
    query = InstanceQuery(q=q or None, sort=sort, descending=descending, **fields)
    return query, tuple(local)


class Pager:
    """The query the view wants next, and what its last fetch read."""

    def __init__(self, columns: Sequence[Column]) -> None:
        self.columns = columns
        self.query = InstanceQuery()
        self.local_terms: tuple[str, ...] = ()
        self.more = False
        """The next page is wanted (the cursor neared the end of what is read)."""
        self.last: Listing | None = None
        self.cursor_seen: tuple[int, int] | None = None
        """The cursor's row and the rows shown when it last moved."""

    @property
    def paged(self) -> bool:
        return self.last is not None and self.last.paged

    # -- the UI thread ------------------------------------------------------------------------

    def ask(self, text: str, sort_index: int | None, reverse: bool) -> bool:
        """The filter or the sort changed: whether the server must be asked again."""
        query, local = server_query(text, self.columns, sort_index, reverse)
        self.local_terms = local
        if query == self.query:
            return False
        self.query, self.more = query, False
        return self.paged

    def near_the_end(self, row: int, shown: int) -> bool:
        """The cursor moved to `row` of the `shown` rows: whether to read the next page now.
        Only a move down among the same rows reads: rows that came or went (a page read, a
        filter typed) move the cursor too."""
        seen, self.cursor_seen = self.cursor_seen, (row, shown)
        if seen is None or seen[1] != shown or row <= seen[0]:
            return False
        last = self.last
        if last is None or not last.paged or last.cursor is None or self.more:
            return False
        if last.query != self.query or row < shown - NEAR_END:
            return False
        self.more = True
        return True

    def shown(self, listing: Listing) -> None:
        self.last = listing
        if listing.query == self.query:
            self.more = False

    def counted(self, listing: Listing, shown: int) -> str:
        """ "N of M instances": those the filter keeps (or the rows read when nothing filters)
        of every instance in the fleet."""
        if self.local_terms:
            kept = shown
        elif listing.query.filtered:
            kept = listing.total
        else:
            kept = len(listing.items)
        return f"{kept:,} of {listing.fleet_total:,} instances"

    def notes(self, listing: Listing) -> list[str]:
        notes = []
        if listing.problem:
            notes.append(listing.problem)
        read = len(listing.items)
        if self.local_terms:
            notes.append(f"{' '.join(self.local_terms)} checked on the {read:,} read")
        elif listing.query.filtered and read < listing.total:
            notes.append(f"{read:,} read")
        return notes

    # -- the fetch worker -----------------------------------------------------------------------

    def fetch(self, source: FleetSource) -> Listing:
        query, more, last = self.query, self.more, self.last
        revision = source.revision()
        if last is None or not last.paged or last.fleet_total <= PAGE_MAX:
            items, total = source.instances_page(PAGE_MAX)
            if total <= PAGE_MAX:
                return Listing(items, total, total, InstanceQuery(), False, revision=revision)
            if query == InstanceQuery():  # grown past one page: the rows read are its first
                cursor = len(items) if len(items) < total else None
                return Listing(items, total, total, query, True, cursor, revision=revision)
            last = None
        try:
            items, total, cursor = self._read(source, query, more, last)
        except NotFoundError as exc:  # host:NAME naming no host (yet: it is being typed)
            fleet = last.fleet_total if last is not None else 0
            return Listing([], 0, fleet, query, True, None, exc.message)
        fleet_total = total
        if (
            query.filtered
            and revision is not None
            and last is not None
            and last.revision == revision
        ):
            fleet_total = last.fleet_total  # nothing changed since it was counted
        elif query.filtered:
            fleet_total = source.find_instances(InstanceQuery(), 1).total
        return Listing(items, total, fleet_total, query, True, cursor, None, revision)

    @staticmethod
    def _read(
        source: FleetSource, query: InstanceQuery, more: bool, last: Listing | None
    ) -> tuple[list[InstanceRowJson], int, int | None]:
        """The next page after the rows read, or the pages from the start again (as many rows
        as were read for the same query, at least a page)."""
        if more and last is not None and last.query == query and last.cursor is not None:
            found = source.find_instances(query, PAGE, after=last.cursor)
            return [*last.items, *found.items], found.total, found.cursor
        wanted = PAGE
        if last is not None and last.query == query:
            wanted = max(PAGE, len(last.items))
        items: list[InstanceRowJson] = []
        after = None
        while True:
            found = source.find_instances(query, min(wanted - len(items), PAGE_MAX), after)
            items.extend(found.items)
            if found.cursor is None or len(items) >= wanted:
                return items, found.total, found.cursor
            after = found.cursor

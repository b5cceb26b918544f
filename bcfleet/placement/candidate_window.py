"""A fleet handle's kept candidate window (SQLite): the rows of a plain search, answered again while nobody else has written.

Like kube-scheduler's scheduler cache, a handle keeps what its last placement in a pool read
of the candidate query (WINDOW_ROWS rows from the pool's cursor, wider than the 16 a placement
weighs) and answers the next placement's first page from it, instead of reading the page
again, while the state revision says the database is as that placement left it:

- SQLite has one writer at a time (a write transaction begins IMMEDIATE), and every write
  transaction that changes a row bumps the state revision (store/uow.py), so the revision read
  in a placement's transaction is the one its own last placement committed only when nobody
  else committed a change since. The writers that pass bump_revision=False write job runs,
  leases and locks, usage windows and dead letters, webhook deliveries, the fleet's identity
  and the root tenant, never hosts, node_resources or allocations; `fleet apply` bumps the
  revision itself when it changes anything.
- A placement changes one thing the query reads: the claimed host's allocated counts. The
  window is kept only when the first host the placement tried took the claim, with the claim
  applied to that host's row, and without the row when the claims no longer fit it
  (fit.ResourceRow.fits, the query's rule), tagged with the revision the transaction
  committed: the one it read plus one, as instances.create always writes (the instance's
  row), so always bumps.
- It is kept only once the transaction has committed (uow.after_commit): a placement rolled
  back keeps nothing, so no number another writer's commit reaches later can match its rows.
- It answers a page only from a cursor at or past where it was read, and only when at least
  the page's limit of rows lies after the cursor: every feasible host between the read's start
  and its last row is among the rows, so those are the rows the query would answer. Anything
  else (a cursor before the window, too few rows left, the wrap round to the pool's start,
  other claims) is read again, and that read is the next window.

The claim itself stays the guarded statement, whatever the window says. Only the plain search
uses a window (no GPUs, no placement label, its first round), in a transaction of the call's
own; PostgreSQL, whose state revision is a sequence outside its transactions, reads its page.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from operator import itemgetter
from typing import TYPE_CHECKING, Any, NamedTuple

from bcfleet.domain.fit import ResourceRow
from bcfleet.domain.scalars import SCALARS
from bcfleet.placement.candidates import FEASIBLE_PAGE, MAX_ID, row_fractions
from bcfleet.store.engine import is_sqlite
from bcfleet.store.uow import after_commit

if TYPE_CHECKING:
    from sqlmodel import Session

    from bcfleet.placement.context import PlacementContext

WINDOW_ROWS = 64
"""How many rows a window is read with (the page a placement weighs is 16)."""

_ID = itemgetter(0)
# Where each scalar's columns (allocatable, ratio, capacity, allocated) start in a page row.
_GROUPS = tuple(zip(SCALARS, (3, 7, 11), strict=True))
# Named tuples made in C (their own __new__ is a Python function), as candidates._row does.
_made = tuple.__new__


class CandidateWindow(NamedTuple):
    """Rows of the candidate query for one pool and one set of claims (vcpu, memory, disk),
    read from after `after` in id order (`ids`, theirs), as the database holds them at
    `revision`, with each row's free fraction (`fractions`: a row's weight is made once, when
    it is read or claimed, not once for every page it is in). A named tuple: a placement
    answered from it makes the next one."""

    revision: int
    pool_id: str
    claims: tuple[int, int, int]
    after: str
    ids: tuple[str, ...]
    rows: tuple[Any, ...]
    fractions: tuple[float, ...]

    @classmethod
    def of(
        cls, revision: int, pool_id: str, claims: tuple[int, int, int], after: str, rows: Any
    ) -> CandidateWindow:
        """The window of rows read from after host `after`."""
        rows = (*rows,)
        fractions = (*row_fractions(rows),)
        return _made(cls, (revision, pool_id, claims, after, (*map(_ID, rows),), rows, fractions))

    def page(self, after: str, limit: int) -> tuple[list[Any], list[float]] | None:
        """The first `limit` rows after host `after`, as the query answers them, and their free
        fractions; None when the window does not hold them all."""
        if after < self.after:
            return None
        start = bisect_right(self.ids, after)
        if len(self.ids) - start < limit:
            return None
        end = start + limit
        return list(self.rows[start:end]), list(self.fractions[start:end])

    def with_claim(self, node_id: str, revision: int) -> CandidateWindow:
        """The window once `node_id` took its claims, at `revision`."""
        ids, rows, fractions = self.ids, self.rows, self.fractions
        at = bisect_left(ids, node_id)
        if at < len(ids) and ids[at] == node_id:
            row = claimed_row(rows[at], self.claims)
            if row is not None:
                rows = (*rows[:at], row, *rows[at + 1 :])
                fractions = (*fractions[:at], *row_fractions((row,)), *fractions[at + 1 :])
            else:
                ids, rows = (*ids[:at], *ids[at + 1 :]), (*rows[:at], *rows[at + 1 :])
                fractions = (*fractions[:at], *fractions[at + 1 :])
        return _made(
            CandidateWindow,
            (revision, self.pool_id, self.claims, self.after, ids, rows, fractions),
        )


def claimed_row(row: Any, claims: tuple[int, int, int]) -> tuple[Any, ...] | None:
    """A page row with `claims` added to its allocated counts; None when the claims no longer
    fit it (the query would leave it out)."""
    values = list(row)
    for (scalar, at), claim in zip(_GROUPS, claims, strict=True):
        values[at + 3] += claim
        if not _made(ResourceRow, (scalar, *values[at : at + 4])).fits(claim):
            return None
    return tuple(values)


class WindowSearch:
    """One placement's use of its pool's kept window (instances.create, SQLite).

    Armed by started_at with the state revision its transaction read; unarmed (PostgreSQL, a
    call inside an enclosing transaction) every page is read as without it. Only the search's
    first page is answered from the window or read as a new one.
    """

    __slots__ = ("_answered", "_asked", "_context", "_revision", "_window")

    def __init__(self, context: PlacementContext) -> None:
        self._context = context
        self._revision: int | None = None
        self._window: CandidateWindow | None = None
        self._asked = False
        self._answered: list[float] | None = None  # the first page's free fractions

    @classmethod
    def on(cls, session: Session, context: PlacementContext) -> WindowSearch | None:
        """A placement's window search on SQLite; None on PostgreSQL."""
        return cls(context) if is_sqlite(session.get_bind().engine) else None

    def started_at(self, revision: int | None) -> None:
        """The state revision read in the placement's transaction (None: no row yet, 0)."""
        self._revision = int(revision or 0)

    def page(self, session: Session, params: dict[str, Any]) -> list[Any]:
        """A page of the plain search (candidates._page_params): the first from the kept
        window when it holds it, else read WINDOW_ROWS wide and made the window; others read."""
        first, self._asked = not self._asked, True
        revision = self._revision
        if not first or revision is None or params["before"] != MAX_ID:
            return FEASIBLE_PAGE[False].run(session, params).all()
        claims = (params["vcpu"], params["mem"], params["disk"])
        limit = params["limit"]
        kept = self._context.window(params["pool"])
        if kept is not None and kept.revision == revision and kept.claims == claims:
            page = kept.page(params["after"], limit)
            if page is not None:
                self._window = kept
                rows, self._answered = page
                return rows
        wide = {**params, "limit": max(WINDOW_ROWS, limit)}
        read = FEASIBLE_PAGE[False].run(session, wide).all()
        window = CandidateWindow.of(revision, params["pool"], claims, params["after"], read)
        self._window, self._answered = window, list(window.fractions[:limit])
        return read[:limit]

    def fractions(self, found: list[Any]) -> list[float] | None:
        """The free fractions of the search's candidates, when they are the first page's rows
        alone (the candidates begin with that page, so as many rows are those rows); None
        when the search read other pages or had none from the window."""
        answered = self._answered
        return answered if answered is not None and len(answered) == len(found) else None

    def claimed(self, session: Session, node_id: str) -> None:
        """The placement claimed `node_id` (the first host it tried): once its transaction has
        committed, the window is kept as the database holds it then."""
        window, self._window = self._window, None
        if window is None or self._revision is None:
            return
        kept = window.with_claim(node_id, self._revision + 1)
        context = self._context
        after_commit(session, lambda: context.keep_window(kept))

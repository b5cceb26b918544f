"""The document of capacity.preview (document 003): whether a reservation fits, and what preempting would do."""

from typing import NotRequired, TypedDict


class PreviewCandidateJson(TypedDict):
    """A node the request could use: id and name for the pool's owner and root's admin, an opaque
    id alone for a guest tenant."""

    id: str
    name: NotRequired[str]


class PreemptibleJson(TypedDict):
    """What preempting spot work would take: how many reservations, and the start after the
    notice (epoch milliseconds)."""

    reservations: int
    startsAt: int


class PreviewJson(TypedDict):
    """Candidate nodes, and what it would preempt as a count and a start (preemptible), or why
    preempting would not make it fit (preemptReason); never another tenant's ids."""

    fits: bool
    candidates: list[PreviewCandidateJson]
    reason: str | None
    preemptible: NotRequired[PreemptibleJson]
    preemptReason: NotRequired[str]

"""The event document, typed: the event log (in the store) renders it for the API and webhooks."""

from collections.abc import Mapping
from typing import Any, NotRequired, TypedDict

from bcfleet.domain.json_types import Time


class EventJson(TypedDict):
    """One tenant's copy of an event: seq is its place in the log (the cursor to resume after)."""

    id: str
    seq: int
    type: str
    subjectId: str | None
    at: Time
    data: Mapping[str, Any]
    unreadable: NotRequired[list[str]]
    """The stored fields that cannot be read (shown empty): present only on a damaged row."""

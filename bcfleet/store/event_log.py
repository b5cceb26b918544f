"""The event log: appending (one Core insert in the caller's transaction, sequenced in emit
order) and an event's JSON, as the API and webhook deliveries show it."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlmodel import Session

from bcfleet.clock import format_time
from bcfleet.domain.event_document import EventJson
from bcfleet.domain.host_ids import HostView
from bcfleet.ids import IdFactory
from bcfleet.store.bulk_insert import BulkInsert
from bcfleet.store.driver_sql import DriverStatement
from bcfleet.store.models import Event
from bcfleet.store.stored_json import EVENT_DOCUMENTS, decode

_INSERT_EVENT = DriverStatement(Event.__table__.insert())  # type: ignore[attr-defined]
_INSERT_EVENTS = BulkInsert(Event.__table__)  # type: ignore[attr-defined]


def emit(
    session: Session,
    ids: IdFactory,
    at: datetime,
    event_type: str,
    *,
    tenant_id: str | None,
    subject_id: str | None = None,
    data: dict[str, Any] | None = None,
) -> None:
    """Add one tenant's copy of an event to the log, in the caller's transaction.

    Sent at once on the driver's cursor (no unit of work): events take their sequence
    numbers in the order they were emitted. On PostgreSQL it waits for the next statement
    (store/driver_sql.py): an error of the insert is raised there.
    """
    _INSERT_EVENT.send(
        session,
        {
            "id": ids.new("evt", at),
            "type": event_type,
            "tenant_id": tenant_id,
            "subject_id": subject_id,
            "data": dict(data or {}),
            "at": at,
        },
    )


def emit_each(
    session: Session,
    ids: IdFactory,
    at: datetime,
    events: Iterable[tuple[str, str | None, str | None, dict[str, Any]]],
) -> None:
    """emit() for many events at once (type, tenant, subject, data each), in one statement:
    they take their sequence numbers in the order given (a batch's instances). Events may share
    one data document; it is written as it is (each is dumped once, store/bulk_insert.py)."""
    listed = list(events)
    _INSERT_EVENTS.run(
        session,
        [
            {"id": event_id, "type": kind, "tenant_id": tenant_id,
             "subject_id": subject_id, "data": data, "at": at}
            for event_id, (kind, tenant_id, subject_id, data) in zip(
                ids.new_many("evt", at, len(listed)), listed, strict=True
            )
        ],
    )  # fmt: skip


def event_data(event: Event) -> dict[str, Any]:
    """An event's data through the guarded decoder: empty when the stored data cannot be read."""
    data: dict[str, Any] = decode({"data": event.data}, EVENT_DOCUMENTS)[0]["data"]
    return data


def event_json(event: Event, view: HostView) -> EventJson:
    """An event as the API shows it; the nodes its data names as the reader's view shows them.

    Stored data that cannot be read is shown empty, and ``unreadable`` names it."""
    assert event.seq is not None, "an event is shown once stored"
    decoded, unreadable = decode({"data": event.data}, EVENT_DOCUMENTS)
    body: EventJson = {
        "id": event.id,
        "seq": event.seq,
        "type": event.type,
        "subjectId": event.subject_id,
        "at": format_time(event.at),
        "data": view.event_data(decoded["data"]),
    }
    if unreadable:
        body["unreadable"] = unreadable
    return body

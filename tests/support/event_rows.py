"""Event rows written with a DriverStatement, for the tests of the driver's statements and of transactions."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import text

from bcfleet.store.driver_sql import DriverStatement
from bcfleet.store.models import Event

if TYPE_CHECKING:
    from bcfleet.fleet import Fleet

AT = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)
INSERT_EVENT = DriverStatement(Event.__table__.insert())  # type: ignore[attr-defined]


def event_row(event_id: str, kind: str) -> dict[str, Any]:
    """An event of type `kind` with no tenant, subject or data, at AT."""
    return {
        "id": event_id,
        "type": kind,
        "tenant_id": None,
        "subject_id": None,
        "data": {},
        "at": AT,
    }


def stored_ids(fleet: Fleet, kind: str) -> list[str]:
    """The ids of the stored events of type `kind`, in id order."""
    with fleet.read() as session:
        rows = session.execute(
            text("SELECT id FROM events WHERE type = :kind ORDER BY id"), {"kind": kind}
        ).scalars()
        return list(rows)

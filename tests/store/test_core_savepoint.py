"""The placement's plain-SQL savepoint undoes what was written after it and keeps what came
before, and a released one keeps its writes, on both engines."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text
from sqlmodel import Session

from bcfleet.fleet import Fleet
from bcfleet.store.driver_sql import DriverStatement
from bcfleet.store.models import Event
from bcfleet.store.uow import CoreSavepoint

AT = datetime(2026, 12, 2, 13, 0, tzinfo=UTC)
INSERT_EVENT = DriverStatement(Event.__table__.insert())  # type: ignore[attr-defined]


def _write(session: Session, event_id: str) -> None:
    INSERT_EVENT.run(
        session,
        {
            "id": event_id,
            "type": "test.savepoint",
            "tenant_id": None,
            "subject_id": None,
            "data": None,
            "at": AT,
        },
    )


def _stored(fleet: Fleet) -> list[str]:
    with fleet.read() as session:
        rows = session.execute(
            text("SELECT id FROM events WHERE type = 'test.savepoint' ORDER BY id")
        ).scalars()
        return list(rows)


def test_a_rolled_back_savepoint_undoes_only_what_came_after_it(any_fleet: Fleet) -> None:
    with any_fleet.write() as session:
        _write(session, "evt_before")
        savepoint = CoreSavepoint(session)
        _write(session, "evt_undone")
        savepoint.rollback()
        _write(session, "evt_after")
    assert _stored(any_fleet) == ["evt_after", "evt_before"]


def test_a_released_savepoint_keeps_its_writes_and_a_second_one_can_follow(
    any_fleet: Fleet,
) -> None:
    with any_fleet.write() as session:
        first = CoreSavepoint(session)
        _write(session, "evt_kept")
        first.release()
        second = CoreSavepoint(session)
        _write(session, "evt_undone")
        second.rollback()
    assert _stored(any_fleet) == ["evt_kept"]

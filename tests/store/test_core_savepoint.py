"""The placement's plain-SQL savepoint undoes what was written after it and keeps what came
before, and a released one keeps its writes, on both engines."""

from __future__ import annotations

from sqlmodel import Session

from bcfleet.fleet import Fleet
from bcfleet.store.uow import CoreSavepoint
from tests.support.event_rows import INSERT_EVENT, event_row, stored_ids


def _write(session: Session, event_id: str) -> None:
    INSERT_EVENT.run(session, event_row(event_id, "test.savepoint"))


def _stored(fleet: Fleet) -> list[str]:
    return stored_ids(fleet, "test.savepoint")


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

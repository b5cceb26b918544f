"""A write transaction: everything it wrote, by the ORM or on the driver's cursor, commits
together or not at all, on both engines; an ORM savepoint undoes only its own part."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from bcfleet.fleet import Fleet
from bcfleet.store.driver_sql import connection_of
from bcfleet.store.models import Event
from bcfleet.store.uow import current_revision
from tests.support.event_rows import AT, INSERT_EVENT, event_row, stored_ids


def _by_driver(session: Session, event_id: str) -> None:
    INSERT_EVENT.run(session, event_row(event_id, "test.uow"))


def _by_orm(session: Session, event_id: str) -> None:
    session.add(Event(id=event_id, type="test.uow", at=AT))


def _stored(fleet: Fleet) -> list[str]:
    return stored_ids(fleet, "test.uow")


def _revision(fleet: Fleet) -> int:
    with fleet.read() as session:
        return current_revision(session)


Opener = Callable[[Fleet], AbstractContextManager[Session]]
OPENERS = [
    pytest.param(lambda fleet: fleet.write(), id="write"),
    # write_on_connection (uow.connection_write_session): the transaction is the Core
    # connection's; the session joins it only when the ORM is used.
    pytest.param(lambda fleet: fleet.write_on_connection(), id="write_on_connection"),
]


@pytest.mark.parametrize("opened", OPENERS)
def test_the_orm_and_the_driver_write_in_one_transaction_that_commits(
    any_fleet: Fleet, opened: Opener
) -> None:
    before = _revision(any_fleet)
    with opened(any_fleet) as session:
        _by_driver(session, "evt_a")
        _by_orm(session, "evt_b")
        session.flush()
        assert connection_of(session) is session.connection()
        # the ORM's row and the driver's are seen by the same transaction before it commits
        seen = session.execute(text("SELECT count(*) FROM events WHERE type = 'test.uow'"))
        assert seen.scalar_one() == 2
        _by_orm(session, "evt_c")  # added last: flushed before COMMIT
    assert _stored(any_fleet) == ["evt_a", "evt_b", "evt_c"]
    assert _revision(any_fleet) > before


@pytest.mark.parametrize("opened", OPENERS)
def test_a_broken_flush_or_an_error_saves_nothing_and_leaves_the_connection_clean(
    any_fleet: Fleet, opened: Opener
) -> None:
    before = _revision(any_fleet)
    with pytest.raises(IntegrityError), opened(any_fleet) as session:
        _by_driver(session, "evt_first")
        _by_orm(session, "evt_flushed")
        session.flush()
        _by_orm(session, "evt_flushed")  # the same unique id again
        session.flush()
    with pytest.raises(RuntimeError), opened(any_fleet) as session:
        _by_driver(session, "evt_driver")
        _by_orm(session, "evt_orm")
        session.flush()
        raise RuntimeError("the call failed after writing")
    assert _stored(any_fleet) == []
    assert _revision(any_fleet) == before
    with opened(any_fleet) as session:  # the connection went back to the pool clean
        _by_driver(session, "evt_next")
    assert _stored(any_fleet) == ["evt_next"]


@pytest.mark.parametrize("opened", OPENERS)
def test_an_orm_savepoint_rolled_back_keeps_what_came_before_and_after(
    any_fleet: Fleet, opened: Opener
) -> None:
    with opened(any_fleet) as session:
        _by_orm(session, "evt_before")
        savepoint = session.begin_nested()
        _by_driver(session, "evt_undone")
        _by_orm(session, "evt_undone_too")
        session.flush()
        savepoint.rollback()
        _by_driver(session, "evt_after")
    assert _stored(any_fleet) == ["evt_after", "evt_before"]


@pytest.mark.parametrize("opened", OPENERS)
def test_a_savepoint_begun_after_driver_statements_alone_undoes_the_driver_statements_inside(
    any_fleet: Fleet, opened: Opener
) -> None:
    """On the connection the session has not joined yet when the savepoint begins: the
    SAVEPOINT must still come before the driver's statements made inside it."""
    with opened(any_fleet) as session:
        _by_driver(session, "evt_before")
        savepoint = session.begin_nested()
        _by_driver(session, "evt_undone")
        savepoint.rollback()
        _by_driver(session, "evt_after")
    assert _stored(any_fleet) == ["evt_after", "evt_before"]


def test_on_the_connection_driver_statements_alone_leave_the_session_unbegun(
    any_fleet: Fleet,
) -> None:
    before = _revision(any_fleet)
    with any_fleet.write_on_connection() as session:
        _by_driver(session, "evt_a")
        assert not session.in_transaction()  # the statement ran on the pinned connection
    assert _stored(any_fleet) == ["evt_a"]
    assert _revision(any_fleet) > before


def test_a_transaction_that_changed_nothing_keeps_the_revision(any_fleet: Fleet) -> None:
    before = _revision(any_fleet)
    with any_fleet.write_on_connection() as session:
        session.execute(text("SELECT 1"))
    with any_fleet.write():
        pass
    assert _revision(any_fleet) == before

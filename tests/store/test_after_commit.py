"""uow.after_commit: a callback runs once its write transaction has committed, with the rows it
wrote visible to others, and never when the transaction rolls back; in a transaction() handle,
once the enclosing transaction has committed."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import pytest
from sqlmodel import Session

from bcfleet.fleet import Fleet
from bcfleet.store import uow
from tests.support.event_rows import INSERT_EVENT, event_row, stored_ids

Writer = Callable[[Fleet], AbstractContextManager[Session]]
WRITERS: dict[str, Writer] = {
    "write": lambda fleet: fleet.write(),
    "write_on_connection": lambda fleet: fleet.write_on_connection(),
}


@pytest.fixture(params=sorted(WRITERS))
def writer(request: pytest.FixtureRequest) -> Iterator[Writer]:
    yield WRITERS[request.param]


def test_the_callback_runs_after_commit_and_sees_the_rows(any_fleet: Fleet, writer: Writer) -> None:
    seen: list[list[str]] = []
    with writer(any_fleet) as session:
        INSERT_EVENT.run(session, event_row("evt_after", "test.after"))
        uow.after_commit(session, lambda: seen.append(stored_ids(any_fleet, "test.after")))
        assert seen == []  # not yet: the transaction is open
    assert seen == [["evt_after"]]


def test_a_rolled_back_transaction_runs_no_callback(any_fleet: Fleet, writer: Writer) -> None:
    ran: list[bool] = []
    with pytest.raises(RuntimeError), writer(any_fleet) as session:
        uow.after_commit(session, lambda: ran.append(True))
        raise RuntimeError("rolled back")
    assert ran == []
    with writer(any_fleet):  # the next transaction does not run the dropped one's either
        pass
    assert ran == []


def test_in_a_transaction_handle_it_waits_for_the_enclosing_commit(any_fleet: Fleet) -> None:
    ran: list[bool] = []
    with any_fleet.transaction() as joined:
        with joined.write_on_connection() as session:
            uow.after_commit(session, lambda: ran.append(True))
        assert ran == []
    assert ran == [True]

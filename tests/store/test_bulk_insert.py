"""A bulk insert stores what Connection.execute stores, in as many statements as the driver's
parameter limit needs, and fails as SQLAlchemy's wrapped error, on both engines."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.exc import IntegrityError

from bcfleet.fleet import Fleet
from bcfleet.store import bulk_insert
from bcfleet.store.bulk_insert import BulkInsert
from bcfleet.store.driver_sql import CHANGED_FLAG
from bcfleet.store.models import Event

AT = datetime(2026, 12, 6, 14, 5, 9, 250000, tzinfo=UTC)
EVENTS = BulkInsert(Event.__table__)  # type: ignore[attr-defined]
SHARED = {"state": "running", "nested": [1, 2.5, None, "✓"]}


def _events(prefix: str, count: int) -> list[dict[str, Any]]:
    return [
        {
            "id": f"{prefix}_{i:04d}",
            "type": "test.bulk",
            "tenant_id": None,  # NULL in every row: written in the statement
            "subject_id": f"ins_{i}" if i % 2 else None,  # in some rows: bound
            "data": SHARED if i % 3 else {"n": i},  # shared documents and their own
            "at": AT,
        }
        for i in range(count)
    ]


def _stored(fleet: Fleet, prefix: str) -> list[tuple[Any, ...]]:
    with fleet.read() as session:
        rows = session.connection().execute(
            text("SELECT id, type, subject_id, data, at FROM events WHERE id LIKE :p ORDER BY seq"),
            {"p": f"{prefix}_%"},
        )
        return [(r[0].split("_", 1)[1], *tuple(r)[1:]) for r in rows]


@pytest.mark.parametrize("limit", [None, 13], ids=["one statement", "a statement a row or two"])
def test_rows_are_stored_as_connection_execute_stores_them(
    any_fleet: Fleet, limit: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if limit is not None:  # 6 columns a row: two rows a statement, the last one alone
        monkeypatch.setattr(bulk_insert, "_variables", lambda _driver: limit)
    with any_fleet.write() as session:
        EVENTS.run(session, _events("bulk", 7))
        assert session.connection().info.get(CHANGED_FLAG)
        session.connection().execute(Event.__table__.insert(), _events("core", 7))  # type: ignore[attr-defined]
    assert _stored(any_fleet, "bulk") == _stored(any_fleet, "core")
    assert len(_stored(any_fleet, "bulk")) == 7


def test_a_refused_row_fails_the_insert_as_sqlalchemy_wraps_it(any_fleet: Fleet) -> None:
    with any_fleet.write() as session:
        EVENTS.run(session, _events("once", 2))
    with pytest.raises(IntegrityError), any_fleet.write() as session:
        EVENTS.run(session, _events("once", 3))  # the first two ids are taken
    assert len(_stored(any_fleet, "once")) == 2


def test_values_shared_by_rows_are_processed_once_each() -> None:
    shared, own = {"a": 1}, [{"b": 2}, {"b": 2}]  # own: equal, not the same object
    rows = [{"x": shared, "y": own[0]}, {"x": shared, "y": shared}, {"x": shared, "y": own[1]}]
    seen: list[Any] = []

    def process(value: Any) -> str:
        seen.append(value)
        return repr(value)

    assert bulk_insert._columns(rows, ("y", "x"), (process, None)) == [
        ("{'b': 2}", "{'a': 1}", "{'b': 2}"), (shared, shared, shared)
    ]  # fmt: skip
    assert [id(v) for v in seen] == [id(own[0]), id(shared), id(own[1])]
    seen.clear()
    assert bulk_insert._columns(rows, ("x",), (process,)) == [("{'a': 1}",) * 3]
    assert seen == [shared]

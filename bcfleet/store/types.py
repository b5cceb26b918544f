"""Column types shared by the tables: UTC datetimes that survive SQLite, 64-bit counters, JSON documents."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import BigInteger, DateTime, Integer
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine


class UTCDateTime(TypeDecorator[datetime]):
    """Stores naive UTC, returns aware UTC, on every engine."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:  # noqa: ARG002
        if value is None:
            return None
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:  # noqa: ARG002
        if value is None:
            return None
        return value.replace(tzinfo=UTC)


# Default factories for JSON columns. Plain Python functions, not the `dict`/`list` builtins:
# pydantic inspects a default factory's signature on every construction, and a builtin's
# signature is parsed from text (about 50 µs a call, a third of creating an Instance).
def empty_dict() -> dict[str, Any]:
    return {}


def empty_list() -> list[Any]:
    return []


class BigCounter(TypeDecorator[int]):
    """A cursor or a counter that only grows (event seq, generations, versions, row ids): 64-bit.

    BIGINT (BIGSERIAL for a primary key) on PostgreSQL, whose INTEGER stops at 2^31 - 1;
    INTEGER on SQLite, which is already 64-bit and keeps a primary key the rowid.
    """

    impl = BigInteger
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(Integer())
        return dialect.type_descriptor(BigInteger())

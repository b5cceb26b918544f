"""Column types shared by the tables: UTC datetimes that survive SQLite, 64-bit counters, JSON
documents, entity states read back as their enums."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, ClassVar, TypeVar

from sqlalchemy import BigInteger, DateTime, Integer, String
from sqlalchemy.engine import Dialect
from sqlalchemy.types import TypeDecorator, TypeEngine

from bcfleet.domain.states import (
    DeliveryState,
    HostState,
    InstanceState,
    PoolKind,
    ReservationState,
)


class UTCDateTime(TypeDecorator[datetime]):
    """Stores naive UTC, returns aware UTC, on every engine."""

    impl = DateTime
    cache_ok = True

    def bind_processor(self, dialect: Dialect) -> Callable[[Any], Any] | None:
        """One processor a dialect for every column of this type alike, so that a statement run
        on the driver's cursor converts a time bound in several columns once
        (store/driver_sql.py remembers the last value a processor converted)."""
        # kept in the dialect (its processors refer to it: a weak map's key would never go)
        by_impl: dict[str, Callable[[Any], Any] | None] = dialect.__dict__.setdefault(
            _UTC_BIND_PROCESSORS, {}
        )
        key = repr(self.impl_instance)  # the stored form: DateTime's arguments
        if key not in by_impl:
            by_impl[key] = super().bind_processor(dialect)
        return by_impl[key]

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


_UTC_BIND_PROCESSORS = "_bcfleet_utc_bind_processors"


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


E = TypeVar("E", bound=StrEnum)


class EnumText(TypeDecorator[E]):
    """A state or kind column: the member's text in the database (the same VARCHAR as a plain
    string column) and the member itself when read back, so code typed with the enum gets it.

    Text outside the enum passes through both ways: a filter on an unknown state matches
    nothing, and a value written by hand into one row never breaks the reads of the others."""

    impl = String  # SQLModel's str columns are AutoString: VARCHAR as well
    cache_ok = True
    enum: ClassVar[type[StrEnum]]

    def process_bind_param(self, value: str | None, dialect: Dialect) -> str | None:  # noqa: ARG002
        return None if value is None else str(value)

    def process_result_value(self, value: str | None, dialect: Dialect) -> E | None:  # noqa: ARG002
        if value is None:
            return None
        try:
            return self.enum(value)  # type: ignore[return-value]
        except ValueError:
            return value  # type: ignore[return-value]


class InstanceStateColumn(EnumText[InstanceState]):
    enum = InstanceState
    cache_ok = True


class ReservationStateColumn(EnumText[ReservationState]):
    enum = ReservationState
    cache_ok = True


class HostStateColumn(EnumText[HostState]):
    enum = HostState
    cache_ok = True


class DeliveryStateColumn(EnumText[DeliveryState]):
    enum = DeliveryState
    cache_ok = True


class PoolKindColumn(EnumText[PoolKind]):
    enum = PoolKind
    cache_ok = True

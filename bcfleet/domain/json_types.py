"""The markers a typed JSON document puts on a string: its format and the values it may take."""

from dataclasses import dataclass
from typing import Annotated


@dataclass(frozen=True)
class Format:
    """A string's JSON Schema format, as ``Annotated[str, Format("date-time")]`` says it."""

    name: str


@dataclass(frozen=True)
class OneOf:
    """A string that is one of ``values``, as ``Annotated[str, OneOf(...)]`` says it."""

    values: tuple[str, ...]


Time = Annotated[str, Format("date-time")]
"""An RFC 3339 UTC time (clock.format_time)."""

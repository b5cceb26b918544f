"""How long an API token lives: '--expires-in 30d' parsed and bounded, for IamAPI's tokens."""

from __future__ import annotations

from datetime import datetime, timedelta

from bcfleet.domain.durations import format_duration, parse_duration
from bcfleet.errors import InvalidInputError

# Ten years: long enough for any agent's token, short enough that "forever" is a choice
# (no expiry), never a typo.
MAX_TOKEN_LIFETIME = timedelta(days=3650)


def token_lifetime(text: str | None) -> timedelta | None:
    """The lifetime of '30d', '12h', …; None (no expiry) for None; INVALID_INPUT past 10 years."""
    if text is None:
        return None
    lifetime = parse_duration(text, field="expiresIn")
    if lifetime > MAX_TOKEN_LIFETIME:
        raise InvalidInputError(
            f"invalid expiresIn {text!r}: longer than the maximum of "
            f"{format_duration(MAX_TOKEN_LIFETIME)}",
            {"field": "expiresIn", "value": text},
        )
    return lifetime


def expiry(now: datetime, lifetime: timedelta | None) -> datetime | None:
    """When a token made now with that lifetime expires (None: never)."""
    return now + lifetime if lifetime is not None else None


def kept_lifetime(created_at: datetime, expires_at: datetime | None) -> timedelta | None:
    """The lifetime a rotated token passes on to its successor (None: it never expired)."""
    return expires_at - created_at if expires_at is not None else None

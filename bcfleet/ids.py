"""Prefixed ULID ids (pool_…, flv_…, node_…, ins_…): sortable by creation time, seedable for demos."""

from __future__ import annotations

import base64
import os
import random
import re
import threading
from datetime import UTC, datetime, timedelta

PREFIXES = frozenset(
    {
        "pool",
        "flv",
        "node",
        "ins",
        "rsv",
        "alloc",
        "pacct",
        "evt",
        "prn",
        "tok",
        "pol",
        "bkg",
        "lock",
        "run",
        "svc",
        "idx",
        "env",
        "usg",
        "dlq",
        "plan",
        "whk",
        "srv",
        "flt",
    }
)


class IdFactory:
    """Makes ids from a clock's time and a random source (os.urandom unless seeded)."""

    def __init__(self, seed: int | None = None) -> None:
        self._random = random.Random(seed) if seed is not None else None
        self._lock = threading.Lock()
        self._last_time: tuple[int, str] = (-1, "")

    @property
    def seeded(self) -> bool:
        """Whether the ids (and so the fleet built with them) are reproducible."""
        return self._random is not None

    def _entropy(self) -> bytes:
        if self._random is None:
            return os.urandom(10)
        with self._lock:  # randbytes(10)'s own bytes, without its Python-level call
            return self._random.getrandbits(80).to_bytes(10, "little")

    def new(self, prefix: str, at: datetime) -> str:
        """A new id such as 'flv_01jz3k…' for the given time."""
        if prefix not in PREFIXES:
            raise ValueError(f"unknown id prefix {prefix!r}")
        return f"{prefix}_{self._letters_of_time(at)}{_entropy_letters(self._entropy())}"

    def new_many(self, prefix: str, at: datetime, count: int) -> list[str]:
        """`count` new ids of one kind and time, as `count` calls of new() make them (a batch's).

        The ids share their first ten letters (the two zero bits and the time); the random
        80 bits of all of them are one base32 text, made at once (_random_letters)."""
        if prefix not in PREFIXES:
            raise ValueError(f"unknown id prefix {prefix!r}")
        head = f"{prefix}_{self._letters_of_time(at)}"
        if self._random is None:
            raw = os.urandom(10 * count)
        else:
            with self._lock:  # the seeded stream in the order new() would take it
                raw = b"".join([self._random.randbytes(10) for _ in range(count)])
        letters = _random_letters(raw)
        return [head + letters[i : i + 16] for i in range(0, 16 * count, 16)]

    def _letters_of_time(self, at: datetime) -> str:
        """An id's first ten letters, of its time in milliseconds; the last time's are kept (ids
        made together share their time: an instance, its allocation and its event)."""
        millis = _millis(at)
        last = self._last_time
        if last[0] == millis:
            return last[1]
        letters = _time_letters(millis)
        self._last_time = (millis, letters)
        return letters


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)


def _millis(at: datetime) -> int:
    """Milliseconds since 1970 of a time, as int(at.timestamp() * 1000) counts them: for an
    aware time (a clock's) by exact arithmetic, which costs a third of timestamp()'s; a naive
    one is local time, as timestamp() reads it."""
    if at.tzinfo is None:
        return int(at.timestamp() * 1000)
    return (at - _EPOCH) // _ONE_MS


CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
_PAIRS = tuple(a + b for a in CROCKFORD for b in CROCKFORD)  # every 10 bits as two letters


def ulid_text(raw: bytes) -> str:
    """A ULID's text in lower case: its 16 bytes in Crockford base32, two leading zero bits
    first (ULID's own string, made without building the object): the time's ten letters, then
    the 80 random bits' sixteen."""
    if len(raw) != 16:
        raise ValueError("a ULID is 16 bytes")
    return _time_letters(int.from_bytes(raw[:6], "big")) + _entropy_letters(raw[6:])


def _time_letters(millis: int) -> str:
    """A ULID's first ten letters: two zero bits and its 48 bits of milliseconds, as five pairs
    of letters (every 10 bits one pair)."""
    if millis < 0 or millis >> 48:
        raise OverflowError("an id's time is 48 bits of milliseconds since 1970")
    pairs = _PAIRS
    return (
        pairs[millis >> 40]
        + pairs[(millis >> 30) & 1023]
        + pairs[(millis >> 20) & 1023]
        + pairs[(millis >> 10) & 1023]
        + pairs[millis & 1023]
    )


_LOW_40 = (1 << 40) - 1


def _entropy_letters(raw: bytes) -> str:
    """A ULID's last sixteen letters, of its 80 random bits (10 bytes): eight pairs of letters,
    taken from two 40-bit halves (small ints, cheaper to shift than the whole)."""
    value = int.from_bytes(raw, "big")
    high, low = value >> 40, value & _LOW_40
    pairs = _PAIRS
    return "".join(
        (
            pairs[high >> 30], pairs[(high >> 20) & 1023], pairs[(high >> 10) & 1023],
            pairs[high & 1023],
            pairs[low >> 30], pairs[(low >> 20) & 1023], pairs[(low >> 10) & 1023],
            pairs[low & 1023],
        )
    )  # fmt: skip


_FROM_BASE32 = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", CROCKFORD.encode())


def _random_letters(raw: bytes) -> str:
    """ULIDs' last 16 letters, of their 80 random bits each (10 bytes of `raw` an id, whose
    bits start at a letter's): RFC 4648 base32 (the same 5 bits a letter) in Crockford's
    lower-case alphabet. For many ids at once; one id's are _entropy_letters'."""
    return base64.b32encode(raw).translate(_FROM_BASE32).decode("ascii")


ULID_TEXT = re.compile(r"[0-7][0-9a-hjkmnp-tv-z]{25}")
"""What follows an id's prefix and '_': a ULID in lower-case Crockford base32 (IdFactory.new)."""


def has_prefix(value: str, prefix: str) -> bool:
    """True when value is an id of that kind ('pool_01…'): the prefix, '_' and a ULID.

    The one rule for an id's format: lookups tell ids from names with it, and the host
    agent checks every id the server sends with it before the id names a file.
    """
    head = prefix + "_"
    return value.startswith(head) and ULID_TEXT.fullmatch(value, len(head)) is not None

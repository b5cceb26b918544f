"""Idempotency keys: the same key with the same input answers what the first call made.

A client that lost the answer to a create sends it again with the same key and gets the
object the first call made, once, whatever happened in between. The same key with other
input is CONFLICT. Keys are per tenant; the input is compared by a digest of the fields
that decide what is made.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from bcfleet.domain.bounds import check_optional_text
from bcfleet.errors import ConflictError

IDEMPOTENCY_KEY_MAX = 200
FIELD = "idempotencyKey"


def check_idempotency_key(key: str | None) -> None:
    """INVALID_INPUT unless the key is absent or 1..IDEMPOTENCY_KEY_MAX printable characters."""
    check_optional_text(FIELD, key, IDEMPOTENCY_KEY_MAX)


def item_key(key: str, index: int) -> str:
    """The idempotency key of the index-th instance (from 1) of a batch sent with `key`.

    Every instance keeps a key of its own, so a batch sent again answers the instances it
    made, one by one; a single create whose key is one of these is taken for that instance.
    """
    return f"{key}/{index}"


def input_digest(fields: Mapping[str, Any]) -> str:
    """The digest a replay's input is compared by (JSON with sorted keys, SHA-256)."""
    return hashlib.sha256(json.dumps(fields, sort_keys=True).encode()).hexdigest()


def check_replay(key: str, digest: str, stored_digest: str | None, kind: str, made_id: str) -> None:
    """CONFLICT when a key comes back with input other than the input that made `made_id`."""
    if stored_digest != digest:
        raise ConflictError("idempotency key reused with other input", {FIELD: key, kind: made_id})

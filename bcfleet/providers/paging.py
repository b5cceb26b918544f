"""Which page of a provider list comes next; the Hetzner client asks this after every page.

Hetzner documents two equivalent signs: ``meta.pagination.next_page`` in the
body and a ``Link`` header with ``rel="next"`` (RFC 8288). The body wins when
it says anything; otherwise the ``page`` of the next link is taken. Only the
page number is taken from a link, never its host or path, so a link cannot send
the token elsewhere. A next page must lie after the current one, so a provider
answering the same page again cannot loop the client forever.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit


def next_page(payload: dict[str, Any], next_link: str | None, current: int) -> int | None:
    """The page after ``current``, or None when this was the last one."""
    meta = payload.get("meta")
    pagination = meta.get("pagination") if isinstance(meta, dict) else None
    if isinstance(pagination, dict) and "next_page" in pagination:
        return _after(pagination.get("next_page"), current)
    if next_link:
        pages = parse_qs(urlsplit(next_link).query).get("page") or []
        return _after(pages[0] if pages else None, current)
    return None


def _after(candidate: Any, current: int) -> int | None:
    if isinstance(candidate, bool):
        return None
    if isinstance(candidate, str) and candidate.isdigit():
        candidate = int(candidate)
    if isinstance(candidate, int) and candidate > current:
        return candidate
    return None

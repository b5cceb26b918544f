"""Usage windows as RFC 4180 CSV: the one writer of `fleet usage export` and GET /v1/usage/export.

RFC 4180: records end in CRLF, and a field holding a comma, a double quote, a CR or an LF is
quoted (quotes doubled). Python's csv module does exactly that with its default dialect.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

CSV_FIELDS = (
    "windowStart",
    "windowEnd",
    "tenantId",
    "subjectKind",
    "subjectId",
    "poolId",
    "meter",
    "quantity",
)


def csv_lines(rows: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """The header record, then one record per window, each as its own string."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    yield _drain(buffer)
    for row in rows:
        writer.writerow(row)
        yield _drain(buffer)


def _drain(buffer: io.StringIO) -> str:
    text = buffer.getvalue()
    buffer.seek(0)
    buffer.truncate()
    return text

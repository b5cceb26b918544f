"""Read a document file under its size limit as UTF-8 text, and JSON files behind the JSON guard.

Called by ``reconcile/load.py`` (FleetConfig), ``reconcile/saved.py`` (saved plans) and
``cli/hosts.py`` (``fleet hosts report --file``). Reads at most one byte past the limit, so a
huge file, ``/dev/zero`` or a pipe that never ends costs no more than the limit.
"""

from __future__ import annotations

import json
import os
from typing import Any

from bcfleet.domain.document_limits import Located, json_problem, too_large, utf8_problem
from bcfleet.errors import InvalidInputError


class DocumentRefused(Exception):
    """The file cannot be read (``unreadable`` holds the system's reason), is too large, is not
    UTF-8 or breaks the JSON guard; ``where`` says why and where."""

    def __init__(self, where: Located, *, unreadable: str | None = None) -> None:
        super().__init__(where.message)
        self.where = where
        self.unreadable = unreadable


def read_text(path: str | os.PathLike[str], *, limit: int, what: str) -> str:
    """The file's text (a leading BOM dropped); DocumentRefused past ``limit`` bytes."""
    name = os.fspath(path)
    try:
        with open(name, "rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        where = Located(1, 1, f"cannot read the file: {reason}")
        raise DocumentRefused(where, unreadable=reason) from exc
    if len(raw) > limit:
        raise DocumentRefused(Located(1, 1, too_large(what, limit)))
    problem = utf8_problem(raw)
    if problem is not None:
        raise DocumentRefused(problem)
    return raw.decode("utf-8-sig")


def load_json(path: str | os.PathLike[str], *, limit: int, what: str) -> Any:
    """A JSON file's value; INVALID_INPUT ``file:line:column: message`` for anything else."""
    name = os.fspath(path)
    try:
        return parse_json_text(read_text(name, limit=limit, what=what))
    except DocumentRefused as refused:
        raise located_error(name, refused.where) from None


def parse_json_text(text: str) -> Any:
    """JSON text's value behind the JSON guard (nesting, number length); DocumentRefused
    at the line and column where it breaks."""
    problem = json_problem(text)
    if problem is not None:
        raise DocumentRefused(problem)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise DocumentRefused(Located(exc.lineno, exc.colno, exc.msg)) from None
    except (ValueError, RecursionError) as exc:  # guarded above; kept as the last net
        raise DocumentRefused(Located(1, 1, f"not JSON: {exc}")) from None


def located_error(name: str, where: Located) -> InvalidInputError:
    """INVALID_INPUT ``file:line:column: message`` with the place in ``details``."""
    return InvalidInputError(
        f"{name}:{where.line}:{where.column}: {where.message}",
        {"file": name, "line": where.line, "column": where.column},
    )

"""The JSON Schemas bcfleet ships; the API, the agent and validators load them here."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from bcfleet.errors import NotFoundError

_SUFFIX = ".schema.json"


def schema_names() -> list[str]:
    """The short names of the shipped schemas, such as "inventory"."""
    files = resources.files(__name__)
    return sorted(
        entry.name.removesuffix(_SUFFIX)
        for entry in files.iterdir()
        if entry.name.endswith(_SUFFIX)
    )


@cache
def _schema_text(file_name: str) -> str:
    entry = resources.files(__name__).joinpath(file_name)
    if not entry.is_file():
        raise NotFoundError(f"no schema named {file_name!r}", {"available": schema_names()})
    return entry.read_text(encoding="utf-8")


def load_schema(name: str) -> dict[str, Any]:
    """A fresh parsed copy of a shipped schema: "inventory" or "inventory.schema.json"."""
    file_name = name if name.endswith(_SUFFIX) else f"{name}{_SUFFIX}"
    document: dict[str, Any] = json.loads(_schema_text(file_name))
    return document

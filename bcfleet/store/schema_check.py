"""What differs between a database's tables and the models, in words (alembic's autogenerate
comparison), and what it lacks of the catalog revision (store/catalog_revision.py); `fleet db
upgrade` refuses a database that differs (store/schema.py)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, Table

from bcfleet.errors import SchemaMismatchError
from bcfleet.store.catalog_revision import catalog_revision_missing
from bcfleet.store.models import load_all

SHOWN = 8
"""Differences named in the message; details.differences holds them all."""

REPAIRED_FROM = "0002"
"""The revision from which the migrations add whatever the tables lack (migration 0003)."""


def _kept(_obj: Any, _name: Any, type_: str, reflected: bool, compare_to: Any) -> bool:
    """A table of the database that no model names is someone else's, not a difference."""
    return not (type_ == "table" and reflected and compare_to is None)


def differences(engine: Engine) -> list[str]:
    """Each difference between the database's tables and the models, as a sentence."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext
    from sqlmodel import SQLModel

    load_all()
    opts = {"compare_type": True, "include_object": _kept}
    with engine.connect() as connection:
        context = MigrationContext.configure(connection, opts=opts)
        found = compare_metadata(context, SQLModel.metadata)
        lacking = catalog_revision_missing(connection)
    missing = {d[1].name for d in found if isinstance(d, tuple) and d[0] == "add_table"}
    out: list[str] = []
    for diff in found:
        for each in diff if isinstance(diff, list) else [diff]:
            if not (each[0] == "add_index" and each[1].table.name in missing):  # said with it
                out.append(_describe(each, engine))
    return out + lacking


def _columns(constraint: Any) -> str:
    return ", ".join(str(c.name) for c in constraint.columns)


def _describe(diff: tuple[Any, ...], engine: Engine) -> str:
    kind = diff[0]
    if kind in ("add_table", "remove_table"):
        table: Table = diff[1]
        return f"table {table.name} is {_where(kind)}"
    if kind in ("add_column", "remove_column"):
        return f"column {diff[2]}.{diff[3].name} is {_where(kind)}"
    if kind in ("add_index", "remove_index", "add_constraint", "remove_constraint"):
        what = diff[1]
        noun = "index" if kind.endswith("index") else "constraint"
        name = f" {what.name}" if what.name else ""
        return f"{noun}{name} on {what.table.name} ({_columns(what)}) is {_where(kind)}"
    if kind in ("add_fk", "remove_fk"):
        fk = diff[1]
        return f"foreign key on {fk.table.name} ({_columns(fk)}) to {fk.referred_table.name} is {_where(kind)}"
    if kind == "modify_type":
        found, wanted = (t.compile(dialect=engine.dialect) for t in (diff[5], diff[6]))
        return f"column {diff[2]}.{diff[3]} is {found}, the models say {wanted}"
    if kind == "modify_nullable":
        found, wanted = ("NULL" if n else "NOT NULL" for n in (diff[5], diff[6]))
        return f"column {diff[2]}.{diff[3]} is {found}, the models say {wanted}"
    return f"{kind.replace('_', ' ')} on {diff[2]}.{diff[3]}"


def _where(kind: str) -> str:
    return "missing" if kind.startswith("add") else "there but not in the models"


def schema_mismatch(revision: str | None, found: list[str]) -> SchemaMismatchError:
    """The refusal: what differs, and what to do."""
    shown = "; ".join(found[:SHOWN]) + (
        f"; and {len(found) - SHOWN} more" if len(found) > SHOWN else ""
    )
    return SchemaMismatchError(
        f"The database says it is at revision {revision}, but its tables are not that "
        f"revision's ({len(found)} differences: {shown}). Restore it "
        f"from a backup; or, if an older bcfleet made it, set its revision back to "
        f"{REPAIRED_FROM} (UPDATE alembic_version SET version_num = '{REPAIRED_FROM}') and run "
        f"`fleet db upgrade` again: from {REPAIRED_FROM} on the migrations add what the "
        "tables lack.",
        {"revision": revision, "differences": found},
    )

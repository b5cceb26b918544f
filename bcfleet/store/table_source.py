"""The text of bcfleet/store/tables.py, rendered from the SQLModel classes: `python -m bcfleet.store.table_source`.

tests/store/test_core_tables.py renders it again and fails when the file differs, so the Core
tables a read without the ORM uses stay the classes' columns, types and primary keys.
"""

from __future__ import annotations

import sys
from pathlib import Path

from sqlalchemy import Column, Table
from sqlmodel import SQLModel

from bcfleet.store.models import load_all

TARGET = Path(__file__).with_name("tables.py")
HEADER = '''\
"""Every table as a SQLAlchemy Core Table, for reads that run without SQLModel and the ORM.

Generated from the SQLModel classes (bcfleet/store/models) by `python -m bcfleet.store.table_source`;
tests/store/test_core_tables.py fails when the two differ. Columns, their types and primary keys
only: the schema is created and migrated from the classes, never from these tables.
"""

# Generated: edit the SQLModel classes and run `python -m bcfleet.store.table_source` instead.
'''
_STRING = "AutoString"
"""SQLModel's str column type: plain VARCHAR on SQLite and PostgreSQL, as String is."""


def _type_text(column: Column[object]) -> tuple[str, str]:
    """The column type's constructor call and the name it imports."""
    text = repr(column.type)
    name = text.split("(", 1)[0]
    if name == _STRING:
        return "String" + text[len(_STRING) :], "String"
    return text, name


def _module_of(column: Column[object]) -> str:
    """Where tables.py imports the column's type from: SQLAlchemy's own from `sqlalchemy`."""
    module = type(column.type).__module__
    return "sqlalchemy" if module.startswith(("sqlalchemy.", "sqlmodel.")) else module


def _column_text(column: Column[object]) -> str:
    call, _ = _type_text(column)
    key = ", primary_key=True" if column.primary_key else ""
    return f'    Column("{column.name}", {call}{key}),'


def render() -> str:
    """tables.py as it should be: one Table per SQLModel table, by name."""
    load_all()
    tables: list[Table] = sorted(SQLModel.metadata.tables.values(), key=lambda t: t.name)
    imports: dict[str, set[str]] = {"sqlalchemy": {"Column", "MetaData", "Table"}}
    body: list[str] = []
    for table in tables:
        body += ["", "", f"{table.name.upper()} = Table(", f'    "{table.name}",', "    METADATA,"]
        for column in table.columns:
            _, name = _type_text(column)
            imports.setdefault(_module_of(column), set()).add(name)
            body.append(_column_text(column))
        body.append(")")
    lines = [HEADER, "from __future__ import annotations", ""]
    for module in sorted(imports, key=lambda m: (m != "sqlalchemy", m)):
        names = sorted(imports[module], key=lambda n: (not n.isupper(), n))  # as isort orders them
        lines += [f"from {module} import (", *(f"    {n}," for n in names), ")"]
        if module == "sqlalchemy":
            lines.append("")
    lines += [
        "",
        "METADATA = MetaData()",
        '"""Their own metadata: never created, never migrated."""',
    ]
    return "\n".join(lines + body) + "\n"


if __name__ == "__main__":
    TARGET.write_text(render())
    sys.stdout.write(f"wrote {TARGET.name}\n")

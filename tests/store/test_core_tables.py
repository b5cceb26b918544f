"""bcfleet/store/tables.py is the SQLModel classes' columns, as Core tables for reads without the ORM."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import String, inspect
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Dialect
from sqlmodel.sql.sqltypes import AutoString

from bcfleet.fleet import Fleet
from bcfleet.store import table_source, tables
from bcfleet.store.catalog_revision import CATALOG_REVISION


def test_the_core_tables_are_rendered_from_the_classes_as_they_are() -> None:
    """Edit a SQLModel class and this fails until `python -m bcfleet.store.table_source` runs."""
    assert Path(tables.__file__).read_text() == table_source.render()


def test_the_core_tables_have_the_columns_of_the_schema_the_classes_create(tmp_path: Path) -> None:
    fleet = Fleet.open(f"sqlite:///{tmp_path}/fleet.db")
    try:
        schema = inspect(fleet.engine)
        bookkeeping = {"alembic_version", CATALOG_REVISION.name}  # no model's: not read as one
        created = {name for name in schema.get_table_names() if name not in bookkeeping}
        assert created == set(tables.METADATA.tables)
        for name, table in tables.METADATA.tables.items():
            assert [c["name"] for c in schema.get_columns(name)] == list(table.columns.keys())
            key = schema.get_pk_constraint(name)["constrained_columns"]
            assert sorted(key) == sorted(c.name for c in table.primary_key.columns)
    finally:
        fleet.close()


@pytest.mark.parametrize("dialect", [sqlite.dialect(), postgresql.dialect()], ids=["sqlite", "pg"])
def test_a_string_column_is_read_and_written_as_sqlmodels_str_column_is(dialect: Dialect) -> None:
    """tables.py writes String where SQLModel has AutoString: the same SQL type, no conversion."""
    for core, orm in ((String(), AutoString()), (String(length=63), AutoString(length=63))):
        assert core.compile(dialect=dialect) == orm.compile(dialect=dialect)
        assert core.bind_processor(dialect) is None and orm.bind_processor(dialect) is None
        assert core.result_processor(dialect, None) is None
        assert orm.result_processor(dialect, None) is None

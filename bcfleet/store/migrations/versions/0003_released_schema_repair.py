"""bring any database stamped 0001 or 0002 to the schema 0002 stands for

Revision ID: 0003
Revises: 0002

0001_schema.py was regenerated in place while the first releases were made: each new table,
column, index and 64-bit counter went into it, not into a new migration. So databases in use
say 0001 (or 0002) and hold one of about ten different schemas: the one of 2026-11-30 has no
job_faults table, no provider_accounts.sealed_token, no instances.idempotency_key, and
32-bit events.seq and counters on PostgreSQL. Alembic saw 0001 and had nothing to do.

Revision 0002 stands for what 0001_schema.py and 0002 say today: the schema fresh databases got
most recently. Those two files stay as they are (rewriting them again would make yet another
schema named 0001). This migration rebuilds that schema from the two files' own operations,
compares the database with it (alembic's autogenerate comparison) and adds what is missing:
tables, columns (a NOT NULL one filled with the value its rows meant), indexes, unique
constraints and foreign keys, nullability, and on PostgreSQL BIGINT for the columns and
sequences that are 64-bit; it drops the indexes that schema does not have (0002's among them).
It drops no table and no column, and keeps every row. On a database that already has the
schema it changes nothing, and run again it finds nothing to do.

From this revision on, a published migration never changes: a schema change is a new one.
"""

import importlib.util
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import sqlalchemy as sa
from alembic import op
from alembic.autogenerate import produce_migrations
from alembic.operations import ops
from alembic.runtime.migration import MigrationContext

revision: str = '0003'
down_revision: str | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

RELEASED = ("0001_schema.py", "0002_fewer_index_writes_per_placement.py")
"""The files whose operations, in order, define the schema revision 0002 stands for."""

FILLS = {("reservations", "node_ids"): "[]"}
"""What a NOT NULL column added after its table was released holds in the rows made before it
(a reservation of that time was not pinned to nodes)."""


class _TableRecorder:
    """batch_op of a recorded table: its indexes go into the MetaData."""

    def __init__(self, table: sa.Table) -> None:
        self.table = table

    def f(self, name: str) -> str:
        return name

    def create_index(self, name: str, columns: list[str], unique: bool = False, **kw: Any) -> None:
        sa.Index(name, *(self.table.c[c] for c in columns), unique=unique, **kw)

    def drop_index(self, name: str, **_kw: Any) -> None:
        self.table.indexes.discard(next(i for i in self.table.indexes if i.name == name))


class _Recorder:
    """Stands in for alembic's `op` while a released file's upgrade() runs: the tables it would
    create are built into a MetaData instead of a database."""

    def __init__(self, dialect: Any) -> None:
        self.metadata = sa.MetaData()
        self._bind = SimpleNamespace(dialect=dialect)

    def get_bind(self) -> Any:
        return self._bind

    def execute(self, _statement: Any) -> None:
        """0001's only statement is the revision sequence, which upgrade() below ensures."""

    def create_table(self, name: str, *items: Any, **kw: Any) -> sa.Table:
        return sa.Table(name, self.metadata, *items, **kw)

    @contextmanager
    def batch_alter_table(self, name: str, schema: str | None = None) -> Iterator[_TableRecorder]:
        yield _TableRecorder(self.metadata.tables[name])


def released_schema(dialect: Any) -> sa.MetaData:
    """The tables revision 0002 stands for, from the released files' own operations."""
    recorder = _Recorder(dialect)
    for name in RELEASED:
        spec = importlib.util.spec_from_file_location(f"_released_{name[:4]}", Path(__file__).with_name(name))
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.op = recorder  # a copy of the file's module of its own: alembic's is untouched
        module.upgrade()
    return recorder.metadata


def _kept(obj: Any, _name: Any, type_: str, reflected: bool, compare_to: Any) -> bool:
    """Tables and columns the schema does not name are left alone (rows are never dropped)."""
    return not (type_ in ("table", "column") and reflected and compare_to is None)


def _split(table_ops: ops.ModifyTableOps) -> tuple[list[ops.MigrateOperation], list[ops.AddColumnOp]]:
    """The table's operations, with each NOT NULL column added nullable: it is filled, then made
    NOT NULL, after them."""
    now: list[ops.MigrateOperation] = []
    filled: list[ops.AddColumnOp] = []
    for each in table_ops.ops:
        if isinstance(each, ops.AlterColumnOp):  # autoincrement is MySQL's, and unchanged here
            each.kw.pop("autoincrement", None)
            each.kw.pop("existing_autoincrement", None)
        if isinstance(each, ops.AddColumnOp) and not each.column.nullable and each.column.server_default is None:
            filled.append(each)
            column = each.column._copy()
            column.nullable = True
            now.append(ops.AddColumnOp(each.table_name, column))
        else:
            now.append(each)
    return now, filled


def _fill(table_name: str, added: ops.AddColumnOp) -> None:
    name = added.column.name
    if (table_name, name) not in FILLS:
        raise RuntimeError(f"no value is known for the rows of {table_name} without {name}")
    table = sa.table(table_name, sa.column(name))
    op.execute(table.update().values({name: FILLS[(table_name, name)]}))


def _bigint_sequences(changes: list[tuple[str, str]]) -> None:
    """A PostgreSQL serial's sequence is as narrow as the column it was made for: widen it too."""
    bind = op.get_bind()
    for table_name, column in changes:
        sequence = bind.execute(sa.text("SELECT pg_get_serial_sequence(:t, :c)"), {"t": table_name, "c": column}).scalar()
        if sequence is not None:
            op.execute(f"ALTER SEQUENCE {sequence} AS BIGINT")


def _widened(operations: list[ops.MigrateOperation]) -> list[tuple[str, str]]:
    return [
        (each.table_name, each.column_name)
        for each in operations
        if isinstance(each, ops.AlterColumnOp) and each.modify_type is not None
    ]


def _unnamed_unique(each: ops.MigrateOperation) -> bool:
    return isinstance(each, ops.CreateUniqueConstraintOp) and each.constraint_name is None


def _apply(table_ops: ops.ModifyTableOps, batch: bool) -> None:
    now, filled = _split(table_ops)
    name = table_ops.table_name
    if batch:  # an unnamed constraint goes into the copy of the table, as 0001 wrote it
        unique = [each for each in now if _unnamed_unique(each)]
        now = [each for each in now if not _unnamed_unique(each)]
        args = tuple(sa.UniqueConstraint(*each.columns) for each in unique)  # type: ignore[attr-defined]
        with op.batch_alter_table(name, table_args=args, recreate="always" if args else "auto") as table_op:
            for each in now:
                table_op.invoke(each)
    else:
        for each in now:
            op.invoke(each)
    for added in filled:
        _fill(name, added)
    if batch and filled:
        with op.batch_alter_table(name) as table_op:
            for added in filled:
                table_op.alter_column(added.column.name, existing_type=added.column.type, nullable=False)
    elif not batch:
        for added in filled:
            op.alter_column(name, added.column.name, existing_type=added.column.type, nullable=False)
        _bigint_sequences(_widened(now))


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute("CREATE SEQUENCE IF NOT EXISTS bcfleet_state_revision")
    context = MigrationContext.configure(bind, opts={"compare_type": True, "include_object": _kept})
    script = produce_migrations(context, released_schema(bind.dialect))
    batch = bind.dialect.name == "sqlite"  # SQLite alters most things by copying the table
    assert script.upgrade_ops is not None
    for each in script.upgrade_ops.ops:
        if isinstance(each, ops.ModifyTableOps):
            _apply(each, batch)
        else:
            op.invoke(each)


def downgrade() -> None:
    """Nothing to undo: what this revision added is part of the schema 0002 stands for."""

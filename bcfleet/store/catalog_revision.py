"""The catalog revision: a one-row counter the database bumps on every write to what a placement's lookup reads.

The lookup of a placement (api/lookup.find_for_placement) reads the acting tenant, the pool,
the flavor and the pool's offer to the tenant: the tables in CATALOG_TABLES. Triggers on each
of them bump catalog_revision's one row, whoever writes (any bcfleet process, any version, or
SQL by hand), so a lookup kept under one revision holds while a read of the revision in a
later transaction answers the same number.

On SQLite a row trigger runs an UPDATE for each row written (writers are one at a time). On
PostgreSQL the bump is a constraint trigger deferred to COMMIT, run once a transaction: the
counter's row is locked only while the transaction commits, after every other lock it takes,
and the new number becomes visible together with the rows it counts. A TRUNCATE bumps it too.

Built by migration 0009 and by the fresh schema (store/schema.create_fresh) from the same
statements here, each idempotent. The table is no model's (SQLModel.metadata does not hold it),
so the models' comparison leaves it out: store/schema_check names what of it is missing.
A change to these statements needs a migration of its own.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Connection,
    Integer,
    MetaData,
    Table,
    inspect,
    select,
    text,
)

from bcfleet.store.driver_sql import DriverStatement

CATALOG_TABLES = ("tenants", "pools", "flavors", "pool_offers")
"""What a placement's lookup and the acting tenant's check read (api/lookup, api/auth)."""

CATALOG_REVISION = Table(
    "catalog_revision",
    MetaData(),
    Column("id", Integer, primary_key=True),
    Column("revision", BigInteger, nullable=False),
)

READ_CATALOG_REVISION = DriverStatement(
    select(CATALOG_REVISION.c.revision).where(CATALOG_REVISION.c.id == 1)
)

_STATE_REVISION = Table(  # models.StateRevision's table, named here for a Core read
    "state_revision",
    MetaData(),
    Column("id", Integer, primary_key=True),
    Column("revision", BigInteger, nullable=False),
)
READ_CATALOG_AND_STATE_REVISIONS = DriverStatement(
    select(
        CATALOG_REVISION.c.revision,
        select(_STATE_REVISION.c.revision).where(_STATE_REVISION.c.id == 1).scalar_subquery(),
    ).where(CATALOG_REVISION.c.id == 1)
)
"""SQLite: READ_CATALOG_REVISION's row with the state revision beside it (store/uow.py's, NULL
before the first bump), in one statement (a placement's candidate window checks it)."""

_OPERATIONS = ("insert", "update", "delete")
_PG_FUNCTION = "bcfleet_bump_catalog_revision"
_PG_DONE = "bcfleet.catalog_revision_bumped"  # set for the rest of the transaction


def trigger_names(table: str, sqlite: bool) -> tuple[str, ...]:
    """The triggers that bump the revision on a write to `table`."""
    if sqlite:
        return tuple(f"catalog_revision_{operation}_{table}" for operation in _OPERATIONS)
    return (f"catalog_revision_{table}", f"catalog_revision_truncate_{table}")


def _sqlite_statements() -> list[str]:
    made = [
        "CREATE TABLE IF NOT EXISTS catalog_revision "
        "(id INTEGER NOT NULL PRIMARY KEY, revision BIGINT NOT NULL)",
        "INSERT OR IGNORE INTO catalog_revision (id, revision) VALUES (1, 0)",
    ]
    for table in CATALOG_TABLES:
        for operation, name in zip(_OPERATIONS, trigger_names(table, True), strict=True):
            made.append(
                f"CREATE TRIGGER IF NOT EXISTS {name} AFTER {operation.upper()} ON {table} "
                "BEGIN UPDATE catalog_revision SET revision = revision + 1 WHERE id = 1; END"
            )
    return made


def _postgresql_statements() -> list[str]:
    made = [
        "CREATE TABLE IF NOT EXISTS catalog_revision "
        "(id INTEGER NOT NULL PRIMARY KEY, revision BIGINT NOT NULL)",
        "INSERT INTO catalog_revision (id, revision) VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
        f"CREATE OR REPLACE FUNCTION {_PG_FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN IF current_setting('{_PG_DONE}', true) IS DISTINCT FROM 'yes' THEN "
        "UPDATE catalog_revision SET revision = revision + 1 WHERE id = 1; "
        f"PERFORM set_config('{_PG_DONE}', 'yes', true); "
        "END IF; RETURN NULL; END $$",
    ]
    for table in CATALOG_TABLES:
        at_commit, truncated = trigger_names(table, False)
        made += [
            f"DROP TRIGGER IF EXISTS {at_commit} ON {table}",
            f"CREATE CONSTRAINT TRIGGER {at_commit} AFTER INSERT OR UPDATE OR DELETE ON {table} "
            f"DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION {_PG_FUNCTION}()",
            f"DROP TRIGGER IF EXISTS {truncated} ON {table}",
            f"CREATE TRIGGER {truncated} AFTER TRUNCATE ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {_PG_FUNCTION}()",
        ]
    return made


def install_catalog_revision(connection: Connection) -> None:
    """The counter, its row and the triggers on each catalog table, where missing."""
    sqlite = connection.dialect.name == "sqlite"
    for statement in _sqlite_statements() if sqlite else _postgresql_statements():
        connection.execute(text(statement))


def catalog_revision_missing(connection: Connection) -> list[str]:
    """What of the counter and its triggers the database lacks, as sentences (schema_check)."""
    sqlite = connection.dialect.name == "sqlite"
    tables = set(inspect(connection).get_table_names())
    if CATALOG_REVISION.name not in tables:
        return [f"table {CATALOG_REVISION.name} is missing"]
    present = {str(name) for (name,) in connection.execute(text(_TRIGGERS[sqlite]))}
    return [
        f"trigger {name} on {table} is missing"
        for table in CATALOG_TABLES
        for name in trigger_names(table, sqlite)
        if name not in present
    ]


_TRIGGERS = {
    True: "SELECT name FROM sqlite_master WHERE type = 'trigger'",
    False: "SELECT t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
    " WHERE NOT t.tgisinternal AND c.relnamespace = current_schema()::regnamespace",
}


def remove_catalog_revision(connection: Connection) -> None:
    """The triggers, the function and the counter dropped (migration 0009's downgrade)."""
    sqlite = connection.dialect.name == "sqlite"
    for table in CATALOG_TABLES:
        for name in trigger_names(table, sqlite):
            on = "" if sqlite else f" ON {table}"
            connection.execute(text(f"DROP TRIGGER IF EXISTS {name}{on}"))
    if not sqlite:
        connection.execute(text(f"DROP FUNCTION IF EXISTS {_PG_FUNCTION}()"))
    connection.execute(text("DROP TABLE IF EXISTS catalog_revision"))

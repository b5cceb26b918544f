"""Create or upgrade the schema: a fresh database is built from the tables and stamped, an older one migrated.

Alembic and SQLModel are imported only to write the schema (or to ask Alembic what it knows): opening a fleet whose
schema is at head reads alembic_version with plain SQL and compares it to HEAD_REVISION, so a
command that writes no schema never imports Alembic.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, inspect, text

from bcfleet.store.models import load_all

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
HEAD_REVISION = "0009"
"""The head of migrations/versions (a test keeps the two equal)."""

_ready: set[str] = set()
_ready_lock = threading.Lock()


def alembic_config(engine: Engine) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["engine"] = engine
    return config


def head_revision(engine: Engine) -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()


def schema_revision(engine: Engine) -> str | None:
    """The migration the database is at (alembic's revision id); None before any."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def stamped_revision(engine: Engine) -> str | None:
    """The revision in alembic_version, read with plain SQL (None when there is none)."""
    with engine.connect() as connection:
        rows = connection.execute(text("SELECT version_num FROM alembic_version")).all()
    return str(rows[0][0]) if len(rows) == 1 else None


def upgrade(engine: Engine) -> None:
    """`fleet db upgrade`: apply every migration not yet applied."""
    from alembic import command

    if not inspect(engine).get_table_names():
        create_fresh(engine)
        return
    load_all()
    command.upgrade(alembic_config(engine), "head")
    check_tables(engine)


def check_tables(engine: Engine) -> None:
    """SCHEMA_MISMATCH when the tables differ from the models, which are the head revision's.

    A database whose revision says more than its tables hold (a table dropped by hand, a
    schema written by other code and stamped) would otherwise be called up to date and fail
    in every call that reads what is missing.
    """
    from bcfleet.store.schema_check import differences, schema_mismatch

    found = differences(engine)
    if found:
        raise schema_mismatch(schema_revision(engine), found)


def create_fresh(engine: Engine) -> None:
    """Build the schema from the tables, add the catalog revision's counter and triggers (which
    no table of the models holds), and stamp it at head (Alembic's documented recipe)."""
    from alembic import command
    from sqlmodel import SQLModel

    from bcfleet.store.catalog_revision import install_catalog_revision

    load_all()
    SQLModel.metadata.create_all(engine)
    with engine.begin() as connection:
        install_catalog_revision(connection)
    command.stamp(alembic_config(engine), "head")


def forget_schema(engine: Engine) -> None:
    """Make the next ensure_schema() of this URL look at the database again."""
    with _ready_lock:
        _ready.discard(str(engine.url))


def ensure_schema(engine: Engine) -> None:
    """Create the schema on a fresh database; migrate one that is behind. Once per engine URL."""
    key = str(engine.url)
    with _ready_lock:
        if key in _ready:
            return
        tables = inspect(engine).get_table_names()
        if not tables:
            create_fresh(engine)
        elif "alembic_version" not in tables or stamped_revision(engine) != HEAD_REVISION:
            upgrade(engine)
        if engine.url.database not in (None, "", ":memory:"):  # each in-memory one is new
            _ready.add(key)

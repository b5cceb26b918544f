"""Create or upgrade the schema: a fresh database is built from the tables and stamped, an older one migrated."""

from __future__ import annotations

import threading
from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Engine, Sequence, inspect
from sqlmodel import SQLModel

import bcfleet.store.models  # noqa: F401  (registers every table)

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
REVISION_SEQUENCE = Sequence("bcfleet_state_revision", metadata=SQLModel.metadata)

_ready: set[str] = set()
_ready_lock = threading.Lock()


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["engine"] = engine
    return config


def head_revision(engine: Engine) -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def upgrade(engine: Engine) -> None:
    """`fleet db upgrade`: apply every migration not yet applied."""
    if not inspect(engine).get_table_names():
        create_fresh(engine)
        return
    command.upgrade(alembic_config(engine), "head")


def create_fresh(engine: Engine) -> None:
    """Build the schema from the tables and stamp it at head (Alembic's documented recipe)."""
    SQLModel.metadata.create_all(engine)
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
        if not inspect(engine).get_table_names():
            create_fresh(engine)
        elif current_revision(engine) != head_revision(engine):
            command.upgrade(alembic_config(engine), "head")
        if engine.url.database not in (None, "", ":memory:"):  # each in-memory one is new
            _ready.add(key)

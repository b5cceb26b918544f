"""Alembic environment: runs migrations on the engine bcfleet hands it (or BCFLEET_DB)."""

from __future__ import annotations

from alembic import context
from sqlalchemy import Connection
from sqlmodel import SQLModel

from bcfleet.settings import load_fleet_settings
from bcfleet.store.engine import make_engine
from bcfleet.store.models import load_all

load_all()  # every table, for autogenerate
config = context.config
engine = config.attributes.get("engine") or make_engine(load_fleet_settings().db_url)


def _foreign_keys(connection: Connection, on: bool) -> None:
    """SQLite alters a table by copying it and dropping the old one, which with foreign keys
    enforced deletes (or refuses to delete) what refers to it: Alembic's batch mode wants them
    off. The pragma does nothing inside a transaction, so it goes to the driver outside one."""
    connection.connection.driver_connection.execute(  # type: ignore[union-attr]
        f"PRAGMA foreign_keys={'ON' if on else 'OFF'}"
    )


with engine.connect() as connection:
    sqlite = connection.dialect.name == "sqlite"
    if sqlite:
        _foreign_keys(connection, on=False)
    try:
        context.configure(
            connection=connection,
            target_metadata=SQLModel.metadata,
            render_as_batch=sqlite,
            compare_type=True,
        )
        with context.begin_transaction():
            context.run_migrations()
        connection.commit()
    finally:
        if sqlite:
            connection.rollback()
            _foreign_keys(connection, on=True)

"""Alembic environment: runs migrations on the engine bcfleet hands it (or BCFLEET_DB)."""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

from bcfleet.settings import load_fleet_settings
from bcfleet.store.engine import make_engine
from bcfleet.store.models import load_all

load_all()  # every table, for autogenerate
config = context.config
engine = config.attributes.get("engine") or make_engine(load_fleet_settings().db_url)

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=SQLModel.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()

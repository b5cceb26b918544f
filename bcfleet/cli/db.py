"""`fleet db upgrade|revision`: apply Alembic migrations to the state database."""

from __future__ import annotations

import click

from bcfleet.cli.common import fleet_command, output, state
from bcfleet.fleet import Fleet
from bcfleet.settings import load_fleet_settings


@click.group("db")
def group() -> None:
    """The state database."""


@fleet_command(group, "upgrade")
def upgrade_() -> None:
    """Create or migrate the schema to the newest revision."""
    url = state().db or load_fleet_settings().db_url
    found, where = Fleet.probe(url)  # refuses what is not a fleet's database
    if found != "fleet":
        click.echo(f"Creating a new fleet in {where}.", err=True)
    revision = Fleet.upgrade(url)
    output({"revision": revision}, lambda r: f"Database at revision {r['revision']}.")

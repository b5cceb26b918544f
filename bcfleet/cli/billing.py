"""`fleet billing meters list|create NAME`."""

from __future__ import annotations

import click

from bcfleet.cli.common import fleet_command, output, state, table


@click.group("billing")
def group() -> None:
    """Billing meters."""


@click.group("meters")
def meters() -> None:
    """The billing-meter catalogue."""


group.add_command(meters)


@fleet_command(meters, "list")
def list_() -> None:
    s = state()
    output(
        s.fleet.api.meters.list(s.credential),
        lambda d: table(d["items"], [("NAME", "name"), ("UNIT", "unit"), ("CREATED", "createdAt")]),
    )


@fleet_command(meters, "create")
@click.argument("name")
@click.option("--unit", default="hours", show_default=True)
@click.option("--description", default="")
def create(name: str, unit: str, description: str) -> None:
    s = state()
    output(
        s.fleet.api.meters.create(s.credential, name, unit=unit, description=description),
        lambda m: f"Meter {m['name']} created.",
    )

"""`fleet events list|watch [--type T]`."""

from __future__ import annotations

import time

import click

from bcfleet.cli.common import WHOLE, Seconds, fleet_command, output, print_json, state, table
from bcfleet.domain.pages import EVENTS


@click.group("events")
def group() -> None:
    """The ordered event log."""


COLUMNS = [("SEQ", "seq"), ("AT", "at"), ("TYPE", "type"), ("SUBJECT", "subjectId")]


@fleet_command(group, "list")
@click.option("--tenant")
@click.option("--type", "types", multiple=True)
@click.option("--after", type=WHOLE, help="Only events after this cursor.")
@click.option("--limit", type=WHOLE, default=EVENTS.default, show_default=True)
def list_(tenant: str | None, types: tuple[str, ...], after: int | None, limit: int) -> None:
    s = state()
    output(
        s.fleet.api.events.list(
            s.credential, tenant_id=tenant, after=after, types=types, limit=limit
        ),
        lambda d: table(d["items"], COLUMNS),
    )


@fleet_command(group, "watch")
@click.option("--tenant")
@click.option("--type", "types", multiple=True)
@click.option("--after", type=WHOLE)
@click.option("--interval", type=Seconds(0.01), default=1.0, show_default=True)
@click.option("--count", type=WHOLE, help="Stop after this many events.")
def watch(
    tenant: str | None,
    types: tuple[str, ...],
    after: int | None,
    interval: float,
    count: int | None,
) -> None:
    """Follow the log: one line (or JSON document) per event."""
    s = state()
    seen = 0
    cursor = after
    while count is None or seen < count:
        page = s.fleet.api.events.list(s.credential, tenant_id=tenant, after=cursor, types=types)
        for item in page["items"]:
            if s.json:
                print_json(item)
            else:
                click.echo(
                    f"{item['seq']}  {item['at']}  {item['type']}  {item['subjectId'] or '-'}"
                )
            seen += 1
            if count is not None and seen >= count:
                return
        cursor = page["cursor"]
        time.sleep(interval)

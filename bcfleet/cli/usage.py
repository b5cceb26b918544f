"""`fleet usage list|export|dead-letters|replay`: metered windows, filtered by tenant, meter, subject and time."""

from __future__ import annotations

import itertools
import json
import sys
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any, TypeVar

import click

from bcfleet.api.documents import UsageWindowJson
from bcfleet.cli.common import WHOLE, fleet_command, output, state, table
from bcfleet.clock import parse_time
from bcfleet.domain.pages import USAGE, USAGE_DEAD_LETTERS
from bcfleet.domain.usage_csv import csv_lines

F = TypeVar("F", bound=Callable[..., Any])

COLUMNS = [
    ("WINDOW", "windowStart"),
    ("TENANT", "tenantId"),
    ("SUBJECT", "subjectId"),
    ("METER", "meter"),
    ("QUANTITY", "quantity"),
]


@click.group("usage")
def group() -> None:
    """Usage windows written by the vps.usage job, and dead letters of unknown meters."""


def _time(value: str | None) -> datetime | None:
    return None if value is None else parse_time(value)


def filters(func: F) -> F:
    """--tenant, --meter, --subject, --since and --until (window starts in [since, until))."""
    options = [
        click.option("--tenant", help="That tenant's usage (a tenant's token sees only its own)."),
        click.option("--meter", help="Only this meter, e.g. gpu.l40s.hours."),
        click.option("--subject", help="Only this instance or reservation id."),
        click.option("--since", help="Windows starting at or after this RFC 3339 time."),
        click.option("--until", help="Windows starting before this RFC 3339 time."),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@fleet_command(group, "list")
@filters
@click.option("--after", type=WHOLE, help="Only windows after this cursor.")
@click.option("--limit", type=WHOLE, default=USAGE.default, show_default=True)
def list_(
    tenant: str | None,
    meter: str | None,
    subject: str | None,
    since: str | None,
    until: str | None,
    after: int | None,
    limit: int,
) -> None:
    s = state()
    page = s.fleet.api.usage.list(
        s.credential,
        tenant_id=tenant,
        meter=meter,
        subject=subject,
        since=_time(since),
        until=_time(until),
        after=after,
        limit=limit,
    )
    output(page, lambda d: table(d["items"], COLUMNS))


@fleet_command(group, "export")
@filters
@click.option(
    "--format", "fmt", type=click.Choice(["csv", "json"]), default="csv", show_default=True
)
def export(
    tenant: str | None,
    meter: str | None,
    subject: str | None,
    since: str | None,
    until: str | None,
    fmt: str,
) -> None:
    """Every matching window, streamed: CSV with a header row, or one JSON document."""
    s = state()
    rows = s.fleet.api.usage.export(
        s.credential,
        tenant_id=tenant,
        meter=meter,
        subject=subject,
        since=_time(since),
        until=_time(until),
    )
    first = next(rows, None)  # authorization and filters fail here, before any output
    if fmt == "json" or s.json:
        _write_json(first, rows)
    else:
        _write_csv(first, rows)


def _write_csv(first: UsageWindowJson | None, rows: Iterator[UsageWindowJson]) -> None:
    """RFC 4180 records (CRLF, quoted as needed) from the writer HTTP uses too."""
    everything = rows if first is None else itertools.chain([first], rows)
    for line in csv_lines(everything):
        sys.stdout.write(line)


def _write_json(first: UsageWindowJson | None, rows: Iterator[UsageWindowJson]) -> None:
    if first is None:
        click.echo('{"items": []}')
        return
    click.echo('{"items": [')
    click.echo("  " + json.dumps(first), nl=False)
    for row in rows:
        click.echo(",\n  " + json.dumps(row), nl=False)
    click.echo("\n]}")


@fleet_command(group, "dead-letters")
@click.option("--tenant")
@click.option("--pending", is_flag=True, help="Only those not replayed yet.")
@click.option("--limit", type=WHOLE, default=USAGE_DEAD_LETTERS.default, show_default=True)
def dead_letters(tenant: str | None, pending: bool, limit: int) -> None:
    """Windows whose meter was not in the billing-meter catalogue."""
    s = state()
    output(
        s.fleet.api.usage.dead_letters(
            s.credential, tenant_id=tenant, pending_only=pending, limit=limit
        ),
        lambda d: table(d["items"], [*COLUMNS, ("REPLAYED", "replayedAt"), ("REASON", "reason")]),
    )


@fleet_command(group, "replay")
def replay() -> None:
    """Bill the dead letters whose meter exists now (once); the others stay."""
    s = state()
    output(
        s.fleet.api.usage.replay(s.credential),
        lambda r: (
            f"Replayed {r['replayed']} dead letters ({r['billed']} windows billed); "
            f"{r['pending']} still pending."
        ),
    )

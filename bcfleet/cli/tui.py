"""`fleet tui [--read-only] [--refresh SECONDS] [--tenant T]`: the operator dashboard."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from bcfleet.cli.common import Seconds, common_options, state

if TYPE_CHECKING:
    from bcfleet.tui.app import FleetApp

BUSY_SECONDS = 1.0
"""The dashboard's database waits this long for another process's lock, then says busy (and
its next refresh tries again), rather than showing nothing for the store's 30 seconds."""


def dashboard(*, read_only: bool, refresh: float, tenant: str | None) -> FleetApp:
    """The dashboard on the CLI's fleet (its --db, --token), not yet running."""
    from bcfleet.tui.app import FleetApp
    from bcfleet.tui.source import LocalSource

    s = state()
    source = LocalSource(s.fleet, s.credential)
    return FleetApp(
        source, read_only=read_only, refresh_seconds=refresh, tenant=tenant, freeze_heap=True
    )


def run_dashboard(*, read_only: bool, refresh: float, tenant: str | None) -> None:
    """Open the dashboard until the operator quits."""
    dashboard(read_only=read_only, refresh=refresh, tenant=tenant).run()


@click.command("tui")
@common_options
@click.option("--read-only", is_flag=True, help="Show everything; change nothing.")
@click.option(
    "--refresh",
    type=Seconds(),
    default=2.0,
    show_default=True,
    help="Seconds between refreshes (0: only when you press r).",
)
@click.option("--tenant", help="The tenant the compute settings and preview start on.")
@click.option("--server", help="Read through this HTTP API (fleet serve) instead of the database.")
def group(read_only: bool, refresh: float, tenant: str | None, server: str | None) -> None:
    """The operator dashboard: hosts, reservations, previews, compute settings, usage, events."""
    if server is None:
        state().busy_timeout_s = BUSY_SECONDS
        run_dashboard(read_only=read_only, refresh=refresh, tenant=tenant)
        return
    from bcfleet.client.fleet_client import FleetClient
    from bcfleet.tui.app import FleetApp
    from bcfleet.tui.remote_source import RemoteSource

    token = state().token
    if not token:
        raise click.UsageError("--server needs --token (or BCFLEET_TOKEN)")
    with FleetClient(server, token) as client:
        source = RemoteSource(client, label=server)
        FleetApp(
            source, read_only=read_only, refresh_seconds=refresh, tenant=tenant, freeze_heap=True
        ).run()

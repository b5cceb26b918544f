"""`fleet provider-fake [--host 127.0.0.1] [--port 8787]`: the local Hetzner-compatible server, in the foreground."""

from __future__ import annotations

import ipaddress
import sys

import click

from bcfleet.cli.common import Whole, common_options, output
from bcfleet.providers.fake_server import serve


@click.command("provider-fake")
@common_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=Whole(1, 65535), default=8787, show_default=True)
@click.option("--accept-token", "token", help="Accept only this bearer token (default: any).")
def group(host: str, port: int, token: str | None) -> None:
    """Serve a fake Hetzner Cloud API for tests and demos until interrupted.

    Point a provider account at it with
    `fleet provider-accounts create --name fake --provider hetzner --token-env HCLOUD_TOKEN
    --endpoint http://HOST:PORT/v1`; its fault knobs are under /__fake__ (see
    bcfleet.providers.fake_server).
    """
    endpoint = f"http://{host}:{port}/v1"
    output(
        {
            "endpoint": endpoint,
            "admin": f"http://{host}:{port}/__fake__",
            "anyToken": token is None,
        },
        lambda d: f"Fake Hetzner Cloud API on {d['endpoint']} (faults: {d['admin']}/faults)",
    )
    if not _loopback(host):
        click.echo(
            "warning: the fake's admin API has no authentication; listen on loopback only",
            err=True,
        )
    sys.stdout.flush()
    serve(host=host, port=port, token=token)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False

"""`fleet serve [--host 127.0.0.1] [--port 8080]`: the HTTP API over this fleet's database."""

from __future__ import annotations

import click

from bcfleet.cli.common import Whole, common_options, state

DEFAULT_MAX_BODY_BYTES = 1 << 20  # bcfleet.http.serving's default, without importing the server


@click.command("serve")
@common_options
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=Whole(0, 65535), default=8080, show_default=True)
@click.option(
    "--max-body-bytes",
    type=Whole(1024),
    default=DEFAULT_MAX_BODY_BYTES,
    show_default=True,
    help="Larger request bodies are refused with 413.",
)
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="info",
    show_default=True,
)
def group(host: str, port: int, max_body_bytes: int, log_level: str) -> None:
    """Serve the HTTP API under /v1 (bearer tokens; OpenAPI at /v1/openapi.json)."""
    from bcfleet.http.app import create_app  # the server's imports only when serving
    from bcfleet.http.edge import EdgeLimits
    from bcfleet.http.server import serve_forever

    fleet = state().fleet
    app = create_app(fleet, max_body_bytes=max_body_bytes, debug=state().debug)
    click.echo(f"serving the fleet on http://{host}:{port}/v1", err=True)
    limits = EdgeLimits.of(fleet.settings)
    serve_forever(app, host=host, port=port, limits=limits, log_level=log_level)

"""`fleet validate`: a FleetConfig's YAML, schema and meaning checked without the state.

A module of its own, importing only the loader: CI runs it on every push, and it reads no
database, so it imports neither SQLAlchemy nor the planner (`fleet plan` is cli/fleetconfig.py).
"""

from __future__ import annotations

import sys
from typing import Any

import click

from bcfleet.cli.common import common_options, output, state
from bcfleet.domain.document_limits import problems_cut
from bcfleet.errors import EXIT_ERROR, EXIT_OK, InvalidInputError
from bcfleet.reconcile.load import load_fleetconfig
from bcfleet.reconcile.model import DesiredFleet
from bcfleet.settings import load_fleet_settings


def load_or_exit(file: str) -> DesiredFleet:
    """The document, or its diagnostics as `file:line:column: message` lines and exit 1."""
    try:
        return load_fleetconfig(file, host_reserve=load_fleet_settings().host_reserve)
    except InvalidInputError as error:
        if state().json:
            raise
        for diagnostic in error.details.get("errors", []):
            click.echo(diagnostic_line(diagnostic), err=True)
        count = len(error.details.get("errors", []))
        if error.details.get("truncated"):
            click.echo(f"{file}: {problems_cut()}", err=True)
        click.echo(f"error: INVALID_INPUT: {file}: {count} error(s)", err=True)
        sys.exit(EXIT_ERROR)


def diagnostic_line(d: dict[str, Any]) -> str:
    return f"{d['file']}:{d['line']}:{d['column']}: {d['message']} [{d['path']}]"


@click.command("validate")
@click.option("-f", "--file", "file", required=True, metavar="FILE", help="The FleetConfig.")
@common_options
def validate(file: str) -> int:
    """Check a FleetConfig's YAML, schema and meaning; print file:line:column: message."""
    desired = load_or_exit(file)
    warnings = [w.to_json() for w in desired.warnings]
    body = {"valid": True, "file": file, "objects": desired.object_count, "warnings": warnings}

    def text(_: Any) -> str:
        lines = [f"warning: {diagnostic_line(w)}" for w in warnings]
        return "\n".join([*lines, f"{file}: valid ({desired.object_count} objects)"])

    output(body, text)
    return EXIT_OK


commands = [validate]

"""The `fleet` console script: the root group, its subcommands, and exit codes."""

from __future__ import annotations

import json
import sys
from importlib import import_module

import click

from bcfleet import __version__
from bcfleet.cli.common import common_options, fail, reset_state, state
from bcfleet.errors import EXIT_USAGE, FleetError

# Each module defines `group` (a click.Group or click.Command) registered under its name,
# or `commands`, a list of top-level commands.
COMMAND_MODULES = (
    "tenants",
    "iam",
    "pools",
    "hosts",
    "flavors",
    "provider_accounts",
    "provider_fake",
    "events",
    "billing",
    "usage",
    "jobs",
    "db",
    "instances",
    "quotas",
    "doctor",
    "demo",
    "reservations",
    "capacity",
    "settings",
    "services",
    "indexes",
    "environments",
    "fleetconfig",
    "serve",
    "webhooks",
    "agent",
    "tui",
)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="fleet")
@common_options
def cli() -> None:
    """bcfleet: declare a compute fleet, plan and apply it, place and meter what runs on it."""
    state()


def _register() -> None:
    for module_name in COMMAND_MODULES:
        module = import_module(f"bcfleet.cli.{module_name}")
        for command in getattr(module, "commands", None) or [module.group]:
            cli.add_command(command)


_register()


def _usage_error(error: click.ClickException) -> None:
    if "--json" in sys.argv:
        body = {
            "error": {
                "code": "INVALID_INPUT",
                "message": error.format_message(),
                "details": {"usage": True},
            }
        }
        click.echo(json.dumps(body, indent=2))
    else:
        error.show()
    sys.exit(EXIT_USAGE)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI: 0 success, 1 error, 2 changes, 3 locked, 4 stale plan, 64 usage."""
    reset_state()
    try:
        result = cli.main(args=argv, prog_name="fleet", standalone_mode=False)
    except FleetError as error:
        fail(error)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(1)
    except click.UsageError as error:
        _usage_error(error)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    sys.exit(result if isinstance(result, int) else 0)

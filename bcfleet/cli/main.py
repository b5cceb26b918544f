"""The `fleet` console script: the root group, its subcommands, and exit codes."""

from __future__ import annotations

import json
import sys
import traceback
from importlib import import_module

import click

from bcfleet import __version__
from bcfleet.cli.common import common_options, fail, reset_state, state
from bcfleet.domain.bounds import storable_problem
from bcfleet.errors import EXIT_USAGE, FleetError, InvalidInputError

# Each command's module, imported only when the command runs (or help lists it): a cron
# job running `fleet plan` does not pay for the dashboard, the server or the agent.
# A module defines `group` (the command of its name) or `commands` (several top-level ones).
COMMANDS = {
    "tenants": "tenants",
    "iam": "iam",
    "pools": "pools",
    "hosts": "hosts",
    "flavors": "flavors",
    "provider-accounts": "provider_accounts",
    "provider-fake": "provider_fake",
    "events": "events",
    "billing": "billing",
    "usage": "usage",
    "jobs": "jobs",
    "db": "db",
    "instances": "instances",
    "quotas": "quotas",
    "doctor": "doctor",
    "demo": "demo",
    "reservations": "reservations",
    "capacity": "capacity",
    "settings": "settings",
    "services": "services",
    "indexes": "indexes",
    "environments": "environments",
    "validate": "validate",
    "plan": "fleetconfig",
    "apply": "fleetconfig",
    "force-unlock": "fleetconfig",
    "serve": "serve",
    "webhooks": "webhooks",
    "agent": "agent",
    "tui": "tui",
}
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))
# What `fleet --help` says of each command, so that listing them imports none of their modules
# (that would pull in SQLAlchemy, SQLModel and Alembic); a test keeps each line equal to the
# first sentence of the command's own help.
SUMMARIES = {
    "tenants": "Tenants: the organizations that own pools and use capacity.",
    "iam": "Principals, tokens and policies.",
    "pools": "Pools of hosts (vps-host) or of provider servers (provider).",
    "hosts": "Hosts of vps-host pools.",
    "flavors": "Flavors: named instance shapes per pool.",
    "provider-accounts": "Provider accounts: where provider pools make servers.",
    "provider-fake": "Serve a fake Hetzner Cloud API for tests and demos until interrupted.",
    "events": "The ordered event log.",
    "billing": "Billing meters.",
    "usage": "Usage windows written by the vps.usage job, and dead letters of unknown meters.",
    "jobs": "Scheduled jobs: vps.hosts, vps.usage, reservations.*, spares, providers.reconcile.",
    "db": "The state database.",
    "instances": "Instances: placed on hosts of vps-host pools, or made at a provider.",
    "quotas": "A tenant's quota in a pool: vcpu, memoryGiB, diskGiB, gpu.",
    "doctor": "Check the fleet; exits 1 when an invariant is broken.",
    "demo": "Create a simulated fleet and open the dashboard on it (--no-tui prints it instead).",
    "reservations": "GPU reservations: regular or spot, pool or node binding, with preemption notices.",
    "capacity": "Capacity previews.",
    "settings": "Tenant settings.",
    "services": "Services on serverless or managed hosting, each on an instance size.",
    "indexes": "Pipeline indexes: a pod size (or the default pod size) holds an instance size.",
    "environments": "Fleet environments: the services in one run on its size.",
    "validate": "Check a FleetConfig's YAML, schema and meaning; print file:line:column: message.",
    "plan": "Show what `fleet apply` would change; writes nothing to the state.",
    "apply": "Make the state match a FleetConfig (-f, after a prompt or --yes) or a saved plan.",
    "force-unlock": "Remove the lock LOCK_ID (the apply lock or a job's lease) whose holder is gone.",
    "serve": "Serve the HTTP API under /v1 (bearer tokens; OpenAPI at /v1/openapi.json).",
    "webhooks": "Webhooks: a tenant's events POSTed to a URL, signed with HMAC-SHA256.",
    "agent": "The host agent: this machine's inventory, the agent loop, the simulated agents.",
    "tui": "The operator dashboard: hosts, reservations, previews, compute settings, usage, events.",
}


def module_commands(module_name: str) -> dict[str, click.Command]:
    """The top-level commands a command module defines, by name."""
    module = import_module(f"bcfleet.cli.{module_name}")
    found = getattr(module, "commands", None) or [module.group]
    return {command.name or "": command for command in found}


class LazyGroup(click.Group):
    """The root group: lists every command by name and imports its module on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:  # noqa: ARG002
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:  # noqa: ARG002
        module_name = COMMANDS.get(cmd_name)
        return None if module_name is None else module_commands(module_name).get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The Commands section of help from SUMMARIES, shortened as click shortens a command's help."""
        names = self.list_commands(ctx)
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = [
            (name, click.Command(name, help=SUMMARIES[name]).get_short_help_str(limit))
            for name in names
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="fleet")
@common_options
def cli() -> None:
    """bcfleet: declare a compute fleet, plan and apply it, place and meter what runs on it."""
    state()


def asks_json(args: list[str]) -> bool:
    """True when the command line asks for --json (before a `--`, which ends the options)."""
    options = args[: args.index("--")] if "--" in args else args
    return "--json" in options


def _usage_error(error: click.ClickException) -> None:
    if state().json:
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
    args = sys.argv[1:] if argv is None else list(argv)
    # Known before click parses anything, so that a usage error is JSON too under --json.
    reset_state().json = asks_json(args)
    try:
        refuse_unstorable(args)
        result = _run(args)
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
    except BrokenPipeError:  # `fleet … | head`: the reader left; say nothing more
        sys.stderr.close()
        sys.exit(1)
    except Exception as error:  # noqa: BLE001 - the last net: no traceback unless asked for
        fail(escaped_error(error))
    sys.exit(result if isinstance(result, int) else 0)


def refuse_unstorable(args: list[str]) -> None:
    """INVALID_INPUT for an argument no database, path or name can take: one holding a NUL (no
    real argv can, a caller in-process can) or bytes that are not UTF-8 (Python reads them as
    lone surrogates). The HTTP edge and the Python API apply the same rule to every text they are
    given (bounds.check_storable)."""
    for position, arg in enumerate(args, start=1):
        problem = storable_problem(arg)
        if problem is None:
            continue
        where = f"argument {position} of the command line"
        details: dict[str, object] = {"argument": position, "reason": "unstorable_text"}
        before = args[position - 2] if position > 1 else ""
        if before.startswith("--") and storable_problem(before) is None:
            where, details["option"] = f"{before} ({where})", before  # name the option
        raise InvalidInputError(f"{where}: {problem}", details)


def _run(args: list[str]) -> object:
    """One run of the command tree; the fleet it opened is closed after it, whatever happened
    (and a database it created is removed again when it failed before changing anything)."""
    succeeded = False
    try:
        result = cli.main(args=args, prog_name="fleet", standalone_mode=False)
        succeeded = result in (None, 0)
        return result
    except SystemExit as exiting:
        succeeded = exiting.code in (None, 0)
        raise
    finally:
        state().close_fleet(succeeded=succeeded)


def escaped_error(error: Exception) -> FleetError:
    """What an error that escaped the command answers: a database failure outside every unit
    of work (a lost connection, a cancelled statement while the fleet opens) as the HTTP edge
    answers it, DATABASE_UNAVAILABLE; anything else INTERNAL."""
    from bcfleet.api.escaped import escaped_fault  # only on this path: the start stays light

    fault = escaped_fault(error)
    return fault if fault is not None else internal_error(error, debug=state().debug)


def internal_error(error: Exception, *, debug: bool) -> FleetError:
    """An error bcfleet did not expect, as the error document with code INTERNAL; the traceback
    goes to stderr only with --debug (or BCFLEET_DEBUG=1)."""
    if debug:
        traceback.print_exception(error, file=sys.stderr)
    return FleetError(
        f"internal error ({type(error).__name__}); run again with --debug for the traceback",
        {"type": type(error).__name__},
    )

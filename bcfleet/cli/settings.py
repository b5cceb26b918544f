"""`fleet settings compute show|set`: a tenant's Compute tab (document 004) in the terminal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import click

from bcfleet.cli.common import fleet_command, output, state, table
from bcfleet.domain.bounds import INTEGER_TEXT_WORDS, parse_integer
from bcfleet.domain.compute_settings import serverless_pool_text
from bcfleet.domain.sizes import format_credits, label_with_shape


@click.group("settings")
def group() -> None:
    """Tenant settings."""


@group.group("compute")
def compute() -> None:
    """Instance sizes, spare instances and their credits, the default size (organization admins)."""


def _users(size: dict[str, Any]) -> str:
    described = []
    for user in size.get("usedBy", []):
        where = f" (workspace {user['workspace']})" if "workspace" in user else ""
        described.append(f"{user['kind']} {user['name']}{where}")
    return ", ".join(described) or "-"


def settings_text(body: dict[str, Any]) -> str:
    """The Compute tab: each size's computes, switch, spares, credits, users; total and default."""
    rows = [
        {
            "size": size["label"] + (" (default, locked)" if size["defaultLocked"] else ""),
            "services": size["service"]["text"],
            "indexes": size["index"]["text"],
            "enabled": size["enabled"],
            "spares": size["spares"],
            "credits": format_credits(size["creditsPerMonth"]),
            "users": _users(size),
        }
        for size in body["sizes"].values()
    ]
    columns = [
        ("SIZE", "size"),
        ("SERVICES", "services"),
        ("INDEXES", "indexes"),
        ("ENABLED", "enabled"),
        ("SPARES", "spares"),
        ("CREDITS/MONTH", "credits"),
    ]
    if any("usedBy" in size for size in body["sizes"].values()):
        columns.append(("IN USE BY", "users"))
    default = label_with_shape(body["effectiveDefaultSize"])
    if body["defaultSize"] is None:
        default += " (none chosen)"
    lines = [
        f"Compute settings of {body['tenant']} (version {body['version']})",
        table(rows, columns),
        f"Total credits per month: {format_credits(body['totalCreditsPerMonth'])}",
        f"Default size: {default}",
        f"Serverless pool: {serverless_pool_text(body['serverlessPool'])}",
    ]
    return "\n".join(lines)


def saved_text(body: dict[str, Any]) -> str:
    notices = [f"notice: {n['message']}" for n in body.get("notices", [])]
    return "\n".join([body["message"], *notices, "", settings_text(body)])


def parse_spares(values: Sequence[str]) -> dict[str, int]:
    """['large=2', 'small=0'] → {'large': 2, 'small': 0}; a usage error otherwise."""
    spares: dict[str, int] = {}
    for item in values:
        size, sep, count = item.partition("=")
        number = parse_integer(count)  # the command line's one integer rule: 2.0 is 2
        if number is None or not sep or not size.strip():
            raise click.BadParameter(
                f"{item!r} is not SIZE=N (N a whole number written in ASCII digits, "
                f"{INTEGER_TEXT_WORDS})",
                param_hint="--spares",
            )
        spares[size.strip()] = number
    return spares


@fleet_command(compute, "show")
@click.option("--tenant", required=True)
def show(tenant: str) -> None:
    """Show the sizes, spares, credits per month, default size, and what uses each size now."""
    s = state()
    output(s.fleet.api.settings.compute_show(s.credential, tenant_id=tenant), settings_text)


@fleet_command(compute, "set")
@click.option("--tenant", required=True)
@click.option("--serverless-pool", "pool", help="The vps-host pool spare instances run in.")
@click.option("--enable", multiple=True, metavar="SIZE", help="Turn a size on (repeatable).")
@click.option("--disable", multiple=True, metavar="SIZE", help="Turn a size off (repeatable).")
@click.option(
    "--spares", multiple=True, metavar="SIZE=N", help="Spare instances of a size, 0 to 10."
)
@click.option("--default", "default_size", metavar="SIZE", help="The default size.")
@click.option("--clear-default", is_flag=True, help="Clear the default size (back to Medium).")
def set_(
    tenant: str,
    pool: str | None,
    enable: tuple[str, ...],
    disable: tuple[str, ...],
    spares: tuple[str, ...],
    default_size: str | None,
    clear_default: bool,
) -> None:
    """Save a change: "Your compute settings are saved." or an error, and nothing changed."""
    if default_size is not None and clear_default:
        raise click.UsageError("--default and --clear-default exclude each other")
    s = state()
    body = s.fleet.api.settings.compute_set(
        s.credential,
        tenant_id=tenant,
        enable=enable,
        disable=disable,
        spares=parse_spares(spares),
        default_size=default_size,
        clear_default=clear_default,
        serverless_pool=pool,
    )
    output(body, saved_text)

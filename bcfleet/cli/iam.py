"""`fleet iam setup|principals|tokens|policies`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from bcfleet.cli.common import fleet_command, output, state, table
from bcfleet.domain.policy import ROLES
from bcfleet.errors import InvalidInputError


@click.group("iam")
def group() -> None:
    """Principals, tokens and policies."""


@click.group("principals")
def principals() -> None:
    """Principals of a tenant."""


@click.group("tokens")
def tokens() -> None:
    """API tokens (only a hash is kept; a token is shown once)."""


@click.group("policies")
def policies() -> None:
    """Policies of allow/deny statements."""


group.add_command(principals)
group.add_command(tokens)
group.add_command(policies)

F = TypeVar("F", bound=Callable[..., Any])
ROLE = click.Choice(ROLES)
HOST = click.option(
    "--host", default=None, help="The host (name or id) an agent is bound to: --role agent only."
)


@fleet_command(principals, "create")
@click.option("--tenant", required=True)
@click.option("--name", required=True)
@click.option("--role", type=ROLE, default="member", show_default=True)
@HOST
def principals_create(tenant: str, name: str, role: str, host: str | None) -> None:
    s = state()
    output(
        s.fleet.api.iam.create_principal(
            s.credential, tenant_id=tenant, name=name, role=role, host=host
        ),
        lambda p: f"Principal {p['name']} ({p['role']}) created: {p['id']}",
    )


@fleet_command(principals, "list")
@click.option("--tenant", required=True)
def principals_list(tenant: str) -> None:
    s = state()
    output(
        s.fleet.api.iam.list_principals(s.credential, tenant_id=tenant),
        lambda d: table(d["items"], [("ID", "id"), ("NAME", "name"), ("ROLE", "role")]),
    )


def _expires_in(default: str) -> Callable[[F], F]:
    return click.option(
        "--expires-in",
        default=None,
        metavar="DURATION",
        help=f"Lifetime such as 30d, 12h or 1d12h (at most 3650d). Default: {default}.",
    )


def _shown_once(result: dict[str, object]) -> str:
    """The token on the first line (for `$(…)`), then its id, which rotate and revoke take."""
    expires = result.get("expiresAt") or "never"
    lines = [
        str(result["token"]),
        f"(shown once; store it now; expires: {expires})",
        f"id: {result['id']} (for `fleet iam tokens rotate` and `revoke`)",
    ]
    if result.get("replaces"):
        lines.append(f"replaces: {result['replaces']} (revoked)")
    return "\n".join(lines)


@fleet_command(tokens, "create")
@click.option("--tenant", required=True)
@click.option("--name", required=True, help="The principal's name (created if missing).")
@click.option("--role", type=ROLE, default="member", show_default=True)
@HOST
@_expires_in("the token never expires")
def tokens_create(
    tenant: str, name: str, role: str, host: str | None, expires_in: str | None
) -> None:
    """Create a token and print it once.

    --role agent --host H: a host agent's token, which may report H's inventory and its
    guests' states and read H's specs, and nothing else.
    """
    s = state()
    result = s.fleet.api.iam.create_token(
        s.credential, tenant_id=tenant, name=name, role=role, expires_in=expires_in, host=host
    )
    output(result, _shown_once)


@fleet_command(tokens, "list")
@click.option("--tenant", required=True)
@click.option("--name", "principal", default=None, help="Only this principal's tokens.")
def tokens_list(tenant: str, principal: str | None) -> None:
    """The tenant's tokens with their state (active, expired, revoked); never the tokens."""
    s = state()
    output(
        s.fleet.api.iam.list_tokens(s.credential, tenant_id=tenant, principal=principal),
        lambda d: table(
            d["items"],
            [
                ("ID", "id"),
                ("PRINCIPAL", "principal"),
                ("ROLE", "role"),
                ("HOST", "host"),
                ("HINT", "hint"),
                ("CREATED", "createdAt"),
                ("EXPIRES", "expiresAt"),
                ("REVOKED", "revokedAt"),
                ("STATE", "state"),
            ],
        ),
    )


@fleet_command(tokens, "revoke")
@click.option("--tenant", required=True)
@click.argument("token_id")
def tokens_revoke(tenant: str, token_id: str) -> None:
    """Revoke a token by its id (see `fleet iam tokens list`)."""
    s = state()
    output(
        s.fleet.api.iam.revoke_token(s.credential, tenant_id=tenant, token_id=token_id),
        lambda r: f"Token {r['id']} revoked.",
    )


@fleet_command(tokens, "rotate")
@click.option("--tenant", required=True)
@click.argument("token_id")
@_expires_in("the old token's lifetime")
def tokens_rotate(tenant: str, token_id: str, expires_in: str | None) -> None:
    """Replace a token: a new one for the same principal, the old one revoked; prints it once.

    Without --expires-in the new token gets the old one's lifetime.
    """
    s = state()
    result = s.fleet.api.iam.rotate_token(
        s.credential, tenant_id=tenant, token_id=token_id, expires_in=expires_in
    )
    output(result, _shown_once)


@fleet_command(policies, "create")
@click.option("--tenant", required=True)
@click.option("--name", required=True)
@click.option(
    "--file",
    "path",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help='JSON: a list of statements or {"statements": [...]}.',
)
@click.option("--attach", multiple=True, help="Principal name to attach the policy to.")
def policies_create(tenant: str, name: str, path: Path, attach: tuple[str, ...]) -> None:
    s = state()
    try:
        document = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInputError(f"{path}: {exc}") from exc
    statements = document.get("statements") if isinstance(document, dict) else document
    if not isinstance(statements, list):
        raise InvalidInputError(f"{path}: expected a list of statements")
    output(
        s.fleet.api.iam.create_policy(
            s.credential, tenant_id=tenant, name=name, statements=statements, attach_to=list(attach)
        ),
        lambda p: f"Policy {p['name']} created: {p['id']}",
    )


@fleet_command(group, "setup")
@click.option("--meters", is_flag=True, help="Create the standard billing meters (not spot ones).")
def setup(meters: bool) -> None:
    """Create what billing needs: vps.vcpu.hours, vps.memory.gib.hours, credits, gpu.<model>.hours."""
    if not meters:
        raise click.UsageError("nothing to set up: pass --meters")
    s = state()
    output(
        s.fleet.api.usage.setup_meters(s.credential),
        lambda r: (
            f"Created meters: {', '.join(r['created']) or '(none)'}; "
            f"already present: {', '.join(r['existing']) or '(none)'}"
        ),
    )

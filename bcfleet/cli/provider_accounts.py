"""`fleet provider-accounts create|list|offers`: provider accounts and what their provider sells."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from bcfleet.cli.common import Whole, fleet_command, output, state, table
from bcfleet.domain.policy import ROOT_TENANT

OFFER_COLUMNS = [
    ("ID", "id"),
    ("REGION", "region"),
    ("KIND", "kind"),
    ("VCPU", "vcpu"),
    ("MEMORY_GIB", "memoryGiB"),
    ("DISK_GIB", "diskGiB"),
    ("PRICE/H", "price"),
    ("AVAILABLE", "available"),
    ("DEPRECATED", "deprecated"),
]


@click.group("provider-accounts")
def group() -> None:
    """Provider accounts: where provider pools make servers."""


def read_token(token_file: Path | None, token_stdin: bool) -> str | None:
    """The token from a file or stdin (never from argv, which ``ps`` shows), stripped."""
    if token_file is not None and token_stdin:
        raise click.UsageError("give --token-file or --token-stdin, not both")
    if token_file is not None:
        try:
            text = token_file.read_text()
        except (OSError, UnicodeError) as exc:
            raise click.BadParameter(
                f"cannot read {token_file}: {exc}", param_hint="--token-file"
            ) from None
    elif token_stdin:
        text = sys.stdin.read()
    else:
        return None
    token = text.strip()
    if not token:
        raise click.UsageError("the provider token is empty")
    return token


@fleet_command(group, "create")
@click.option("--tenant", default=ROOT_TENANT, show_default=True)
@click.option("--name", required=True)
@click.option("--provider", type=click.Choice(["hetzner"]), required=True)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="A file holding the provider token (stored sealed with the operator's key).",
)
@click.option("--token-stdin", is_flag=True, help="Read the provider token from stdin.")
@click.option(
    "--token-env",
    help="The server's environment variable that holds the token (root's admin only).",
)
@click.option("--endpoint", help="API base URL (root's admin only; default: the provider's).")
def create(
    tenant: str,
    name: str,
    provider: str,
    token_file: Path | None,
    token_stdin: bool,
    token_env: str | None,
    endpoint: str | None,
) -> None:
    """Register a provider account; its token from --token-file, --token-stdin or --token-env."""
    token = read_token(token_file, token_stdin)
    if (token is None) == (token_env is None):
        raise click.UsageError("give exactly one of --token-file, --token-stdin and --token-env")
    s = state()
    output(
        s.fleet.api.provider_accounts.create(
            s.credential,
            tenant_id=tenant,
            name=name,
            provider=provider,
            token_env=token_env,
            token=token,
            endpoint=endpoint,
        ),
        lambda a: f"Provider account {a['name']} created: {a['id']}",
    )


def _token_source(account: dict[str, Any]) -> str:
    if account.get("tokenEnv"):
        return f"env {account['tokenEnv']}"
    return "stored" if account.get("hasToken") else "-"


@fleet_command(group, "list")
@click.option("--tenant", default=ROOT_TENANT, show_default=True)
def list_(tenant: str) -> None:
    s = state()
    output(
        s.fleet.api.provider_accounts.list(s.credential, tenant_id=tenant),
        lambda d: table(
            [dict(a, token=_token_source(a)) for a in d["items"]],
            [("NAME", "name"), ("PROVIDER", "provider"), ("TOKEN", "token"), ("ID", "id")],
        ),
    )


def _offers_text(data: dict[str, Any]) -> str:
    rows = [dict(o, price=f"{o['pricePerHour']:.4f} {o['currency']}") for o in data["items"]]
    text = table(rows, OFFER_COLUMNS, empty="No offers match.")
    flagged = sorted({o["id"] for o in data["items"] if o["deprecated"] or not o["available"]})
    if flagged:
        text += f"\nwarning: deprecated or unavailable offers: {', '.join(flagged)}"
    return text


@fleet_command(group, "offers")
@click.argument("account")
@click.option("--tenant", default=ROOT_TENANT, show_default=True)
@click.option("--kind", help="Only offers of this kind (vps).")
@click.option("--min-vcpu", type=Whole(min=0), help="Only offers with at least N vCPUs.")
def offers(account: str, tenant: str, kind: str | None, min_vcpu: int | None) -> None:
    """What the account's provider sells: one row per offer and region (ACCOUNT: id or name)."""
    s = state()
    output(
        s.fleet.api.provider_accounts.offers(
            s.credential, tenant_id=tenant, account_id=account, kind=kind, min_vcpu=min_vcpu
        ),
        _offers_text,
    )

"""`fleet provider-accounts create|list` (offers come with the provider pools)."""

from __future__ import annotations

import click

from bcfleet.cli.common import fleet_command, output, state, table


@click.group("provider-accounts")
def group() -> None:
    """Provider accounts: where provider pools make servers."""


@fleet_command(group, "create")
@click.option("--tenant", default="root", show_default=True)
@click.option("--name", required=True)
@click.option("--provider", type=click.Choice(["hetzner"]), required=True)
@click.option("--token-env", required=True, help="The environment variable that holds the token.")
@click.option("--endpoint", help="API base URL (default: the provider's).")
def create(tenant: str, name: str, provider: str, token_env: str, endpoint: str | None) -> None:
    s = state()
    output(
        s.fleet.api.provider_accounts.create(
            s.credential,
            tenant_id=tenant,
            name=name,
            provider=provider,
            token_env=token_env,
            endpoint=endpoint,
        ),
        lambda a: f"Provider account {a['name']} created: {a['id']}",
    )


@fleet_command(group, "list")
@click.option("--tenant", default="root", show_default=True)
def list_(tenant: str) -> None:
    s = state()
    output(
        s.fleet.api.provider_accounts.list(s.credential, tenant_id=tenant),
        lambda d: table(
            d["items"],
            [("NAME", "name"), ("PROVIDER", "provider"), ("TOKEN_ENV", "tokenEnv"), ("ID", "id")],
        ),
    )

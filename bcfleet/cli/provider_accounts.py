"""`fleet provider-accounts create|list|offers`: provider accounts and what their provider sells."""

from __future__ import annotations

from typing import Any

import click

from bcfleet.cli.common import fleet_command, output, state, table

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


def _offers_text(data: dict[str, Any]) -> str:
    rows = [dict(o, price=f"{o['pricePerHour']:.4f} {o['currency']}") for o in data["items"]]
    text = table(rows, OFFER_COLUMNS, empty="No offers match.")
    flagged = sorted({o["id"] for o in data["items"] if o["deprecated"] or not o["available"]})
    if flagged:
        text += f"\nwarning: deprecated or unavailable offers: {', '.join(flagged)}"
    return text


@fleet_command(group, "offers")
@click.argument("account")
@click.option("--tenant", default="root", show_default=True)
@click.option("--kind", help="Only offers of this kind (vps).")
@click.option("--min-vcpu", type=click.IntRange(min=0), help="Only offers with at least N vCPUs.")
def offers(account: str, tenant: str, kind: str | None, min_vcpu: int | None) -> None:
    """What the account's provider sells: one row per offer and region (ACCOUNT: id or name)."""
    s = state()
    output(
        s.fleet.api.provider_accounts.offers(
            s.credential, tenant_id=tenant, account_id=account, kind=kind, min_vcpu=min_vcpu
        ),
        _offers_text,
    )

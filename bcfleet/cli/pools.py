"""`fleet pools create|list|show|update|offer`."""

from __future__ import annotations

from typing import Any

import click

from bcfleet.cli.common import WHOLE, fleet_command, output, parse_pairs, state, table
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.domain.states import PoolKind


@click.group("pools")
def group() -> None:
    """Pools of hosts (vps-host) or of provider servers (provider)."""


def _pool_text(p: dict[str, Any]) -> str:
    lines = [
        f"Pool {p['name']} ({p['id']})",
        f"  kind:        {p['kind']}",
        f"  owner:       {p['owner']}",
    ]
    if p.get("gpuModel"):
        lines.append(f"  gpuModel:    {p['gpuModel']}")
    effective, stored = p["effectivePolicy"], p["policy"]
    lines.append("  overcommit:  " + _in_force(effective["overcommit"], stored["overcommit"]))
    lines.append("  hostReserve: " + _in_force(effective["hostReserve"], stored["hostReserve"]))
    if "offeredTo" in p:
        lines.append("  offeredTo:   " + (", ".join(p["offeredTo"]) or "-"))
    lines.extend(f"notice: {n['message']}" for n in p.get("notices", []))
    return "\n".join(lines)


def _in_force(effective: dict[str, Any], stored: dict[str, Any]) -> str:
    """Each resource's value in force (the API's effectivePolicy), the ones the pool does not
    set marked as defaults; a stored value that is not a finite number says so."""
    parts = []
    for resource, value in effective.items():
        note = ""
        if resource not in stored:
            note = " (default)"
        elif stored[resource] is None:
            note = " (invalid value stored)"
        parts.append(f"{resource}={'-' if value is None else f'{value:g}'}{note}")
    return ", ".join(parts)


def _reserve(vcpu: int | None, memory: int | None, disk: int | None) -> dict[str, int] | None:
    reserve = {
        k: v for k, v in (("vcpu", vcpu), ("memoryGiB", memory), ("diskGiB", disk)) if v is not None
    }
    return reserve or None


@fleet_command(group, "create")
@click.option("--tenant", default=ROOT_TENANT, show_default=True)
@click.option("--name", required=True)
@click.option("--kind", type=click.Choice([k.value for k in PoolKind]), required=True)
@click.option("--gpu-model")
@click.option(
    "--overcommit",
    help="Ratios per resource, e.g. vcpu=2,memoryGiB=1.5 (each clamped to 0.1..100, with a notice; an update keeps the ones left out).",
)
@click.option("--host-reserve-vcpu", type=WHOLE)
@click.option("--host-reserve-memory-gib", type=WHOLE)
@click.option("--host-reserve-disk-gib", type=WHOLE)
@click.option("--provider-account")
def create(
    tenant: str,
    name: str,
    kind: str,
    gpu_model: str | None,
    overcommit: str | None,
    host_reserve_vcpu: int | None,
    host_reserve_memory_gib: int | None,
    host_reserve_disk_gib: int | None,
    provider_account: str | None,
) -> None:
    """Create a pool."""
    s = state()
    result = s.fleet.api.pools.create(
        s.credential,
        tenant_id=tenant,
        name=name,
        kind=kind,
        gpu_model=gpu_model,
        overcommit=parse_pairs(overcommit, "--overcommit"),
        host_reserve=_reserve(host_reserve_vcpu, host_reserve_memory_gib, host_reserve_disk_gib),
        provider_account=provider_account,
    )
    output(result, _pool_text)


@fleet_command(group, "update")
@click.option("--tenant", default=ROOT_TENANT, show_default=True)
@click.option("--pool", required=True)
@click.option("--gpu-model")
@click.option("--overcommit")
@click.option("--host-reserve-vcpu", type=WHOLE)
@click.option("--host-reserve-memory-gib", type=WHOLE)
@click.option("--host-reserve-disk-gib", type=WHOLE)
def update(
    tenant: str,
    pool: str,
    gpu_model: str | None,
    overcommit: str | None,
    host_reserve_vcpu: int | None,
    host_reserve_memory_gib: int | None,
    host_reserve_disk_gib: int | None,
) -> None:
    """Change a pool's policy."""
    s = state()
    result = s.fleet.api.pools.update(
        s.credential,
        tenant_id=tenant,
        pool=pool,
        gpu_model=gpu_model,
        overcommit=parse_pairs(overcommit, "--overcommit") if overcommit is not None else None,
        host_reserve=_reserve(host_reserve_vcpu, host_reserve_memory_gib, host_reserve_disk_gib),
    )
    output(result, _pool_text)


@fleet_command(group, "offer")
@click.option("--tenant", default=ROOT_TENANT, show_default=True)
@click.option("--pool", required=True)
@click.option("--to", "to", required=True, help="The tenant to offer the pool to.")
@click.option("--revoke", is_flag=True, help="Take the offer back.")
def offer(tenant: str, pool: str, to: str, revoke: bool) -> None:
    """Offer a pool to a tenant."""
    s = state()
    output(
        s.fleet.api.pools.offer(s.credential, tenant_id=tenant, pool=pool, to=to, revoke=revoke),
        _pool_text,
    )


@fleet_command(group, "list")
@click.option("--tenant")
def list_(tenant: str | None) -> None:
    """List the pools you can see."""
    s = state()
    output(
        s.fleet.api.pools.list(s.credential, tenant_id=tenant),
        lambda d: table(
            d["items"],
            [
                ("NAME", "name"),
                ("KIND", "kind"),
                ("OWNER", "owner"),
                ("GPU", "gpuModel"),
                ("ID", "id"),
            ],
        ),
    )


@fleet_command(group, "show")
@click.option("--tenant")
@click.argument("pool")
def show(tenant: str | None, pool: str) -> None:
    """Show a pool."""
    s = state()
    output(s.fleet.api.pools.show(s.credential, tenant_id=tenant, pool=pool), _pool_text)

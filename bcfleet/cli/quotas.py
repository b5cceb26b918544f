"""`fleet quotas set|show`."""

from __future__ import annotations

import click

from bcfleet.cli.common import WHOLE, fleet_command, output, state, table


@click.group("quotas")
def group() -> None:
    """A tenant's quota in a pool: vcpu, memoryGiB, diskGiB, gpu."""


@fleet_command(group, "set")
@click.option("--tenant", required=True)
@click.option("--pool", required=True)
@click.option("--vcpu", type=WHOLE)
@click.option("--memory-gib", type=WHOLE)
@click.option("--disk-gib", type=WHOLE)
@click.option("--gpu", type=WHOLE)
def set_(
    tenant: str,
    pool: str,
    vcpu: int | None,
    memory_gib: int | None,
    disk_gib: int | None,
    gpu: int | None,
) -> None:
    s = state()
    limits = {
        k: v
        for k, v in (("vcpu", vcpu), ("memoryGiB", memory_gib), ("diskGiB", disk_gib), ("gpu", gpu))
        if v is not None
    }
    output(s.fleet.api.quotas.set(s.credential, tenant_id=tenant, pool=pool, limits=limits), _text)


def _text(q: dict[str, object]) -> str:
    limits = q["limits"]
    used = q["used"]
    assert isinstance(limits, dict) and isinstance(used, dict)
    rows = [
        {"resource": r, "used": used.get(r, 0), "limit": limits.get(r, "unlimited")} for r in used
    ]
    return f"Quota of {q['tenantId']} in {q['pool']}\n" + table(
        rows, [("RESOURCE", "resource"), ("USED", "used"), ("LIMIT", "limit")]
    )


@fleet_command(group, "show")
@click.option("--tenant", required=True)
@click.option("--pool")
def show(tenant: str, pool: str | None) -> None:
    s = state()
    output(
        s.fleet.api.quotas.show(s.credential, tenant_id=tenant, pool=pool),
        lambda d: "\n\n".join(_text(q) for q in d["items"]) or "(no quotas)",
    )

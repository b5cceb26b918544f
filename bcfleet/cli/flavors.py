"""`fleet flavors create|list|update|delete` with the documents' flags exactly."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from bcfleet.cli.common import WHOLE, fleet_command, output, state, table

F = TypeVar("F", bound=Callable[..., Any])


@click.group("flavors")
def group() -> None:
    """Flavors: named instance shapes per pool."""


def shape_options(func: F) -> F:
    options = [
        click.option("--tenant", required=True),
        click.option("--pool", required=True, help="Pool id or name."),
        click.option("--name", required=True),
        click.option("--vcpu", type=WHOLE, required=True),
        click.option("--memory-gib", type=WHOLE, required=True),
        click.option("--disk-gib", type=WHOLE, required=True),
        click.option("--gpus", type=WHOLE),
        click.option("--offer", help="The provider offer of a provider pool's flavor."),
        click.option("--numa-affine", is_flag=True),
        click.option("--pinned", is_flag=True),
        click.option("--hugepage-size", type=WHOLE, metavar="BYTES"),
    ]
    for option in reversed(options):
        func = option(func)
    return func


def _placement(numa_affine: bool, pinned: bool, hugepage_size: int | None) -> dict[str, Any] | None:
    if not (numa_affine or pinned or hugepage_size is not None):
        return None
    return {"numaAffine": numa_affine, "pinned": pinned, "hugepageSizeBytes": hugepage_size}


def _flavor_text(f: dict[str, Any]) -> str:
    gpus = f" {f['gpus']} GPU" if f["gpus"] else ""
    text = (
        f"Flavor {f['name']} ({f['id']}): {f['vcpu']} vCPU, {f['memoryGiB']} GiB memory, "
        f"{f['diskGiB']} GiB disk{gpus}, version {f['version']}"
    )
    for warning in f.get("warnings", []):
        text += f"\nwarning: {warning}"
    return text


@fleet_command(group, "create")
@shape_options
def create(
    tenant: str,
    pool: str,
    name: str,
    vcpu: int,
    memory_gib: int,
    disk_gib: int,
    gpus: int | None,
    offer: str | None,
    numa_affine: bool,
    pinned: bool,
    hugepage_size: int | None,
) -> None:
    """Define a flavor (compute:flavors:manage on the pool)."""
    s = state()
    result = s.fleet.api.flavors.create(
        s.credential,
        tenant_id=tenant,
        pool_id=pool,
        name=name,
        vcpu=vcpu,
        memory_gib=memory_gib,
        disk_gib=disk_gib,
        gpus=gpus or 0,
        offer_id=offer,
        placement=_placement(numa_affine, pinned, hugepage_size),
    )
    output(result, _flavor_text)


@fleet_command(group, "update")
@shape_options
def update(
    tenant: str,
    pool: str,
    name: str,
    vcpu: int,
    memory_gib: int,
    disk_gib: int,
    gpus: int | None,
    offer: str | None,
    numa_affine: bool,
    pinned: bool,
    hugepage_size: int | None,
) -> None:
    """Replace a flavor's shape: send every flag again (gpus falls back to 0, --offer keeps its value)."""
    s = state()
    result = s.fleet.api.flavors.update(
        s.credential,
        tenant_id=tenant,
        pool_id=pool,
        name=name,
        vcpu=vcpu,
        memory_gib=memory_gib,
        disk_gib=disk_gib,
        gpus=gpus,
        offer_id=offer,
        placement=_placement(numa_affine, pinned, hugepage_size),
    )
    output(result, _flavor_text)


@fleet_command(group, "list")
@click.option("--tenant", required=True)
@click.option("--pool", required=True)
def list_(tenant: str, pool: str) -> None:
    """List a pool's flavors, sorted by name (archived ones hidden)."""
    s = state()
    output(
        s.fleet.api.flavors.list(s.credential, tenant_id=tenant, pool_id=pool),
        lambda d: table(
            d["items"],
            [
                ("NAME", "name"),
                ("VCPU", "vcpu"),
                ("MEMORY_GIB", "memoryGiB"),
                ("DISK_GIB", "diskGiB"),
                ("GPUS", "gpus"),
                ("OFFER", "offerId"),
                ("VERSION", "version"),
            ],
        ),
    )


@fleet_command(group, "delete")
@click.option("--tenant", required=True)
@click.option("--pool", required=True)
@click.option("--name", required=True)
def delete(tenant: str, pool: str, name: str) -> None:
    """Delete a flavor, or archive it when any instance row references it."""
    s = state()
    output(
        s.fleet.api.flavors.delete(s.credential, tenant_id=tenant, pool_id=pool, name=name),
        lambda r: (
            f"Flavor {name} "
            + (
                "deleted."
                if r["deleted"]
                else "archived (instances reference it; they keep running)."
            )
        ),
    )

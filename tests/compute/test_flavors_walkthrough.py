"""Document 000's flavor walkthrough through `fleet … --json`, as a new user would type it."""

from __future__ import annotations

from typing import Any

import pytest
from sqlmodel import Session

from bcfleet.store.engine import make_engine
from bcfleet.store.models import Instance
from tests.support.fleet import T0

GPU_FLAVOR = [
    "--name",
    "gpu1.l40s",
    "--vcpu",
    "8",
    "--memory-gib",
    "32",
    "--disk-gib",
    "200",
    "--gpus",
    "1",
]


def setup_pool(cli: Any) -> str:
    assert cli("tenants", "create", "acme", "--json").exit_code == 0
    made = cli(
        "pools",
        "create",
        "--tenant",
        "root",
        "--name",
        "vps-fra",
        "--kind",
        "vps-host",
        "--gpu-model",
        "L40S",
        "--json",
    )
    assert made.exit_code == 0, made.stderr
    return str(made.json()["id"])  # type: ignore[index]


def test_create_returns_the_documents_fields(cli: Any) -> None:
    pool_id = setup_pool(cli)
    result = cli("flavors", "create", "--tenant", "root", "--pool", pool_id, *GPU_FLAVOR, "--json")
    assert result.exit_code == 0, result.stderr
    body = result.json()
    assert body["id"].startswith("flv_")
    assert {k: v for k, v in body.items() if k != "id"} == {
        "poolId": pool_id,
        "name": "gpu1.l40s",
        "vcpu": 8,
        "memoryGiB": 32,
        "diskGiB": 200,
        "gpus": 1,
        "archived": False,
        "version": 1,
    }


def test_second_flavor_with_the_same_name_is_conflict(cli: Any) -> None:
    pool_id = setup_pool(cli)
    assert (
        cli("flavors", "create", "--tenant", "root", "--pool", pool_id, *GPU_FLAVOR).exit_code == 0
    )
    again = cli("flavors", "create", "--tenant", "root", "--pool", pool_id, *GPU_FLAVOR, "--json")
    assert again.exit_code == 1
    assert again.json()["error"]["code"] == "CONFLICT"


def test_same_name_in_two_pools_may_mean_two_shapes(cli: Any) -> None:
    setup_pool(cli)
    cli("pools", "create", "--tenant", "root", "--name", "vps-ams", "--kind", "vps-host")
    a = cli(
        "flavors",
        "create",
        "--tenant",
        "root",
        "--pool",
        "vps-fra",
        "--name",
        "g1.small",
        "--vcpu",
        "2",
        "--memory-gib",
        "4",
        "--disk-gib",
        "40",
        "--json",
    )
    b = cli(
        "flavors",
        "create",
        "--tenant",
        "root",
        "--pool",
        "vps-ams",
        "--name",
        "g1.small",
        "--vcpu",
        "4",
        "--memory-gib",
        "8",
        "--disk-gib",
        "80",
        "--json",
    )
    assert (a.exit_code, b.exit_code) == (0, 0)
    assert a.json()["vcpu"] == 2 and b.json()["vcpu"] == 4


def test_provider_pool_flavor_without_offer_is_invalid_input(cli: Any) -> None:
    cli(
        "provider-accounts",
        "create",
        "--tenant",
        "root",
        "--name",
        "hz",
        "--provider",
        "hetzner",
        "--token-env",
        "HCLOUD_TOKEN",
    )
    cli(
        "pools",
        "create",
        "--tenant",
        "root",
        "--name",
        "hetzner-fsn",
        "--kind",
        "provider",
        "--provider-account",
        "hz",
    )
    result = cli(
        "flavors",
        "create",
        "--tenant",
        "root",
        "--pool",
        "hetzner-fsn",
        "--name",
        "cx22",
        "--vcpu",
        "2",
        "--memory-gib",
        "4",
        "--disk-gib",
        "40",
        "--json",
    )
    assert result.exit_code == 1
    assert result.json()["error"]["code"] == "INVALID_INPUT"
    assert "offerId" in result.json()["error"]["details"]["fields"]
    with_offer = cli(
        "flavors",
        "create",
        "--tenant",
        "root",
        "--pool",
        "hetzner-fsn",
        "--name",
        "cx22",
        "--vcpu",
        "2",
        "--memory-gib",
        "4",
        "--disk-gib",
        "40",
        "--offer",
        "cx22",
        "--json",
    )
    assert with_offer.exit_code == 0
    assert with_offer.json()["offerId"] == "cx22"


def test_list_is_sorted_by_name_and_hides_archived(cli: Any, sqlite_url: str) -> None:
    pool_id = setup_pool(cli)
    for name in ("g1.medium", "gpu1.l40s", "g1.small"):
        cli(
            "flavors",
            "create",
            "--tenant",
            "root",
            "--pool",
            pool_id,
            "--name",
            name,
            "--vcpu",
            "2",
            "--memory-gib",
            "4",
            "--disk-gib",
            "40",
        )
    reference_flavor(sqlite_url, pool_id, "g1.medium")
    assert cli(
        "flavors", "delete", "--tenant", "root", "--pool", pool_id, "--name", "g1.medium", "--json"
    ).json() == {"deleted": False, "archived": True}
    listed = cli("flavors", "list", "--tenant", "root", "--pool", pool_id, "--json").json()
    assert [f["name"] for f in listed["items"]] == ["g1.small", "gpu1.l40s"]


def reference_flavor(url: str, pool_id: str, name: str, *, deleted: bool = False) -> None:
    """An instance row (live or deleted) that references the flavor, as placement would leave it."""
    from sqlmodel import select

    from bcfleet.store.models import Flavor

    engine = make_engine(url)
    with Session(engine) as session:
        flavor = session.exec(
            select(Flavor).where(Flavor.pool_id == pool_id, Flavor.name == name)
        ).one()
        session.add(
            Instance(
                id=f"ins_{name.replace('.', '')}",
                tenant_id="root",
                pool_id=pool_id,
                flavor_id=flavor.id,
                name="vm",
                state="deleted" if deleted else "running",
                created_at=T0,
                updated_at=T0,
                deleted_at=T0 if deleted else None,
            )
        )
        session.commit()
    engine.dispose()


@pytest.mark.parametrize(
    ("instance_state", "expected"),
    [
        pytest.param(None, {"deleted": True, "archived": False}, id="never-used-flavor-is-deleted"),
        pytest.param("running", {"deleted": False, "archived": True}, id="used-flavor-is-archived"),
        pytest.param(
            "deleted", {"deleted": False, "archived": True}, id="deleted-instance-still-counts"
        ),
    ],
)
def test_delete_or_archive(
    cli: Any, sqlite_url: str, instance_state: str | None, expected: dict[str, bool]
) -> None:
    pool_id = setup_pool(cli)
    cli("flavors", "create", "--tenant", "root", "--pool", pool_id, *GPU_FLAVOR)
    if instance_state is not None:
        reference_flavor(sqlite_url, pool_id, "gpu1.l40s", deleted=instance_state == "deleted")
    result = cli(
        "flavors", "delete", "--tenant", "root", "--pool", pool_id, "--name", "gpu1.l40s", "--json"
    )
    assert result.json() == expected
    again = cli(
        "flavors", "delete", "--tenant", "root", "--pool", pool_id, "--name", "gpu1.l40s", "--json"
    )
    assert again.json()["error"]["code"] == "NOT_FOUND"


def test_update_replaces_the_shape_and_bumps_version(cli: Any) -> None:
    pool_id = setup_pool(cli)
    cli("flavors", "create", "--tenant", "root", "--pool", pool_id, *GPU_FLAVOR)
    updated = cli(
        "flavors",
        "update",
        "--tenant",
        "root",
        "--pool",
        pool_id,
        "--name",
        "gpu1.l40s",
        "--vcpu",
        "8",
        "--memory-gib",
        "64",
        "--disk-gib",
        "200",
        "--gpus",
        "1",
        "--json",
    ).json()
    assert (updated["memoryGiB"], updated["gpus"], updated["version"]) == (64, 1, 2)
    no_gpus = cli(
        "flavors",
        "update",
        "--tenant",
        "root",
        "--pool",
        pool_id,
        "--name",
        "gpu1.l40s",
        "--vcpu",
        "8",
        "--memory-gib",
        "64",
        "--disk-gib",
        "200",
        "--json",
    ).json()
    assert (no_gpus["gpus"], no_gpus["version"]) == (0, 3), "gpus falls back to 0 when left out"


def test_update_keeps_offer_when_left_out(cli: Any) -> None:
    cli(
        "provider-accounts",
        "create",
        "--tenant",
        "root",
        "--name",
        "hz",
        "--provider",
        "hetzner",
        "--token-env",
        "HCLOUD_TOKEN",
    )
    cli(
        "pools",
        "create",
        "--tenant",
        "root",
        "--name",
        "hz-fsn",
        "--kind",
        "provider",
        "--provider-account",
        "hz",
    )
    cli(
        "flavors",
        "create",
        "--tenant",
        "root",
        "--pool",
        "hz-fsn",
        "--name",
        "cx23",
        "--vcpu",
        "2",
        "--memory-gib",
        "4",
        "--disk-gib",
        "40",
        "--offer",
        "cx23",
    )
    result = cli(
        "flavors",
        "update",
        "--tenant",
        "root",
        "--pool",
        "hz-fsn",
        "--name",
        "cx23",
        "--vcpu",
        "2",
        "--memory-gib",
        "8",
        "--disk-gib",
        "40",
        "--json",
    ).json()
    assert (result["offerId"], result["memoryGiB"]) == ("cx23", 8)


def test_update_restores_an_archived_flavor(cli: Any, sqlite_url: str) -> None:
    pool_id = setup_pool(cli)
    cli("flavors", "create", "--tenant", "root", "--pool", pool_id, *GPU_FLAVOR)
    reference_flavor(sqlite_url, pool_id, "gpu1.l40s")
    cli("flavors", "delete", "--tenant", "root", "--pool", pool_id, "--name", "gpu1.l40s")
    restored = cli(
        "flavors", "update", "--tenant", "root", "--pool", pool_id, *GPU_FLAVOR, "--json"
    ).json()
    assert restored["archived"] is False
    listed = cli("flavors", "list", "--tenant", "root", "--pool", pool_id, "--json").json()
    assert [f["name"] for f in listed["items"]] == ["gpu1.l40s"]


def test_update_of_a_missing_flavor_is_not_found(cli: Any) -> None:
    pool_id = setup_pool(cli)
    result = cli("flavors", "update", "--tenant", "root", "--pool", pool_id, *GPU_FLAVOR, "--json")
    assert (result.exit_code, result.json()["error"]["code"]) == (1, "NOT_FOUND")


def test_placement_flags_are_kept(cli: Any) -> None:
    pool_id = setup_pool(cli)
    result = cli(
        "flavors",
        "create",
        "--tenant",
        "root",
        "--pool",
        pool_id,
        *GPU_FLAVOR,
        "--numa-affine",
        "--pinned",
        "--hugepage-size",
        "1073741824",
        "--json",
    ).json()
    assert result["placement"] == {
        "numaAffine": True,
        "pinned": True,
        "hugepageSizeBytes": 1073741824,
    }

"""The guarded claim and quota statements: all rows or none, on SQLite (one statement) and PostgreSQL."""

from __future__ import annotations

from typing import Any

import pytest

from bcfleet.errors import QuotaExceededError
from bcfleet.fleet import Fleet
from bcfleet.placement.claims import claim_scalars
from bcfleet.placement.quotas import charge, quota_usage
from tests.support.builders import OP
from tests.support.capacity import pool_with_hosts, rows


def _node_id(fleet: Fleet, name: str) -> str:
    return str(fleet.api.hosts.show(OP, host=name)["id"])


def _quota_used(fleet: Fleet, pool_id: str) -> dict[str, int]:
    with fleet.read() as session:  # the rows' own use and their stripes (PostgreSQL)
        found = quota_usage(session, "acme", pool_id=pool_id)
    return {resource: used for (_, _, resource), used in found.items()}


def test_a_claim_that_fits_takes_every_row(any_fleet: Fleet) -> None:
    pool_with_hosts(any_fleet)  # 16 vCPU, 64 GiB, 500 GiB after the reserve
    node = _node_id(any_fleet, "h1")
    with any_fleet.write() as session:
        assert claim_scalars(session, node, {"vcpu": 4, "memoryGiB": 8, "diskGiB": 40}) is None
    assert {r: v["allocated"] for r, v in rows(any_fleet, "h1").items()} == {
        "vcpu": 4,
        "memoryGiB": 8,
        "diskGiB": 40,
    }


@pytest.mark.parametrize(
    ("claims", "refused"),
    [
        ({"vcpu": 17, "memoryGiB": 8, "diskGiB": 40}, "vcpu"),
        ({"vcpu": 4, "memoryGiB": 65, "diskGiB": 40}, "memoryGiB"),
        ({"vcpu": 4, "memoryGiB": 8, "diskGiB": 501}, "diskGiB"),
    ],
)
def test_a_claim_one_row_cannot_take_changes_no_row(
    any_fleet: Fleet, claims: dict[str, int], refused: str
) -> None:
    pool_with_hosts(any_fleet)
    node = _node_id(any_fleet, "h1")
    before = rows(any_fleet, "h1")
    with any_fleet.write() as session:
        assert claim_scalars(session, node, claims) == refused
    assert rows(any_fleet, "h1") == before


def test_a_charge_makes_missing_quota_rows_and_charges_each_once(any_fleet: Fleet) -> None:
    pool = pool_with_hosts(any_fleet)
    any_fleet.api.quotas.set(OP, tenant_id="acme", pool=pool["id"], limits={"vcpu": 4})
    with any_fleet.write() as session:  # only the vcpu row exists before this charge
        charge(session, "acme", pool["id"], {"vcpu": 2, "memoryGiB": 4, "diskGiB": 40})
    assert _quota_used(any_fleet, pool["id"]) == {"vcpu": 2, "memoryGiB": 4, "diskGiB": 40}


def test_a_charge_over_one_limit_charges_nothing(any_fleet: Fleet) -> None:
    pool = pool_with_hosts(any_fleet)
    any_fleet.api.quotas.set(
        OP, tenant_id="acme", pool=pool["id"], limits={"vcpu": 4, "memoryGiB": 6}
    )
    with any_fleet.write() as session:
        charge(session, "acme", pool["id"], {"vcpu": 2, "memoryGiB": 4, "diskGiB": 40})
    before = _quota_used(any_fleet, pool["id"])
    with pytest.raises(QuotaExceededError) as refused, any_fleet.write() as session:
        charge(session, "acme", pool["id"], {"vcpu": 2, "memoryGiB": 4, "diskGiB": 40})
    details: dict[str, Any] = refused.value.details
    assert details == {"resource": "memoryGiB", "limit": 6, "used": 4, "requested": 4}
    assert _quota_used(any_fleet, pool["id"]) == before

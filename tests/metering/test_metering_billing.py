"""Billing of usage: dead letters for unknown meters and their replay, `fleet iam setup --meters`, and `fleet usage list|export`."""

from __future__ import annotations

import csv
import io
from datetime import timedelta
from decimal import Decimal
from typing import Any

import pytest

from bcfleet.errors import ForbiddenError
from bcfleet.fleet import Fleet
from tests.support import metering as mb
from tests.support.builders import token
from tests.support.fleet import T0


def at(minutes: float) -> str:
    return (T0 + timedelta(minutes=minutes)).isoformat().replace("+00:00", "Z")


@pytest.fixture
def spot_fleet(fleet: Fleet) -> dict[str, Any]:
    """acme runs a 2-GPU spot reservation from 10:00 and a 4-vCPU instance; globex an instance."""
    mb.tenant(fleet, "acme")
    mb.tenant(fleet, "globex")
    pool = mb.pool(fleet, gpu_model="L40S")
    node = mb.node(fleet, pool)
    spot = mb.reservation(
        fleet,
        pool,
        spot=True,
        gpus=2,
        starts_at=T0,
        ends_at=T0 + timedelta(hours=2),
        activated_at=T0,
    )
    mine = mb.instance(fleet, pool, node, start=T0, vcpu=4, memory_gib=8)
    theirs = mb.instance(fleet, pool, node, start=T0, vcpu=2, memory_gib=2, tenant_id="globex")
    return {"pool": pool, "spot": spot, "mine": mine, "theirs": theirs}


def test_iam_setup_meters_creates_the_standard_meters_but_not_spot_ones(cli, fleet: Fleet) -> None:  # type: ignore[no-untyped-def]
    mb.pool(fleet, "a", gpu_model="L40S")
    mb.pool(fleet, "b", gpu_model="H100")
    mb.pool(fleet, "c", gpu_model=None)
    result = cli("iam", "setup", "--meters", "--json")
    assert result.exit_code == 0, result.stderr
    assert result.json()["created"] == [
        "credits",
        "gpu.h100.hours",
        "gpu.l40s.hours",
        "vps.memory.gib.hours",
        "vps.vcpu.hours",
    ]
    again = cli("iam", "setup", "--meters", "--json").json()
    assert again["created"] == [] and len(again["existing"]) == 5
    names = [m["name"] for m in cli("billing", "meters", "list", "--json").json()["items"]]
    assert not [n for n in names if ".spot." in n]
    assert cli("iam", "setup").exit_code == 64


def test_a_spot_window_without_its_meter_is_dead_lettered_then_billed_once_after_replay(
    cli, monkeypatch, fleet: Fleet, spot_fleet: dict[str, Any]
) -> None:  # type: ignore[no-untyped-def]
    assert cli("iam", "setup", "--meters").exit_code == 0
    monkeypatch.setenv("BCFLEET_NOW", at(15.5))
    assert cli("jobs", "tick", "--job", "vps.usage").exit_code == 0
    dead = cli("usage", "dead-letters", "--json").json()["items"]
    assert [(d["meter"], d["windowStart"], d["quantity"]) for d in dead] == [
        ("gpu.l40s.spot.hours", at(0), "0.166667"),  # 2 GPUs × 5 min, cumulative 1/6
        ("gpu.l40s.spot.hours", at(5), "0.166666"),  # 2/6 rounds to 0.333333
        ("gpu.l40s.spot.hours", at(10), "0.166667"),  # 3/6 is 0.5 exactly
    ]
    assert dead[0]["reason"] == "meter gpu.l40s.spot.hours is not in the billing-meter catalogue"
    assert cli("usage", "list", "--meter", "gpu.l40s.spot.hours", "--json").json()["items"] == []
    # replaying before the meter exists bills nothing and keeps the letters
    assert cli("usage", "replay", "--json").json() == {"replayed": 0, "billed": 0, "pending": 3}

    assert cli("billing", "meters", "create", "gpu.l40s.spot.hours").exit_code == 0
    replay = cli("usage", "replay", "--json")
    assert replay.json() == {"replayed": 3, "billed": 3, "pending": 0}, replay.stderr
    assert cli("usage", "replay", "--json").json() == {"replayed": 0, "billed": 0, "pending": 0}
    # the next tick bills the spot meter directly; the letters stay, marked replayed
    monkeypatch.setenv("BCFLEET_NOW", at(20.5))
    assert cli("jobs", "tick", "--job", "vps.usage").exit_code == 0
    billed = cli("usage", "list", "--meter", "gpu.l40s.spot.hours", "--json").json()["items"]
    assert [b["windowStart"] for b in billed] == [at(0), at(5), at(10), at(15)]
    assert sum(Decimal(b["quantity"]) for b in billed) == Decimal("0.666667")
    assert all(d["replayedAt"] for d in cli("usage", "dead-letters", "--json").json()["items"])
    assert cli("usage", "dead-letters", "--pending", "--json").json()["items"] == []


def test_replaying_twice_at_once_still_bills_once(fleet: Fleet, spot_fleet: dict[str, Any]) -> None:
    mb.standard_meters(fleet)
    mb.meter_until(fleet, T0 + timedelta(minutes=30))
    fleet.api.meters.create(mb.OP, "gpu.l40s.spot.hours")
    first = fleet.api.usage.replay(mb.OP)
    second = fleet.api.usage.replay(mb.OP)
    assert (first["billed"], second["billed"]) == (6, 0)
    rows = [r for r in mb.usage_rows(fleet) if r[1] == "gpu.l40s.spot.hours"]
    assert len(rows) == len({(r[0], r[2]) for r in rows}) == 6


def test_tenants_see_only_their_own_usage(fleet: Fleet, spot_fleet: dict[str, Any]) -> None:
    mb.standard_meters(fleet)
    mb.meter_until(fleet, T0 + timedelta(minutes=10))
    acme = token(fleet, "acme", "alice", role="viewer")
    globex = token(fleet, "globex", "bob", role="member")
    acme_items = fleet.api.usage.list(acme)["items"]
    assert {i["tenantId"] for i in acme_items} == {"acme"}
    assert {i["subjectId"] for i in acme_items} == {spot_fleet["mine"].subject}
    theirs = fleet.api.usage.list(globex, meter="vps.vcpu.hours")["items"]
    assert {i["subjectId"] for i in theirs} == {spot_fleet["theirs"].subject}
    with pytest.raises(ForbiddenError):
        fleet.api.usage.list(acme, tenant_id="globex")
    assert fleet.api.usage.list(acme, subject=spot_fleet["theirs"].subject)["items"] == []
    everyone = fleet.api.usage.list(mb.OP)["items"]
    assert {i["tenantId"] for i in everyone} == {"acme", "globex"}
    assert {i["tenantId"] for i in fleet.api.usage.list(mb.OP, tenant_id="globex")["items"]} == {
        "globex"
    }
    with pytest.raises(ForbiddenError):
        fleet.api.usage.replay(acme)
    assert fleet.api.usage.dead_letters(globex)["items"] == []  # acme's spot letters are not theirs


def test_usage_list_filters_and_pages(cli, fleet: Fleet, spot_fleet: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    mb.standard_meters(fleet)
    mb.meter_until(fleet, T0 + timedelta(minutes=30))
    mine = spot_fleet["mine"].subject
    window = cli(
        "usage", "list", "--subject", mine, "--meter", "vps.vcpu.hours",
        "--since", at(10), "--until", at(20), "--json",
    ).json()["items"]  # fmt: skip
    assert [(i["windowStart"], i["windowEnd"], i["quantity"]) for i in window] == [
        (at(10), at(15), "0.333333"),
        (at(15), at(20), "0.333333"),  # cumulative 4/3 − 1
    ]
    first = cli("usage", "list", "--limit", "5", "--json").json()
    second = cli("usage", "list", "--limit", "5", "--after", str(first["cursor"]), "--json").json()
    assert len(first["items"]) == len(second["items"]) == 5
    assert first["items"][-1]["id"] < second["items"][0]["id"]
    assert "QUANTITY" in cli("usage", "list").stdout
    bad = cli("usage", "list", "--since", "yesterday", "--json")
    assert bad.exit_code == 1 and bad.json()["error"]["code"] == "INVALID_INPUT"


def test_usage_export_csv_and_json(cli, fleet: Fleet, spot_fleet: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    mb.standard_meters(fleet)
    mb.meter_until(fleet, T0 + timedelta(minutes=10))
    exported = cli("usage", "export", "--tenant", "acme", "--format", "csv")
    assert exported.exit_code == 0, exported.stderr
    rows = list(csv.DictReader(io.StringIO(exported.stdout)))
    assert list(rows[0]) == [
        "windowStart", "windowEnd", "tenantId", "subjectKind", "subjectId", "poolId", "meter",
        "quantity",
    ]  # fmt: skip
    assert {r["tenantId"] for r in rows} == {"acme"}
    assert len(rows) == 4  # vcpu and memory, two windows
    assert {(r["subjectKind"], r["meter"]) for r in rows} == {
        ("instance", "vps.vcpu.hours"),
        ("instance", "vps.memory.gib.hours"),
    }
    as_json = cli("usage", "export", "--format", "json", "--meter", "vps.vcpu.hours").json()
    assert len(as_json["items"]) == 4  # both tenants' instances, two windows
    empty = cli("usage", "export", "--format", "json", "--meter", "credits").json()
    assert empty == {"items": []}
    header_only = cli("usage", "export", "--meter", "credits").stdout
    assert header_only.splitlines() == [
        "windowStart,windowEnd,tenantId,subjectKind,subjectId,poolId,meter,quantity"
    ]

"""The console's object views (pools, flavors, tenants, quotas, services with environments and
indexes, provider accounts): their rows, 80×24, the describe screen with its FleetConfig YAML,
and the same answers over HTTP as in process."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from textual.pilot import Pilot

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.domain.states import PoolKind
from bcfleet.fleet import Fleet
from bcfleet.reconcile.load import load_fleetconfig_text
from bcfleet.tui.declare import declaration
from bcfleet.tui.format import plain
from bcfleet.tui.remote_source import RemoteSource
from bcfleet.tui.screens.catalog import pool_row, quota_row
from bcfleet.tui.screens.describe import DescribeScreen, humane_fields
from bcfleet.tui.screens.objects import ObjectsView
from bcfleet.tui.source import LocalSource
from bcfleet.tui.views import find_view
from bcfleet.tui.widgets.keyed_table import KeyedTable
from tests.support.tui import make_app, open_test_fleet, settle

pytestmark = pytest.mark.anyio

NEW_VIEWS = ("pools", "flavors", "tenants", "quotas", "services", "environments", "indexes",
             "provider-accounts")  # fmt: skip
NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)


def with_account(path: Path) -> Fleet:
    """The test fleet, plus a provider account for acme (the demo has none)."""
    fleet = open_test_fleet(path)
    fleet.api.provider_accounts.create(
        OP, tenant_id="acme", name="hz-main", provider="hetzner", token_env="HCLOUD_TOKEN"
    )
    return fleet


def app_on(fleet: Fleet, **options: Any) -> Any:
    return make_app(LocalSource(fleet, label="sqlite:///fleet.db"), **options)


# -- pure ------------------------------------------------------------------------------------------


def test_a_pool_row_says_its_overcommit_and_whom_it_is_offered_to() -> None:
    pool = {"id": "pool_1", "name": "vps-ams", "kind": "vps-host", "owner": "root",
            "policy": {"overcommit": {"vcpu": 4.0}, "hostReserve": {}},
            "effectivePolicy": {"overcommit": {"vcpu": 4.0, "memoryGiB": 1.0, "diskGiB": 1.0},
                                "hostReserve": {"vcpu": 2, "memoryGiB": 8, "diskGiB": 100}},
            "offeredTo": ["acme"], "createdAt": "2026-11-30T08:00:00Z"}  # fmt: skip
    cells = [plain(c) for c in pool_row(pool, NOW).cells]
    assert cells == ["vps-ams", "vps-host", "root", "-", "×4/1/1", "acme", "2h"]


def test_a_quota_row_reads_used_of_limit_and_says_over() -> None:
    quota = {"tenantId": "globex", "poolId": "pool_1", "pool": "vps-fra",
             "limits": {"vcpu": 256, "gpu": 8, "memoryGiB": None},
             "used": {"vcpu": 12, "memoryGiB": 24, "diskGiB": 0, "gpu": 16}}  # fmt: skip
    row = quota_row(quota, NOW)
    assert row.key == "globex/pool_1"
    assert [plain(c) for c in row.cells] == ["globex", "vps-fra", "12/256", "24/-", "-",
                                             "16/8 over"]  # fmt: skip


def test_fields_read_for_people() -> None:
    doc = {"spot": True, "archived": False, "nodeId": "node_1", "nodeIds": ["node_1", "node_x"],
           "createdAt": "2026-11-30T08:00:00Z", "placement": {"hugepageSizeBytes": 2097152},
           "hostPlacement": {"cpuset": [2, 3, 4, 5, 9], "mems": []}}  # fmt: skip
    shown = humane_fields(doc, NOW, {"node_1": "fra-01"})
    assert shown == {"spot": "yes", "archived": "no", "host": "fra-01", "hosts": ["fra-01", "-"],
                     "createdAt": "11-30 08:00 (2h ago)", "placement": {"hugepageSize": "2 MiB"},
                     "hostPlacement": {"cpuset": "2-5,9", "mems": "-"}}  # fmt: skip


def test_objects_a_fleetconfig_does_not_declare_say_so() -> None:
    assert declaration("instance", {"id": "ins_1"}) == (
        "A FleetConfig does not declare an instance: there is no YAML for it."
    )
    assert "a service" in declaration("service", {"id": "svc_1"})


@pytest.mark.parametrize(
    ("read", "kind", "section"),
    [
        ("pools", "pool", "pools"),
        ("flavors", "flavor", "flavors"),
        ("tenants", "tenant", "tenants"),
        ("quotas", "quota", "quotas"),
        ("hosts", "host", "hosts"),
    ],  # fmt: skip
)
def test_the_yaml_declares_the_object_and_loads_as_a_fleetconfig(
    fleet_db: Path, read: str, kind: str, section: str
) -> None:
    """Each object's YAML, as a whole FleetConfig, loads (schema and meaning) back to it."""
    source = LocalSource(open_test_fleet(fleet_db))
    for doc in getattr(source, read)():
        text = declaration(kind, doc)
        item = yaml.safe_load(text)[section][0]
        config = {"apiVersion": "bcfleet.dev/v1", "kind": "FleetConfig", section: [item]}
        if kind != "tenant":  # what it refers to must be declared too
            config["tenants"] = [{"id": t["id"]} for t in source.tenants() if t["id"] != "root"]
        if kind not in ("tenant", "pool"):
            config["pools"] = [{"name": p["name"], "kind": p["kind"]} for p in source.pools()]
        desired = load_fleetconfig_text(yaml.safe_dump(config))
        specs = {
            "pool": desired.pools, "flavor": desired.flavors, "tenant": desired.tenants,
            "quota": desired.quotas, "host": desired.hosts,
        }[kind]  # fmt: skip
        name = doc.get("name") or doc.get("id")
        if kind == "quota":
            assert any((s.tenant, s.pool) == (doc["tenantId"], doc["pool"]) for s in specs)
        else:
            assert any(getattr(s, "name", getattr(s, "id", None)) == name for s in specs)


def test_a_pool_yaml_names_its_ratio_and_offers(fleet_db: Path) -> None:
    source = LocalSource(open_test_fleet(fleet_db))
    pool = next(p for p in source.pools() if p["name"] == "vps-ams")
    item = yaml.safe_load(declaration("pool", pool))["pools"][0]
    assert item["policy"]["overcommit"]["vcpu"] == 4.0
    assert item["offeredTo"] == ["acme"] and item["owner"] == "root"


def test_every_new_view_is_in_the_registry() -> None:
    for name in NEW_VIEWS:
        view = find_view(name)
        assert view is not None and view.name == name
    assert find_view("0") is find_view("pools")
    assert find_view("svc") is find_view("services")
    assert find_view("idx") is find_view("indexes")


# -- local and remote ------------------------------------------------------------------------------


def test_remote_object_reads_match_local(fleet: Fleet, remote: RemoteSource) -> None:
    fleet.api.provider_accounts.create(
        OP, tenant_id="acme", name="hz-main", provider="hetzner", token_env="HCLOUD_TOKEN"
    )
    local = LocalSource(fleet)
    for read in ("pools", "flavors", "tenants", "quotas", "services", "environments", "indexes",
                 "provider_accounts"):  # fmt: skip
        assert getattr(remote, read)() == getattr(local, read)(), read
    assert [a["name"] for a in local.provider_accounts()] == ["hz-main"]
    assert local.flavors() and all(f["pool"] for f in local.flavors())
    assert local.services() and local.environments() and local.indexes()


# -- on screen -------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", NEW_VIEWS)
async def test_each_new_view_fits_80x24_with_a_row_per_object(fleet_db: Path, name: str) -> None:
    fleet = with_account(fleet_db)
    app = app_on(fleet)
    source = LocalSource(fleet)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("colon", *name, "enter")
        await settle(pilot)
        view = app.screen
        assert isinstance(view, ObjectsView)
        table = view.query_one(KeyedTable)
        assert len(table.all_rows) == len(getattr(source, view.READ)()) > 0
        kept = {c.key for c in view.COLUMNS if not c.give_way}
        assert kept.isdisjoint(table.hidden_columns)
        assert table.virtual_size.width <= table.size.width  # no horizontal scrollbar


async def test_d_describes_a_pool_with_its_yaml_and_q_comes_back(fleet_db: Path) -> None:
    fleet = with_account(fleet_db)
    app = app_on(fleet, start="pools")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        view = app.screen
        await pilot.press("d")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, DescribeScreen)
        name = view.table.all_rows[view.table.cursor_key].cells[0]
        assert screen.crumbs() == ["Pools", name]
        assert yaml.safe_load(screen.data["FleetConfig"])["pools"][0]["name"] == name
        assert any("pool.created" in line for line in screen.data["events"])
        await pilot.press("q")
        await settle(pilot)
        assert app.screen is view


async def test_enter_on_a_service_shows_its_workspace_indexes_and_e_opens_environments(
    fleet_db: Path,
) -> None:
    fleet = with_account(fleet_db)
    app = app_on(fleet, start="services")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        view = app.screen
        prod = next(k for k, r in view.table.all_rows.items() if plain(r.cells[1]) == "prod")
        view.table.move_to_key(prod)
        await pilot.press("enter")
        await settle(pilot)
        doc = app.screen.data
        assert doc["workspaceIndexes"] == ["docs (Large)"]
        assert doc["deployed"] in ("yes", "no")
        assert "does not declare a service" in doc["FleetConfig"]
        await pilot.press("q", "e")
        await settle(pilot)
        assert app.screen.TITLE == "Environments"
        assert [plain(r.cells[1]) for r in app.screen.table.all_rows.values()] == ["staging"]


async def test_describe_shows_a_reservation_host_by_name(fleet_db: Path) -> None:
    fleet = open_test_fleet(fleet_db)
    app = app_on(fleet, start="reservations")
    names = {h["id"]: h["name"] for h in fleet.api.hosts.list(OP)["items"]}
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        placed = next(r for r in fleet.api.reservations.list(OP)["items"] if r.get("nodeIds"))
        app.screen.table.move_to_key(placed["id"])
        await pilot.press("d")
        await settle(pilot)
        doc = app.screen.data
        assert doc["hosts"] == [names[n] for n in placed["nodeIds"]]
        pools = {p["id"]: p["name"] for p in fleet.api.pools.list(OP)["items"]}
        assert doc["pool"] == pools[placed["poolId"]]
        assert doc["spot"] == ("yes" if placed["spot"] else "no")
        assert "nodeIds" not in doc


# -- snapshots -------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=["80x24", "120x40"])
@pytest.mark.parametrize("name", NEW_VIEWS)
def test_new_view_snapshot(
    snap_compare: Any, fleet_db: Path, name: str, size: tuple[int, int]
) -> None:
    app = app_on(with_account(fleet_db), start=name)
    assert snap_compare(app, terminal_size=size, run_before=settle)


async def _resized(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    await pilot.resize_terminal(80, 24)
    await settle(pilot)


def test_services_resized_from_120x40_to_80x24(snap_compare: Any, fleet_db: Path) -> None:
    app = app_on(with_account(fleet_db), start="services")
    assert snap_compare(app, terminal_size=(120, 40), run_before=_resized)


def test_quotas_under_no_color_at_80x24(
    snap_compare: Any, fleet_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = app_on(with_account(fleet_db), start="quotas")
    assert snap_compare(app, terminal_size=(80, 24), run_before=settle)


async def _describe(pilot: Pilot[Any]) -> None:
    await settle(pilot)
    await pilot.press("d")
    await settle(pilot)


def test_pool_describe_snapshot_at_80x24(snap_compare: Any, fleet_db: Path) -> None:
    app = app_on(with_account(fleet_db), start="pools")
    assert snap_compare(app, terminal_size=(80, 24), run_before=_describe)


def test_a_provider_account_declares_its_token_variable_never_a_token(fleet_db: Path) -> None:
    source = LocalSource(with_account(fleet_db))
    account = source.provider_accounts()[0]
    assert yaml.safe_load(declaration("providerAccount", account)) == {
        "providerAccounts": [{"name": "hz-main", "provider": "hetzner", "tokenEnv": "HCLOUD_TOKEN"}]
    }
    sealed = {**account, "tokenEnv": None, "hasToken": True}  # its token given, not a variable
    assert declaration("providerAccount", sealed).startswith("Not declarable as it stands:")


def test_a_kind_held_as_its_enum_declares_as_its_string(fleet_db: Path) -> None:
    """An answer made in the transaction that set it holds the enum member, not the string."""
    source = LocalSource(open_test_fleet(fleet_db))
    pool = next(p for p in source.pools() if p["name"] == "vps-ams")
    as_enum = {**pool, "kind": PoolKind(pool["kind"])}
    assert declaration("pool", as_enum) == declaration("pool", pool)
    assert yaml.safe_load(declaration("pool", as_enum))["pools"][0]["kind"] == "vps-host"

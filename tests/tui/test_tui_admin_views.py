"""The console's administration views (webhooks with their deliveries, tokens, policies,
provider offers, usage export, doctor) at 80×24, in process and over HTTP, never showing a
secret; and its deletes (Ctrl+D): each confirm names what depends on the row, a refusal says
its code, and the fleet changes only once the confirm is answered yes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.api.auth import hash_token
from bcfleet.clock import FakeClock
from bcfleet.domain.states import DeliveryState
from bcfleet.errors import ConflictError
from bcfleet.fleet import Fleet
from bcfleet.providers.fake_server import FakeHetzner
from bcfleet.store.models.webhooks import WebhookDelivery
from bcfleet.tui.actions import actions_for, every_action
from bcfleet.tui.deletes import DELETES
from bcfleet.tui.remote_source import RemoteSource
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.screens.table import TableView
from bcfleet.tui.screens.usage_export import write_export
from bcfleet.tui.screens.webhooks import DeliveriesView
from bcfleet.tui.source import LocalSource
from bcfleet.tui.widgets.keyed_table import KeyedTable
from tests.support.tui import make_app, open_test_fleet, screen_text, settle, type_ahead
from tests.support.tui_actions import Recording, said

pytestmark = pytest.mark.anyio

ADMIN_VIEWS = ("webhooks", "tokens", "policies", "export", "doctor")
SECRET = "whsec_a-secret-nobody-may-read-0123456789"
STATEMENTS = [{"effect": "allow", "actions": ["compute:instances:read"],
               "resources": ["tenant:acme/*"]}]  # fmt: skip


def admin_rows(fleet: Fleet) -> list[str]:
    """A webhook (with two deliveries), a token and a policy of acme; the secrets made."""
    hook = fleet.api.webhooks.create(OP, tenant_id="acme", url="https://hooks.example.com/acme",
                                     event_types=["instance.*"], secret=SECRET)  # fmt: skip
    made = fleet.api.iam.create_token(OP, tenant_id="acme", name="alice", role="admin")
    fleet.api.iam.create_policy(OP, tenant_id="acme", name="readers", statements=STATEMENTS,
                                attach_to=["alice"])  # fmt: skip
    now = fleet.now()
    with fleet.write() as session:
        for seq, state in ((1, DeliveryState.DELIVERED), (2, DeliveryState.DEAD)):
            session.add(WebhookDelivery(
                webhook_id=hook["id"], tenant_id="acme", event_seq=seq, event_id=f"evt_{seq}",
                event_type="instance.created", state=state, attempts=seq, next_attempt_at=now,
                last_status=200 if seq == 1 else None, last_error=None if seq == 1 else "timeout",
                created_at=now, updated_at=now,
            ))  # fmt: skip
    return [SECRET, made["token"], hash_token(made["token"])]


def local_app(path: Path) -> tuple[Any, Fleet, list[str]]:
    fleet = open_test_fleet(path)
    secrets = admin_rows(fleet)
    return make_app(LocalSource(fleet, label="sqlite:///fleet.db")), fleet, secrets


def shown(app: Any) -> str:
    return "\n".join(screen_text(app))


async def visit(pilot: Any, name: str) -> TableView:
    await pilot.press("escape", "colon", *name, "enter")
    await settle(pilot)
    view = pilot.app.screen
    assert isinstance(view, TableView), name
    return view


def row_keys(view: TableView) -> set[str]:
    return set(view.query_one(KeyedTable).all_rows)


async def confirm(pilot: Any) -> str:
    """The confirm's question once the dependents it names are read."""
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, Confirm), (screen, said(pilot.app))
    return screen.question


async def answer(pilot: Any, key: str) -> None:
    await pilot.press(key)
    await settle(pilot)


async def on_row(pilot: Any, word: str) -> None:
    """Filter the view down to the rows matching a word (the filter before it cleared)."""
    await pilot.press("escape", "slash", *word, "enter")
    await settle(pilot)


# -- the views ----------------------------------------------------------------------------------


async def test_each_admin_view_fits_80x24_and_never_shows_a_secret(fleet_db: Path) -> None:
    app, _fleet, secrets = local_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for name in ADMIN_VIEWS:
            view = await visit(pilot, name)
            table = view.query_one(KeyedTable)
            assert table.all_rows, name
            kept = {c.key for c in view.COLUMNS if not c.give_way}
            assert kept.isdisjoint(table.hidden_columns), name
            assert table.virtual_size.width <= table.size.width, name
            text = shown(app)
            assert not any(s in text for s in secrets), name
            await pilot.press("d")  # every field of the row: still no secret
            await settle(pilot)
            assert not any(s in shown(app) for s in secrets), name
            await pilot.press("escape")


async def test_enter_on_a_webhook_shows_its_deliveries_and_q_comes_back(fleet_db: Path) -> None:
    app, fleet, _secrets = local_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = await visit(pilot, "webhooks")
        await pilot.press("enter")
        await settle(pilot)
        deliveries = app.screen
        assert isinstance(deliveries, DeliveriesView)
        assert deliveries.crumbs() == ["Webhooks", "https://hooks.example.com/acme"]
        text = shown(app)
        assert "dead" in text and "delivered" in text and "timeout" in text
        assert len(row_keys(deliveries)) == 2
        await pilot.press("q")
        await settle(pilot)
        assert app.screen is view
    assert fleet.api.webhooks.list(OP)["items"]


async def test_doctor_runs_again_on_r(fleet_db: Path) -> None:
    app, fleet, _secrets = local_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = await visit(pilot, "doctor")
        assert "invariant/overCapacity" in row_keys(view)
        assert "fra-99" not in shown(app)
        pool = fleet.api.pools.show(OP, pool="vps-fra")
        fleet.api.hosts.adopt(OP, tenant_id="root", pool=pool["id"], name="fra-99")
        await pilot.press("r")
        await settle(pilot)
        assert "fra-99" in shown(app)  # vps.hosts.capacity: no inventory reported yet


async def test_w_writes_the_whole_usage_export_to_a_new_file_and_says_where(
    fleet_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    app, fleet, _secrets = local_app(fleet_db)
    windows = list(fleet.api.usage.export(OP))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await visit(pilot, "export")
        for _ in range(2):  # the second time the file is there: never overwritten
            await pilot.press("w")
            await settle(pilot)
            await pilot.press("enter")
            await settle(pilot)
    written = list(tmp_path.glob("usage-export-*.csv"))
    assert len(written) == 1
    lines = written[0].read_text().splitlines()
    assert lines[0].startswith("windowStart,windowEnd,tenantId") and len(lines) == len(windows) + 1
    assert f"Usage export: Wrote {len(windows):,} windows to {written[0]}" in said(app)
    assert f"Usage export: not written: {written[0]} exists: choose another name." in said(app)


def test_write_export_refuses_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "out.csv"
    assert write_export([], target) == 0
    with pytest.raises(FileExistsError):
        write_export([], target)


@pytest.fixture
def hetzner(clock: FakeClock, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHetzner]:
    monkeypatch.setenv("HCLOUD_TOKEN", "hc-console-token")
    monkeypatch.delenv("HCLOUD_MISSING", raising=False)
    with FakeHetzner(token="hc-console-token", clock=clock) as server:
        yield server


async def test_offers_lists_each_accounts_offers_and_an_account_that_fails_says_its_code(
    fleet: Fleet, hetzner: FakeHetzner
) -> None:
    fleet.api.tenants.create(OP, "acme")
    fleet.api.provider_accounts.create(OP, tenant_id="root", name="hz", provider="hetzner",
                                       token_env="HCLOUD_TOKEN", endpoint=hetzner.url)  # fmt: skip
    fleet.api.provider_accounts.create(OP, tenant_id="acme", name="broken", provider="hetzner",
                                       token_env="HCLOUD_MISSING", endpoint=hetzner.url)  # fmt: skip
    expected = fleet.api.provider_accounts.offers(OP, tenant_id="root", account_id="hz")["items"]
    app = make_app(LocalSource(fleet))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        view = await visit(pilot, "offers")
        rows = view.query_one(KeyedTable).all_rows
        assert len(rows) == len(expected) + 1
        failed = [r for k, r in rows.items() if k.startswith("acme/broken/")]
        assert len(failed) == 1 and ": " in str(failed[0].cells[-1])


# -- the deletes ----------------------------------------------------------------------------------


GPU_FLAVOR = ("gpu-burst", "gpu1.l40s")


def flavor_names(fleet: Fleet) -> set[tuple[str, str]]:
    """(pool, name) of every flavor listed (archived ones are not)."""
    return {(f["pool"], f["name"]) for f in LocalSource(fleet).flavors()}


async def test_a_used_flavor_is_archived_only_after_yes_and_its_confirm_names_its_instances(
    fleet_db: Path,
) -> None:
    app, fleet, _secrets = local_app(fleet_db)
    flavor = next(f for f in LocalSource(fleet).flavors() if (f["pool"], f["name"]) == GPU_FLAVOR)
    live = sorted(i["name"] for i in fleet.api.instances.list(OP)["items"]
                  if i["flavorId"] == flavor["id"] and i["state"] != "deleted")  # fmt: skip
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await visit(pilot, "flavors")
        await on_row(pilot, "gpu-burst gpu1.l40s")
        type_ahead(app, ["ctrl+d", "y"])  # a y typed before the confirm appears answers nothing
        asked = await confirm(pilot)
        assert GPU_FLAVOR in flavor_names(fleet)
        assert "archived, not deleted" in asked
        assert all(f"instance {name} (running)" in asked for name in live) and live
        await answer(pilot, "y")
    assert "Delete: gpu1.l40s is archived" in said(app), said(app)
    assert GPU_FLAVOR not in flavor_names(fleet)


async def test_an_environment_with_a_service_is_refused_with_its_code(fleet_db: Path) -> None:
    app, fleet, _secrets = local_app(fleet_db)
    env = fleet.api.environments.list(OP)["items"][0]
    fleet.api.services.create(OP, tenant_id=env["tenantId"], workspace="qa", name="api",
                              environment=env["name"])  # fmt: skip
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await visit(pilot, "environments")
        await pilot.press("ctrl+d")
        asked = await confirm(pilot)
        assert "The API refuses while services are in it" in asked
        assert "services in it: service qa/api (undeployed)" in asked
        await answer(pilot, "y")
    assert any("CONFLICT: environment staging still has services" in s for s in said(app))
    assert fleet.api.environments.show(OP, env["id"])["name"] == env["name"]


async def test_index_webhook_service_and_token_go_only_after_yes_in_a_worker(
    fleet_db: Path,
) -> None:
    fleet = open_test_fleet(fleet_db)
    admin_rows(fleet)
    source = Recording(LocalSource(fleet))
    app = make_app(source)  # type: ignore[arg-type]
    api = fleet.api
    web = next(s for s in api.services.list(OP)["items"] if s["deployed"])
    steps = [
        ("indexes", "docs", lambda: {i["name"] for i in api.indexes.list(OP)["items"]} - {"docs"}
         == {i["name"] for i in api.indexes.list(OP)["items"]}, None),
        ("webhooks", "acme", lambda: not api.webhooks.list(OP)["items"], None),
        ("services", f"~^{web['name']}$", lambda: web["id"] not in
         {s["id"] for s in api.services.list(OP)["items"]}, "the instance serving it is released"),
        ("tokens", "alice", lambda: api.iam.list_tokens(OP, tenant_id="acme")["items"][0]["state"]
         == "revoked", None),
    ]  # fmt: skip
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for view, word, gone, named in steps:
            await visit(pilot, view)
            await on_row(pilot, word)
            await pilot.press("ctrl+d")
            asked = await confirm(pilot)
            assert named is None or named in asked, asked
            await answer(pilot, "n")
            assert not gone(), view
            await pilot.press("ctrl+d")
            await confirm(pilot)
            await answer(pilot, "y")
            assert gone(), (view, said(app))
    names = {name for name, _on_ui in source.calls}
    assert {"delete_index", "delete_webhook", "delete_service", "revoke_token"} <= names
    assert "dependents" in names
    assert not [name for name, on_ui in source.calls if on_ui]  # never on the UI thread


async def test_a_pool_in_use_is_refused_and_an_unused_provider_account_goes(
    fleet_db: Path,
) -> None:
    app, fleet, _secrets = local_app(fleet_db)
    fleet.api.provider_accounts.create(OP, tenant_id="acme", name="hz-main", provider="hetzner",
                                       token_env="HCLOUD_TOKEN")  # fmt: skip
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await visit(pilot, "pools")
        await on_row(pilot, "~^vps-fra$")
        await pilot.press("ctrl+d")
        asked = await confirm(pilot)
        assert "The API refuses while anything is in it" in asked
        assert "it still has: hosts, flavors" in asked
        await answer(pilot, "y")
        assert any("CONFLICT: pool 'vps-fra' still has hosts, flavors" in s for s in said(app))
        await visit(pilot, "provider-accounts")
        await pilot.press("ctrl+d")
        assert "Nothing holds it: it is deleted." in await confirm(pilot)
        await answer(pilot, "y")
    assert fleet.api.pools.show(OP, pool="vps-fra")["name"] == "vps-fra"
    assert fleet.api.provider_accounts.list(OP, tenant_id="acme")["items"] == []


async def test_a_host_is_removed_only_when_nothing_ran_on_it_and_root_is_never_deleted(
    fleet_db: Path,
) -> None:
    app, fleet, _secrets = local_app(fleet_db)
    pool = fleet.api.pools.show(OP, pool="vps-fra")
    fleet.api.hosts.adopt(OP, tenant_id="root", pool=pool["id"], name="fra-99")
    agent = fleet.api.iam.create_token(OP, tenant_id="root", name="fra-99-agent", role="agent",
                                       host="fra-99")  # fmt: skip
    fleet.api.tenants.create(OP, "initech")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await visit(pilot, "hosts")
        await on_row(pilot, "~^fra-01$")
        await pilot.press("ctrl+d")
        assert "it still has: instances" in await confirm(pilot)
        await answer(pilot, "y")
        assert any("CONFLICT: host 'fra-01' has instances" in s for s in said(app)), said(app)
        await on_row(pilot, "~^fra-99$")
        await pilot.press("ctrl+d")
        said_first = await confirm(pilot)
        assert "agents' tokens are revoked: agent token fra-99-agent (active)" in said_first
        await answer(pilot, "y")
        await visit(pilot, "tenants")
        await on_row(pilot, "~^root$")
        await pilot.press("ctrl+d")
        assert "The API refuses" in await confirm(pilot)
        await answer(pilot, "y")
        await on_row(pilot, "~^initech$")
        await pilot.press("ctrl+d")
        await confirm(pilot)
        await answer(pilot, "y")
    hosts = {h["name"] for h in fleet.api.hosts.list(OP)["items"]}
    assert "fra-01" in hosts and "fra-99" not in hosts
    [token] = fleet.api.iam.list_tokens(OP, tenant_id="root", principal="fra-99-agent")["items"]
    assert (token["id"], token["state"]) == (agent["id"], "revoked")
    tenants = {t["id"] for t in fleet.api.tenants.list(OP)["items"]}
    assert "root" in tenants and "initech" not in tenants


# -- over HTTP ------------------------------------------------------------------------------------


async def test_admin_views_and_deletes_over_http(fleet: Fleet, remote: RemoteSource) -> None:
    secrets = admin_rows(fleet)
    local = LocalSource(fleet)
    reads = {"webhooks": local.webhooks(), "tokens": local.tokens(), "policies": local.policies(),
             "export": list(local.usage_export())}  # fmt: skip
    app = make_app(remote)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        for name in ADMIN_VIEWS:
            view = await visit(pilot, name)
            assert view.query_one(KeyedTable).all_rows or name == "export", name
            if name in reads:
                assert row_keys(view) == {str(i["id"]) for i in reads[name]}, name
            assert not any(s in shown(app) for s in secrets), name
        await visit(pilot, "flavors")
        await on_row(pilot, "gpu1.l40s")
        await pilot.press("ctrl+d")
        assert "archived, not deleted" in await confirm(pilot)
        await answer(pilot, "y")
    assert GPU_FLAVOR not in flavor_names(fleet)


def test_dependents_policies_doctor_and_export_over_http_match_in_process(
    fleet: Fleet, remote: RemoteSource
) -> None:
    local = LocalSource(fleet)
    used = next(f for f in local.flavors() if (f["pool"], f["name"]) == GPU_FLAVOR)
    assert remote.dependents("flavor", used) == local.dependents("flavor", used)
    web = next(s for s in local.services() if s["deployed"])
    assert remote.dependents("service", web) == local.dependents("service", web)
    serving = str(web["instanceId"])
    assert remote.instance_dependents(serving) == local.instance_dependents(serving)
    env = local.environments()[0]
    fleet.api.services.create(OP, tenant_id=env["tenantId"], workspace="qa", name="api",
                              environment=env["name"])  # fmt: skip
    assert remote.dependents("environment", env) == local.dependents("environment", env)
    with pytest.raises(ConflictError):
        remote.delete_environment(env["id"])
    admin_rows(fleet)
    assert remote.policies() == local.policies()
    assert remote.tokens() == local.tokens()
    hook = local.webhooks()[0]
    assert remote.dependents("webhook", hook) == local.dependents("webhook", hook)
    assert remote.webhook_deliveries(hook["id"]) == local.webhook_deliveries(hook["id"])
    pool = next(p for p in local.pools() if p["name"] == "vps-fra")
    assert remote.dependents("pool", pool) == local.dependents("pool", pool)
    with pytest.raises(ConflictError):
        remote.delete_pool(pool["id"])
    fleet.api.provider_accounts.create(OP, tenant_id="acme", name="hz-main", provider="hetzner",
                                       token_env="HCLOUD_TOKEN")  # fmt: skip
    account = local.provider_accounts()[0]
    assert remote.dependents("providerAccount", account) == {"items": [], "outcome": "deleted"}
    assert remote.delete_provider_account("acme", "hz-main")["deleted"] is True
    host = next(h for h in local.hosts() if h["name"] == "fra-01")
    assert remote.dependents("host", host) == local.dependents("host", host)
    root = {"id": "root"}
    assert remote.dependents("tenant", root) == local.dependents("tenant", root)
    fleet.api.tenants.create(OP, "initech")
    assert remote.delete_tenant("initech")["deleted"] is True
    assert remote.doctor(True).keys() == local.doctor(True).keys() == {"warnings", "invariants"}
    assert list(remote.usage_export()) == list(local.usage_export())


def test_every_delete_is_ctrl_d_and_each_views_keys_stay_unique() -> None:
    everything = every_action()
    assert len({a.name for a in everything}) == len(everything)
    for view in {a.view for a in everything}:
        keys = [a.key for a in actions_for(view)]
        assert len(keys) == len(set(keys)), view
    assert {a.view for a in DELETES} == {"pools", "provider-accounts", "hosts", "tenants",
                                         "flavors", "services", "environments", "indexes",
                                         "webhooks", "tokens"}  # fmt: skip
    assert {a.key for a in DELETES} == {"ctrl+d"}
    for name in ("delete_flavor", "delete_service", "delete_environment", "delete_index",
                 "delete_webhook", "revoke_token", "dependents", "delete_pool",
                 "delete_provider_account", "remove_host", "delete_tenant"):  # fmt: skip
        assert callable(getattr(LocalSource, name)) and callable(getattr(RemoteSource, name))

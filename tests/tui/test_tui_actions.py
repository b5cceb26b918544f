"""The console's actions: each asks with what changes, runs in a worker, says the result or the
error's code, changes state through the API; read-only refuses them; marks make them bulk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Input

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.errors import FleetError, NotFoundError
from bcfleet.fleet import Fleet
from bcfleet.tui.actions import ACTIONS, actions_for, question
from bcfleet.tui.remote_source import RemoteSource
from bcfleet.tui.screens.acting import error_text
from bcfleet.tui.screens.ask import AskValue
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.screens.hosts import HostsView
from bcfleet.tui.source import LocalSource
from bcfleet.tui.widgets.bars import StatusLine
from bcfleet.tui.widgets.keyed_table import MARK, KeyedTable
from tests.support.tui import make_app, open_test_fleet, settle
from tests.support.tui_actions import CHANGES, Recording, said

pytestmark = pytest.mark.anyio


def recorded_app(path: Path, **options: Any) -> tuple[Any, Fleet, Recording]:
    fleet = open_test_fleet(path)
    source = Recording(LocalSource(fleet, label="sqlite:///fleet.db"))
    return make_app(source, **options), fleet, source  # type: ignore[arg-type]


def table(app: Any) -> KeyedTable:
    return app.screen.query_one(KeyedTable)


def status(app: Any) -> str:
    return str(app.screen.query_one(StatusLine)._last[0])


def instance_id(fleet: Fleet, name: str) -> str:
    items = fleet.api.instances.list(OP)["items"]
    return str(next(i["id"] for i in items if i["name"] == name))


def instance_state(fleet: Fleet, name: str) -> str:
    return str(fleet.api.instances.show(OP, instance_id(fleet, name))["state"])


async def open_row(pilot: Any, view: str, word: str) -> None:
    """Switch to a view and filter it down to the rows matching a word."""
    await pilot.press(view)
    await settle(pilot)
    await pilot.press("slash", *word, "enter")
    await pilot.pause()


async def confirm(pilot: Any, answer: str = "y") -> str:
    """The confirm's question (once the facts it names are read); then answer it and wait for
    the worker."""
    await settle(pilot)
    screen = pilot.app.screen
    assert isinstance(screen, Confirm)
    asked = screen.question
    await pilot.press(answer)
    await settle(pilot)
    return asked


async def test_stop_asks_with_what_changes_runs_in_a_worker_and_says_the_result(
    fleet_db: Path,
) -> None:
    app, fleet, source = recorded_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await open_row(pilot, "9", "acme-web-07")
        await pilot.press("x")
        asked = await confirm(pilot)
        assert asked.startswith("Stop instance acme-web-07 (acme)?\n")
        assert instance_state(fleet, "acme-web-07") == "stopped"
        assert source.calls == [("stop_instance", False)]  # in a worker, not on the UI thread
        assert "Stop: acme-web-07 is stopped" in said(app)
        assert "stopped" in str(table(app).get_row_at(0)[2])  # the view fetched again


async def test_an_answer_of_no_changes_nothing(fleet_db: Path) -> None:
    app, fleet, source = recorded_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await open_row(pilot, "9", "acme-web-07")
        await pilot.press("ctrl+d")
        assert "cannot be undone" in await confirm(pilot, "n")
        assert instance_state(fleet, "acme-web-07") == "running"
        assert source.calls == []


async def test_deleting_the_instance_a_service_runs_on_names_it_and_the_api_refuses(
    fleet_db: Path,
) -> None:
    app, fleet, _source = recorded_app(fleet_db)
    web = next(s for s in fleet.api.services.list(OP)["items"] if s["deployed"])
    serving = fleet.api.instances.show(OP, str(web["instanceId"]))["name"]
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await open_row(pilot, "9", f"~^{serving}$")
        await pilot.press("ctrl+d")
        asked = await confirm(pilot)
        assert asked.splitlines()[1] == (
            "Its host, GPUs and quota are released; this cannot be undone; "
            "it serves: service prod/web (deployed)."
        )
        assert any(
            f"{serving} (acme): CONFLICT: instance {serving} serves service prod/web "
            "(deployed): undeploy it first" in s
            for s in said(app)
        ), said(app)
    assert fleet.api.services.show(OP, str(web["id"]))["instanceId"] == web["instanceId"]


async def test_taking_an_offer_back_names_what_the_tenant_holds_in_the_pool(
    fleet_db: Path,
) -> None:
    app, fleet, _source = recorded_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await open_row(pilot, "0", "gpu-burst")
        await pilot.press("O", *"acme", "enter")
        asked = await confirm(pilot, "n")
        line = asked.splitlines()[1]
        assert line.startswith("Tenant acme may no longer place in it; acme holds there: instance ")
        assert "(running)" in line and "reservation rsv_" in line
        await pilot.press("O", *"initech", "enter")
        asked = await confirm(pilot, "n")
        assert asked.splitlines()[1] == "Tenant initech may no longer place in it."
    pool = next(p for p in fleet.api.pools.list(OP)["items"] if p["name"] == "gpu-burst")
    assert "acme" in pool["offeredTo"]


async def test_an_error_says_its_code_and_message_and_start_resize_delete_work(
    fleet_db: Path,
) -> None:
    app, fleet, source = recorded_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await open_row(pilot, "9", "acme-web-07")
        await pilot.press("z", *"g1.small", "enter")  # resize needs a stopped instance
        assert "\nFlavor g1.medium → g1.small, on the same host." in await confirm(pilot)
        assert any(
            "Resize: not changed: acme-web-07 (acme): CONFLICT: resize needs a stopped instance"
            in s
            for s in said(app)
        )
        await pilot.press("x")
        await confirm(pilot)
        await pilot.press("z")
        assert isinstance(app.screen, AskValue)
        await pilot.press(*"g1.large", "enter")
        await confirm(pilot)
        shown = fleet.api.instances.show(OP, instance_id(fleet, "acme-web-07"))
        assert (shown["state"], shown["flavor"]) == ("stopped", "g1.large")
        await pilot.press("t")
        await confirm(pilot)
        assert instance_state(fleet, "acme-web-07") == "running"
        key = instance_id(fleet, "acme-web-07")
        await pilot.press("ctrl+d")
        await confirm(pilot)
        assert fleet.api.instances.show(OP, key)["state"] == "deleted"
        assert "Delete: acme-web-07 is deleted" in said(app)
        assert [c for c, _ in source.calls] == [
            "resize_instance", "stop_instance", "resize_instance", "start_instance",
            "delete_instance",
        ]  # fmt: skip
        assert not any(on_ui for _, on_ui in source.calls)


async def test_drain_says_how_many_guests_stay_and_undrain_brings_it_back(fleet_db: Path) -> None:
    app, fleet, source = recorded_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"fra-01", "enter", "c")
        await settle(pilot)  # the guests are counted in a worker first
        asked = await confirm(pilot)
        assert asked == "Drain host fra-01?\n1 guest stays, no new placements."
        assert fleet.api.hosts.show(OP, host="fra-01")["state"] == "draining"
        assert "draining" in str(table(app).get_row_at(0)[2])
        await pilot.press("u")
        assert "\nNew instances may be placed on it again." in await confirm(pilot)
        assert fleet.api.hosts.show(OP, host="fra-01")["state"] == "ready"
        assert source.calls == [
            ("host_guests", False), ("set_draining", False), ("set_draining", False)
        ]  # fmt: skip


async def test_cancel_a_reservation_releases_it(fleet_db: Path) -> None:
    app, fleet, _ = recorded_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await open_row(pilot, "3", "pending")
        key = table(app).cursor_key
        assert key is not None
        await pilot.press("ctrl+d")
        asked = await confirm(pilot)
        assert asked.startswith("Cancel reservation rsv_…") and "quota refunded" in asked
        assert fleet.api.reservations.get(OP, key)["state"] == "released"
        assert any(s.startswith("Cancel reservation: rsv_…") and "released" in s for s in said(app))


async def test_run_a_job_now(fleet_db: Path) -> None:
    app, fleet, source = recorded_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await open_row(pilot, "8", "spares")
        before = len(source.job_runs("spares"))
        await pilot.press("n")
        assert (await confirm(pilot)) == "Run job spares?\nIt runs once now, due or not."
        assert len(source.job_runs("spares")) == before + 1
        assert "Run now: spares: ok" in said(app)
        assert source.calls == [("run_job", False)]


async def test_read_only_refuses_every_action_and_says_so(fleet_db: Path) -> None:
    app, fleet, source = recorded_app(fleet_db, read_only=True)
    views = {"hosts": "1", "reservations": "3", "jobs": "8", "instances": "9"}
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for view, number in views.items():
            await pilot.press(number)
            await settle(pilot)
            footer = [b.binding.action for b in app.screen.active_bindings.values() if b.enabled]
            for action in actions_for(view):
                assert action.binding_action not in footer
                app.clear_notifications()
                await pilot.press(action.key)
                await pilot.pause()
                assert not isinstance(app.screen, Confirm | AskValue)
                verb = action.verb.lower()
                assert said(app) == [
                    f"Not changed: Read-only: {verb} is refused "
                    "(the dashboard was opened with --read-only)."
                ], action.name
        assert source.calls == []
    assert fleet.api.hosts.show(OP, host="fra-07")["state"] == "draining"


async def test_marked_rows_are_shown_listed_in_one_confirm_and_answered_row_by_row(
    fleet_db: Path,
) -> None:
    app, fleet, source = recorded_app(fleet_db)
    fleet.api.instances.stop(OP, instance_id(fleet, "acme-web-02"))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await open_row(pilot, "9", "~^acme-web-0[127]$")
        t = table(app)
        assert t.shown_count == 3
        await pilot.press("space", "space", "space")  # each moves down a row
        assert len(t.marked) == 3
        assert all(str(t.get_row_at(i)[0]).startswith(MARK) for i in range(3))
        assert "3 marked" in status(app)
        await pilot.press("z", *"g1.small", "enter")
        asked = await confirm(pilot)
        lines = asked.splitlines()
        assert lines[0] == "Resize 3 instances?"
        assert sorted(line.split(":")[0] for line in lines[1:]) == [
            "• acme-web-01 (acme)", "• acme-web-02 (acme)", "• acme-web-07 (acme)"
        ]  # fmt: skip
        assert [c for c, _ in source.calls] == ["resize_instance"] * 3
        outcomes = {o.text.split(" ")[0]: o.ok for o in app.screen.outcomes}
        assert outcomes == {"acme-web-01": False, "acme-web-07": False, "acme-web-02": True}
        note = next(s for s in said(app) if s.startswith("Resize: 1 of 3 done"))
        assert "acme-web-02 is now g1.small" in note
        assert "acme-web-07 (acme): CONFLICT: resize needs a stopped instance" in note
        assert not t.marked and "marked" not in status(app)  # done: the marks are cleared
        assert not any(str(t.get_row_at(i)[0]).startswith(MARK) for i in range(3))

        await pilot.press("g", "space", "space", "x")  # the two still running
        assert (await confirm(pilot)).startswith("Stop 2 instances?")
        states = {n: instance_state(fleet, n) for n in ("acme-web-01", "acme-web-07")}
        assert states == {"acme-web-01": "stopped", "acme-web-07": "stopped"}
        assert any(s.startswith("Stop: 2 of 2 done") for s in said(app))
        assert not any(on_ui for _, on_ui in source.calls)


async def test_an_action_takes_only_the_marked_rows_the_filter_shows_and_says_the_rest(
    fleet_db: Path,
) -> None:
    app, fleet, source = recorded_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await open_row(pilot, "9", "~^acme-web-0[127]$")
        t = table(app)
        await pilot.press("space", "space", "space")
        await pilot.press("slash", "ctrl+u", *"acme-web-07", "enter")  # two marks hidden
        await pilot.pause()
        assert t.shown_count == 1 and len(t.marked) == 3
        assert "3 marked (2 hidden by the filter)" in status(app)
        await pilot.press("x")
        asked = await confirm(pilot)
        assert asked.splitlines() == [
            "Stop instance acme-web-07 (acme)?",
            "It stops; it keeps its host, GPUs and quota.",
            "2 marked rows are hidden by the filter and left out.",
        ]
        assert [c for c, _ in source.calls] == ["stop_instance"]
        assert instance_state(fleet, "acme-web-07") == "stopped"
        assert instance_state(fleet, "acme-web-01") == "running"
        assert len(t.marked) == 2  # the hidden marks stay for later
        assert "2 marked (2 hidden by the filter)" in status(app)

        await pilot.press("escape")  # the filter is cleared: the two marked rows show again
        await pilot.pause()
        assert len(t.marked_shown()) == 2 and "hidden" not in status(app)


async def test_space_unmarks_and_escape_clears_the_filter_then_the_marks(fleet_db: Path) -> None:
    app, _, _ = recorded_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("space", "space", "up", "space")
        t = table(app)
        assert len(t.marked) == 1
        await pilot.press("slash", *"ams", "enter", "escape")
        assert not t.filter_text and len(t.marked) == 1
        await pilot.press("escape")
        assert not t.marked
        assert isinstance(app.screen, HostsView)


async def test_actions_over_http_change_the_fleet(fleet: Fleet, remote: RemoteSource) -> None:
    app = make_app(remote)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"fra-02", "enter", "c")
        await settle(pilot)
        guests = len(fleet.api.instances.specs_for_host(OP, "fra-02")["items"])
        assert f"{guests} guests stay, no new placements" in await confirm(pilot)
        assert fleet.api.hosts.show(OP, host="fra-02")["state"] == "draining"
        name = next(i["name"] for i in remote.instances() if i["state"] == "running")
        await open_row(pilot, "9", name)
        await pilot.press("x")
        await confirm(pilot)
        assert instance_state(fleet, name) == "stopped"
        assert f"Stop: {name} is stopped" in said(app)


def test_every_action_of_pools_quotas_and_services_runs_locally_and_remotely(
    fleet: Fleet, remote: RemoteSource
) -> None:
    """The views for these land separately; their actions are declared and their calls work."""
    for source in (LocalSource(fleet), remote):
        pool = next(p for p in source.pools() if p["name"] == "vps-ams")
        by_name = {a.name: a for a in ACTIONS}
        offered = by_name["offer"].run(source, pool, "globex")
        assert "globex" in offered["offeredTo"]
        assert by_name["offer"].done(pool, offered) == "vps-ams is offered to acme, globex"
        taken = by_name["unoffer"].run(source, pool, "globex")
        assert "globex" not in taken["offeredTo"]
        quota = {"tenantId": "acme", "poolId": pool["id"], "pool": "vps-ams"}
        answer = by_name["edit_quota"].run(source, quota, {"gpu": 3, "vcpu": None})
        assert (answer["limits"]["gpu"], answer["limits"]["vcpu"]) == (3, None)
        assert by_name["edit_quota"].done(quota, answer).startswith("acme in vps-ams: ")
        services = fleet.api.services.list(OP)["items"]
        deployed = next(s for s in services if s["deployed"])
        gone = by_name["undeploy"].run(source, deployed, None)
        assert gone["status"] == "undeployed"
        if isinstance(source, LocalSource):  # takes the demo's one ready spare of its size
            back = by_name["deploy"].run(source, deployed, None)
            assert by_name["deploy"].done(deployed, back) == f"{deployed['name']} is deployed"
        else:  # none left: the answer is the API's error, as the console says it
            with pytest.raises(FleetError) as refused:
                by_name["deploy"].run(source, deployed, None)
            assert error_text(refused.value).startswith("NO_CAPACITY: No free instance")


def test_each_views_keys_and_every_action_name_are_unique_and_both_sources_make_the_calls() -> None:
    assert len({a.name for a in ACTIONS}) == len(ACTIONS)
    for view in {a.view for a in ACTIONS}:
        keys = [a.key for a in actions_for(view)]
        assert len(keys) == len(set(keys)), view
    for name in CHANGES - {"host_guests"}:
        assert callable(getattr(LocalSource, name)) and callable(getattr(RemoteSource, name))


async def test_the_palette_offers_the_actions_of_the_row_or_of_the_marked_rows(
    fleet_db: Path,
) -> None:
    app, _, _ = recorded_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"~^fra-0[12]$", "enter")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert {"Drain host fra-01", "Undrain host fra-01"} <= set(titles)
        await pilot.press("space", "space")
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert {"Drain 2 marked hosts", "Undrain 2 marked hosts"} <= set(titles)


def test_instance_and_reservation_actions_answer_alike_locally_and_over_http(
    fleet: Fleet, remote: RemoteSource
) -> None:
    by_name = {a.name: a for a in ACTIONS}
    local = LocalSource(fleet)
    running = [i for i in local.instances() if i["state"] == "running" and i.get("flavor")]
    for source, instance in zip((local, remote), running[:2], strict=True):
        steps = [("stop", None, "stopped"), ("start", None, "running"), ("stop", None, "stopped")]
        for name, value, state in steps:
            answer = by_name[name].run(source, instance, value)
            assert answer["state"] == state
            assert by_name[name].done(instance, answer) == f"{instance['name']} is {state}"
        with pytest.raises(FleetError) as refused:
            by_name["resize"].run(source, instance, "no-such-flavor")
        assert error_text(refused.value).startswith("NOT_FOUND: flavor 'no-such-flavor'")
        gone = by_name["delete"].run(source, instance, None)
        assert gone["state"] == "deleted"
    reservations = [r for r in local.reservations() if r["state"] != "released"]
    for source, reservation in zip((local, remote), reservations[:2], strict=True):
        answer = by_name["cancel"].run(source, reservation, None)
        assert answer["state"] == "released"
        assert by_name["cancel"].done(reservation, answer).endswith(" is released")


async def test_when_the_confirms_facts_cannot_be_read_nothing_is_asked_or_changed(
    fleet_db: Path,
) -> None:
    app, fleet, source = recorded_app(fleet_db)

    def host_guests(host: str) -> list[Any]:
        raise NotFoundError(f"host {host!r} not found", {"host": host})

    source.source.host_guests = host_guests  # type: ignore[method-assign]
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"fra-01", "enter", "c")
        await settle(pilot)
        assert isinstance(app.screen, HostsView)
        assert "Not changed: NOT_FOUND: host 'fra-01' not found" in said(app)
        assert [c for c, _ in source.calls] == ["host_guests"]
    assert fleet.api.hosts.show(OP, host="fra-01")["state"] == "ready"


async def test_ctrl_a_marks_every_row_shown_and_again_unmarks_them(fleet_db: Path) -> None:
    app, fleet, _ = recorded_app(fleet_db)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("slash", *"~^burst-", "enter", "ctrl+a")
        t = table(app)
        assert {str(t.all_rows[k].cells[0]) for k in t.marked} == {"burst-01", "burst-02"}
        assert t.shown_count == 2 and "2 marked" in status(app)
        await pilot.press("ctrl+a")
        assert not t.marked
        await pilot.press("ctrl+a", "c")
        await settle(pilot)
        assert (await confirm(pilot)) == (
            "Drain 2 hosts?\n2 guests stay on them, no new placements.\n• burst-01\n• burst-02"
        )
    states = {fleet.api.hosts.show(OP, host=h)["state"] for h in ("burst-01", "burst-02")}
    assert states == {"draining"}


def test_a_bulk_confirm_says_a_shared_effect_once_and_lists_at_most_eight_rows() -> None:
    stop = next(a for a in ACTIONS if a.name == "stop")
    rows = [({"name": f"web-{n}", "tenantId": "acme"}, {}) for n in range(10)]
    lines = question(stop, rows, None).splitlines()
    assert lines[:3] == [
        "Stop 10 instances?", "It stops; it keeps its host, GPUs and quota.", "• web-0 (acme)"
    ]  # fmt: skip
    assert lines[-2:] == ["• web-7 (acme)", "… and 2 more"] and len(lines) == 11
    drain = next(a for a in ACTIONS if a.name == "drain")
    hosts = [({"name": "fra-01"}, {"guests": 1}), ({"name": "fra-02"}, {"guests": 3})]
    assert question(drain, hosts, None).splitlines() == [
        "Drain 2 hosts?", "4 guests stay on them, no new placements.", "• fra-01", "• fra-02"
    ]  # fmt: skip
    tens = [({"name": f"ams-{n:02}"}, {"guests": 10}) for n in range(10)]
    assert question(drain, tens, None).splitlines()[1] == (
        "100 guests stay on them, no new placements."
    )


async def test_the_reservation_cancel_dialog_names_its_two_buttons_apart(fleet_db: Path) -> None:
    app, fleet, _ = recorded_app(fleet_db)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await open_row(pilot, "3", "pending")
        key = table(app).cursor_key
        assert key is not None
        await pilot.press("ctrl+d")
        await settle(pilot)
        screen = app.screen
        assert isinstance(screen, Confirm)
        labels = [str(screen.query_one(f"#{b}", Button).label) for b in ("yes", "no")]
        assert labels == ["Cancel reservation (y)", "Keep (n)"]
        await pilot.press("n")
        await settle(pilot)
    assert fleet.api.reservations.get(OP, key)["state"] == "pending"


async def test_the_quota_prompt_starts_at_the_limits_and_the_confirm_says_old_to_new(
    fleet_db: Path,
) -> None:
    app, fleet, _ = recorded_app(fleet_db)
    quota = next(q for q in fleet.api.quotas.show(OP, tenant_id="acme")["items"] if q.get("limits"))
    limits = {k: v for k, v in quota["limits"].items() if v is not None}
    gpu = limits.get("gpu")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await pilot.press("colon", *"quotas", "enter")
        await settle(pilot)
        await pilot.press("slash", *f"tenant:acme pool:{quota['pool']}", "enter")
        await pilot.pause()
        await pilot.press("e")
        await settle(pilot)
        ask = app.screen
        assert isinstance(ask, AskValue)
        field = ask.query_one(Input)
        assert field.value == " ".join(f"{k}={v}" for k, v in limits.items())
        field.value = "gpu=7"
        await pilot.press("enter")
        asked = await confirm(pilot, "n")
    shown = "unlimited" if gpu is None else str(gpu)
    assert asked == f"Set quota acme in {quota['pool']}?\nGpu {shown} → 7."

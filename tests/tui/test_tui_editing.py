"""Create and edit from the console: `e` and `n` open FleetConfig YAML in $EDITOR (a fake one
here, a script that rewrites the file), the plan is shown and applied as `fleet apply` applies
it; a bad edit reopens with file:line:col; STALE_PLAN; `:plan FILE`."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.fleet import Fleet
from bcfleet.reconcile.apply import Approved, apply, make_plan
from bcfleet.reconcile.load import load_fleetconfig_text
from bcfleet.tui.editing import MARK, NO_TERMINAL
from bcfleet.tui.remote_source import RemoteSource
from bcfleet.tui.screens.plan import PlanConfirm
from bcfleet.tui.source import LocalSource
from tests.support.tui import local_app, make_app, settle, type_ahead

pytestmark = pytest.mark.anyio

FAKE_EDITOR = """\
import json, pathlib, sys
steps = pathlib.Path(sys.argv[1])
target = pathlib.Path(sys.argv[2])
runs = json.loads(steps.read_text())
seen = pathlib.Path(str(steps) + ".seen")
opened = target.read_text()
seen.write_text(json.dumps([*json.loads(seen.read_text() if seen.exists() else "[]"), opened]))
step = runs.pop(0) if runs else {}
steps.write_text(json.dumps(runs))
text = opened
for old, new in step.get("replace", []):
    assert old in text, (old, text)
    text = text.replace(old, new)
if "write" in step:
    text = step["write"]
target.write_text(text)
"""


class Editor:
    """A fake $EDITOR: each run takes the next step (replace text, or write a whole file) and
    records what it was opened with."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        script = tmp_path / "editor.py"
        script.write_text(FAKE_EDITOR)
        self.steps = tmp_path / "steps.json"
        self.steps.write_text("[]")
        monkeypatch.setenv("EDITOR", f"{sys.executable} {script} {self.steps}")

    def will(self, *steps: dict[str, Any]) -> None:
        self.steps.write_text(json.dumps(list(steps)))

    @property
    def opened(self) -> list[str]:
        seen = Path(f"{self.steps}.seen")
        return json.loads(seen.read_text()) if seen.exists() else []


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Editor:
    return Editor(tmp_path, monkeypatch)


def flavors(fleet: Fleet) -> dict[str, dict[str, Any]]:
    return {f"{f['pool']}/{f['name']}": dict(f) for f in LocalSource(fleet).flavors()}


def said(app: Any) -> str:
    return "\n".join(str(n.message) for n in app._notifications)


async def on_row(pilot: Any, text: str) -> None:
    """Filter the view down to the row matching text, cursor on it."""
    await pilot.press("slash", *text, "enter")
    await settle(pilot)


def manage_two_flavors(fleet: Fleet) -> None:
    """A FleetConfig manages two flavors of vps-ams (as after `fleet apply -f`)."""
    text = """\
apiVersion: bcfleet.dev/v1
kind: FleetConfig
pools:
- name: vps-ams
  kind: vps-host
flavors:
- {pool: vps-ams, name: kept-a, vcpu: 2, memoryGiB: 4, diskGiB: 20}
- {pool: vps-ams, name: kept-b, vcpu: 2, memoryGiB: 4, diskGiB: 20}
"""
    desired = load_fleetconfig_text(text, host_reserve=fleet.settings.host_reserve)
    result = make_plan(fleet, OP, desired)
    from bcfleet.reconcile.apply import plan_json

    apply(fleet, OP, Approved(desired, plan_json(result), auto_approve=True))


async def test_e_edits_one_flavor_and_the_others_the_config_manages_stay(
    fleet_db: Path, editor: Editor
) -> None:
    app, fleet = local_app(fleet_db, start="flavors")
    manage_two_flavors(fleet)
    editor.will({"replace": [["vcpu: 2", "vcpu: 3"]]})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await on_row(pilot, "kept-a")
        await pilot.press("e")
        await settle(pilot)
        assert "name: kept-a" in editor.opened[0]
        assert isinstance(app.screen, PlanConfirm)
        assert "~ vcpu" in app.screen.plan_text and "kept-b" not in app.screen.plan_text
        await pilot.press("y")
        await settle(pilot)
        assert "Apply complete! 0 added, 1 changed, 0 deleted." in said(app)
    now = flavors(fleet)
    assert now["vps-ams/kept-a"]["vcpu"] == 3
    assert now["vps-ams/kept-b"]["vcpu"] == 2  # left out of the edit, not deleted


async def test_a_bad_edit_reopens_with_file_line_col_then_the_fix_is_planned(
    fleet_db: Path, editor: Editor
) -> None:
    app, fleet = local_app(fleet_db, start="flavors")
    editor.will(
        {"replace": [["name: new-flavor", "name: fixed-one"], ["vcpu: 2", "vcpu: many"]]},
        {"replace": [["vcpu: many", "vcpu: 4"]]},
    )
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        first, second = editor.opened
        assert first.startswith(MARK)  # the template's own note
        notes = [line for line in second.splitlines() if line.startswith(MARK)]
        problem = next(line for line in notes if ".yaml:" in line)
        where = problem.split(".yaml:")[1].split(":")[:2]
        line, column = int(where[0]), int(where[1])
        assert second.splitlines()[line - 1][column - 1 :].startswith("many")
        assert isinstance(app.screen, PlanConfirm)
        assert "+ flavor." in app.screen.plan_text and "fixed-one" in app.screen.plan_text
        await pilot.press("n")
        await settle(pilot)
        assert "Plan not applied" in said(app)
    assert not any(key.endswith("/fixed-one") for key in flavors(fleet))


async def test_an_unchanged_save_or_an_empty_file_cancels(fleet_db: Path, editor: Editor) -> None:
    app, fleet = local_app(fleet_db, start="flavors")
    before = flavors(fleet)
    editor.will({}, {"write": "# nothing\n\n"})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert "No change saved: edit cancelled." in said(app)
        await pilot.press("n")
        await settle(pilot)
        assert "Empty file: edit cancelled" in said(app)
        assert not isinstance(app.screen, PlanConfirm)
    assert flavors(fleet) == before


async def test_a_change_after_the_plan_was_shown_is_stale_and_nothing_is_applied(
    fleet_db: Path, editor: Editor
) -> None:
    app, fleet = local_app(fleet_db, start="flavors")
    manage_two_flavors(fleet)
    editor.will({"replace": [["memoryGiB: 4", "memoryGiB: 8"]]})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await on_row(pilot, "kept-a")
        await pilot.press("e")
        await settle(pilot)
        assert isinstance(app.screen, PlanConfirm)
        pool = fleet.api.pools.show(OP, pool="vps-ams")
        fleet.api.flavors.update(OP, tenant_id=pool["owner"], pool_id=pool["id"], name="kept-a",
                                 vcpu=6, memory_gib=4, disk_gib=20)  # fmt: skip
        await pilot.press("y")
        await settle(pilot)
        assert "STALE_PLAN" in said(app)
    now = flavors(fleet)["vps-ams/kept-a"]
    assert (now["vcpu"], now["memoryGiB"]) == (6, 4)


async def test_plan_file_shows_the_plan_and_a_typed_ahead_y_never_applies_it(
    fleet_db: Path, tmp_path: Path
) -> None:
    document = tmp_path / "Team.yaml"  # the name keeps its capitals
    document.write_text(
        "apiVersion: bcfleet.dev/v1\nkind: FleetConfig\ntenants:\n- id: team-b\n  name: B\n"
    )
    app, fleet = local_app(fleet_db, start="flavors")
    tenants = lambda: {t["id"] for t in fleet.api.tenants.list(OP)["items"]}  # noqa: E731
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        type_ahead(app, [":", *f"plan {document}", "enter", "y"])
        await settle(pilot)
        assert isinstance(app.screen, PlanConfirm)
        assert "+ tenant.team-b" in app.screen.plan_text
        assert "team-b" not in tenants()  # the y typed ahead answered nothing
        await pilot.press("y")
        await settle(pilot)
        assert "Apply complete! 0 added" not in said(app)
        assert "Apply complete! 1 added, 0 changed, 0 deleted." in said(app)
    assert "team-b" in tenants()


async def test_without_editor_and_without_a_terminal_nothing_is_opened(
    fleet_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("EDITOR", raising=False)
    app, fleet = local_app(fleet_db, start="flavors")
    before = flavors(fleet)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert NO_TERMINAL in said(app)
    assert flavors(fleet) == before


async def test_over_http_e_n_and_plan_say_they_are_not_available(
    remote: RemoteSource, editor: Editor, tmp_path: Path
) -> None:
    document = tmp_path / "fleet.yaml"
    document.write_text("apiVersion: bcfleet.dev/v1\nkind: FleetConfig\n")
    app = make_app(remote, start="flavors")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        type_ahead(app, [":", *f"plan {document}", "enter"])
        await settle(pilot)
        notes = [str(n.message) for n in app._notifications]
        assert [n.split(" is not")[0] for n in notes] == ["Editing", "Creating", ":plan"]
        assert all("not available over HTTP" in n for n in notes)
    assert editor.opened == []


async def test_e_on_what_a_fleetconfig_does_not_declare_says_so(
    fleet_db: Path, editor: Editor
) -> None:
    app, _ = local_app(fleet_db, start="instances")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e")
        await settle(pilot)
        assert "A FleetConfig does not declare an instance" in said(app)
    assert editor.opened == []


async def test_a_plan_with_errors_reopens_the_editor_with_them(
    fleet_db: Path, editor: Editor
) -> None:
    app, fleet = local_app(fleet_db, start="hosts")
    before = fleet.api.hosts.show(OP, host="fra-01")["pool"]
    editor.will({"replace": [["pool: vps-fra", "pool: vps-ams"]]}, {"write": ""})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await on_row(pilot, "fra-01")
        await pilot.press("e")
        await settle(pilot)
        reopened = editor.opened[1]
        assert reopened.startswith(f"{MARK} The plan of this edit has errors")
        assert "CONFLICT: host fra-01 cannot be moved to pool vps-ams" in reopened
        assert "Empty file: edit cancelled" in said(app)
    assert fleet.api.hosts.show(OP, host="fra-01")["pool"] == before


async def test_plan_file_with_a_bad_document_says_where_and_read_only_refuses_e_and_n(
    fleet_db: Path, tmp_path: Path, editor: Editor
) -> None:
    document = tmp_path / "bad.yaml"
    document.write_text("apiVersion: bcfleet.dev/v1\nkind: FleetConfig\ntenants:\n- name: x\n")
    app, _ = local_app(fleet_db, start="flavors")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        type_ahead(app, [":", *f"plan {document}", "enter"])
        await settle(pilot)
        assert f"INVALID_INPUT: {document}:4:3:" in said(app)
        assert not isinstance(app.screen, PlanConfirm)
    app, fleet = local_app(fleet_db, start="flavors", read_only=True)
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("e", "n")
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert not [t for t in titles if "FleetConfig" in t]
        good = tmp_path / "good.yaml"
        good.write_text("apiVersion: bcfleet.dev/v1\nkind: FleetConfig\ntenants:\n- id: ro\n")
        type_ahead(app, [":", *f"plan {good}", "enter"])
        await settle(pilot)
        assert isinstance(app.screen, PlanConfirm) and "+ tenant.ro" in app.screen.plan_text
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, PlanConfirm)  # y does nothing here; n closes
        await pilot.press("n")
        await settle(pilot)
        assert "Plan not applied" in said(app)
    assert editor.opened == []
    assert "ro" not in {t["id"] for t in fleet.api.tenants.list(OP)["items"]}


async def test_the_compute_tab_edits_its_tenants_settings_as_yaml(
    fleet_db: Path, editor: Editor
) -> None:
    app, fleet = local_app(fleet_db, start="compute", tenant="acme")
    editor.will({"replace": [["spares: 2", "spares: 3"]]})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Edit these compute settings as FleetConfig YAML" in titles
        app.screen.action_edit_yaml()  # type: ignore[attr-defined]
        await settle(pilot)
        assert editor.opened[0].startswith("compute:\n- tenant: acme\n")
        assert isinstance(app.screen, PlanConfirm)
        assert "compute.acme" in app.screen.plan_text
        await pilot.press("y")
        await settle(pilot)
        assert "1 changed" in said(app)
    sizes = fleet.api.settings.compute_show(OP, tenant_id="acme")["sizes"]
    assert sizes["large"]["spares"] == 3


async def test_shift_e_edits_a_quota_where_e_sets_its_limits(
    fleet_db: Path, editor: Editor
) -> None:
    app, fleet = local_app(fleet_db, start="quotas")
    editor.will({"write": "quotas:\n- tenant: acme\n  pool: vps-ams\n  vcpu: 77\n"})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await on_row(pilot, "acme vps-ams")
        await pilot.press("E")
        await settle(pilot)
        assert editor.opened[0].startswith("quotas:\n- tenant: acme\n  pool: vps-ams\n")
        assert isinstance(app.screen, PlanConfirm)
        await pilot.press("y")
        await settle(pilot)
    quotas = {(q["tenantId"], q["pool"]): q for q in LocalSource(fleet).quotas()}
    assert quotas[("acme", "vps-ams")]["limits"]["vcpu"] == 77

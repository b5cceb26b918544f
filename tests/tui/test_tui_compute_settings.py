"""The Compute settings view (document 004's Compute tab) on the demo's acme: live credits, the locked
default, in-use blocks naming service and workspace, the saved message, Retry."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Input, Select, Static

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.domain.compute_settings import ComputeSettings
from bcfleet.fleet import Fleet
from bcfleet.tui.compute_model import Form, evaluate
from bcfleet.tui.source import ComputeSnapshot, LocalSource
from bcfleet.tui.widgets.onoff import OnOff
from tests.support.tui import build_fleet, flip, make_app, open_test_fleet, settle

pytestmark = pytest.mark.anyio


class FailingOnce(LocalSource):
    """The fleet's API, except that the first load of the settings fails."""

    failures = 1

    def compute_settings(self, tenant: str) -> Any:
        if self.failures:
            self.failures -= 1
            raise OSError("connection refused")
        return super().compute_settings(tenant)


@pytest.fixture
def fleet(tmp_path: Path) -> Fleet:
    return open_test_fleet(build_fleet(tmp_path))


def compute_app(fleet: Fleet, **options: Any) -> Any:
    return make_app(LocalSource(fleet, label="x"), start="compute", tenant="acme", **options)


def text(app: Any, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def stored(fleet: Fleet) -> dict[str, Any]:
    return fleet.api.settings.compute_show(OP, tenant_id="acme")


async def type_spares(pilot: Any, size: str, value: str) -> None:
    field = pilot.app.screen.query_one(f"#spares-{size}", Input)
    field.focus()
    await pilot.pause()
    field.value = ""
    await pilot.press(*value)
    await pilot.pause()


async def test_credits_follow_the_spares_as_they_are_typed(fleet: Fleet) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert text(app, "#total") == "2,160"  # the demo: 1 Medium and 2 Large spares
        await type_spares(pilot, "large", "3")
        assert text(app, "#credits-large") == "2,160"
        await type_spares(pilot, "small", "1")
        assert text(app, "#total") == "3,600"
        assert stored(fleet)["totalCreditsPerMonth"] == 2160  # nothing saved yet
        assert "unsaved changes" in str(app.screen.summary())


async def test_more_than_ten_spares_costs_ten_and_says_so(fleet: Fleet) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await type_spares(pilot, "medium", "15")
        assert text(app, "#credits-medium") == "7,200"
        assert "so we keep 10 instances ready" in text(app, "#warnings")


async def test_save_answers_with_the_documents_message(fleet: Fleet) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await type_spares(pilot, "xlarge", "2")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert text(app, "#message").startswith("Your compute settings are saved.")
        assert stored(fleet)["sizes"]["xlarge"]["spares"] == 2
        assert app.screen.query_one("#save", Button).disabled  # nothing left to save


async def test_the_default_sizes_switch_is_locked(fleet: Fleet) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        switch = await flip(pilot, "large")  # the demo's default size
        assert switch.locked and "locked" in str(switch.render())
        assert switch.value is True
        assert "first choose a different default size" in text(app, "#message")
        choices = [str(label) for label, _ in app.screen.query_one("#default", Select)._options]
        assert "Medium (1 vCPU, 4 GiB memory)" in choices


async def test_turning_off_a_size_in_use_names_service_and_workspace_and_blocks_save(
    fleet: Fleet,
) -> None:
    app = compute_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        app.screen.query_one("#default", Select).value = "medium"
        await pilot.pause()
        assert not app.screen.query_one("#enabled-large", OnOff).locked
        await flip(pilot, "large")
        warning = text(app, "#warnings")
        assert "Size Large is in use: service web (workspace prod)" in warning
        assert "index docs (workspace prod)" in warning
        assert app.screen.query_one("#save", Button).disabled
        await pilot.press("ctrl+s")
        assert "in use" in text(app, "#message")
        assert stored(fleet)["sizes"]["large"]["enabled"] is True
        await pilot.press("space")  # back on: the warning goes
        assert "in use" not in text(app, "#warnings")


async def test_a_save_refused_by_the_fleet_names_the_user_and_changes_nothing(
    fleet: Fleet,
) -> None:
    """Something started using the size after the tab was opened: the save itself refuses."""
    app = compute_app(fleet)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await flip(pilot, "xlarge")
        assert app.screen.query_one("#save", Button).disabled is False
        fleet.api.environments.create(OP, tenant_id="acme", name="gpu-lab", size="xlarge")
        await pilot.press("ctrl+s")
        await settle(pilot)
        message = text(app, "#message")
        assert "Not saved (SIZE_IN_USE)" in message
        assert "environment gpu-lab" in message
        assert "Your settings stay as they were." in message
        assert stored(fleet)["sizes"]["xlarge"]["enabled"] is True


async def test_retry_after_the_settings_failed_to_load(fleet: Fleet) -> None:
    app = make_app(FailingOnce(fleet, label="x"), start="compute", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.screen.query_one("#load-failed").display
        assert "connection refused" in text(app, "#load-error")
        await pilot.click("#retry")
        await settle(pilot)
        assert not app.screen.query_one("#load-failed").display
        assert app.screen.query_one("#compute").display


async def test_read_only_shows_the_settings_without_save(fleet: Fleet) -> None:
    app = compute_app(fleet, read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert not app.screen.query_one("#save", Button).display
        switch = await flip(pilot, "small")
        await pilot.press("ctrl+s")
        assert switch.value is True
        assert stored(fleet)["version"] == 1


@pytest.mark.parametrize(
    ("form_change", "problem"),
    [
        pytest.param(
            lambda f: f.with_enabled("medium", False),
            "choose a default size",
            id="medium-off-without-a-default-asks-for-one",
        ),
        pytest.param(
            lambda f: f.with_spares("small", ""),
            "Enter a number of spare instances",
            id="empty-spares",
        ),
    ],
)
def test_the_form_refuses_what_a_save_would(form_change: Any, problem: str) -> None:
    snapshot = ComputeSnapshot("acme", ComputeSettings())
    ev = evaluate(snapshot, form_change(Form.of(snapshot.settings)))
    assert not ev.can_save
    assert any(problem in p for p in ev.problems)


def test_only_enabled_sizes_are_default_choices() -> None:
    snapshot = ComputeSnapshot("acme", ComputeSettings())
    ev = evaluate(snapshot, Form.of(snapshot.settings).with_enabled("small", False))
    assert [name for name, _ in ev.default_choices] == ["medium", "large", "xlarge"]
    assert ev.lines[0].credits == "-"
    assert ev.can_save

"""The Compute settings view (document 004's Compute tab): live credits, the locked default, in-use blocks, saving."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Button, Input, Select, Static

from bcfleet.domain.compute_settings import (
    ComputeSettings,
    EnvironmentUse,
    ServiceUse,
    SizeUsers,
)
from bcfleet.tui.compute_model import Form, evaluate
from bcfleet.tui.source import ComputeSnapshot
from bcfleet.tui.widgets.onoff import OnOff
from tests.test_tui_support import ComputeFake, build_fleet, make_app, open_test_fleet, settle

pytestmark = pytest.mark.anyio

WEB = ServiceUse("svc_1", "prod", "web", "serverless", deployed=True, size="large")
STAGING = EnvironmentUse("env_1", "staging", "large")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def fake(tmp_path: Path) -> ComputeFake:
    return ComputeFake(open_test_fleet(build_fleet(tmp_path)), SizeUsers(services=(WEB,)))


def text(app: Any, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def type_spares(pilot: Any, size: str, value: str) -> None:
    field = pilot.app.screen.query_one(f"#spares-{size}", Input)
    field.focus()
    await pilot.pause()
    field.value = ""
    await pilot.press(*value)
    await pilot.pause()


async def test_credits_follow_the_spares_as_they_are_typed(fake: ComputeFake) -> None:
    app = make_app(fake, start="compute", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert text(app, "#total") == "0"
        await type_spares(pilot, "large", "2")
        assert text(app, "#credits-large") == "1,440"
        await type_spares(pilot, "small", "1")
        assert text(app, "#total") == "2,160"
        assert fake.stored == {}  # nothing saved yet
        assert "unsaved changes" in str(app.screen.summary())


async def test_more_than_ten_spares_costs_ten_and_says_so(fake: ComputeFake) -> None:
    app = make_app(fake, start="compute", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await type_spares(pilot, "medium", "15")
        assert text(app, "#credits-medium") == "7,200"
        assert "so we keep 10 instances ready" in text(app, "#warnings")


async def test_save_answers_with_the_documents_message(fake: ComputeFake) -> None:
    app = make_app(fake, start="compute", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        await type_spares(pilot, "large", "2")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert text(app, "#message").startswith("Your compute settings are saved.")
        assert fake.stored["acme"].setting("large").spares == 2
        assert app.screen.query_one("#save", Button).disabled  # nothing left to save


async def test_the_default_sizes_switch_is_locked(fake: ComputeFake) -> None:
    fake.stored["acme"] = ComputeSettings(default_size="medium")
    app = make_app(fake, start="compute", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        switch = app.screen.query_one("#enabled-medium", OnOff)
        assert switch.locked
        assert "locked" in str(switch.render())
        switch.focus()
        await pilot.press("space")
        assert switch.value is True
        assert "first choose a different default size" in text(app, "#message")
        choices = [str(label) for label, _ in app.screen.query_one("#default", Select)._options]
        assert "Medium (1 vCPU, 4 GiB memory)" in choices


async def test_turning_off_a_size_in_use_names_service_and_workspace_and_blocks_save(
    fake: ComputeFake,
) -> None:
    app = make_app(fake, start="compute", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        switch = app.screen.query_one("#enabled-large", OnOff)
        switch.focus()
        await pilot.press("space")
        warning = text(app, "#warnings")
        assert "Size Large is in use: service web (workspace prod)" in warning
        assert app.screen.query_one("#save", Button).disabled
        await pilot.press("ctrl+s")
        assert "in use" in text(app, "#message")
        assert fake.stored == {}
        await pilot.press("space")  # back on: the warning goes
        assert "in use" not in text(app, "#warnings")


async def test_a_save_refused_by_the_fleet_names_the_user_and_changes_nothing(
    fake: ComputeFake,
) -> None:
    """Something started using the size after the tab was opened: the save itself refuses."""
    app = make_app(fake, start="compute", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        switch = app.screen.query_one("#enabled-xlarge", OnOff)
        switch.focus()
        await pilot.press("space")
        fake.users = SizeUsers(environments=(EnvironmentUse("env_2", "gpu-lab", "xlarge"),))
        await pilot.press("ctrl+s")
        await settle(pilot)
        message = text(app, "#message")
        assert "Not saved (SIZE_IN_USE)" in message
        assert "environment gpu-lab" in message
        assert "Your settings stay as they were." in message
        assert "acme" not in fake.stored


async def test_retry_after_the_settings_failed_to_load(fake: ComputeFake) -> None:
    fake.load_failures = 1
    app = make_app(fake, start="compute", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert app.screen.query_one("#load-failed").display
        assert "connection refused" in text(app, "#load-error")
        await pilot.click("#retry")
        await settle(pilot)
        assert not app.screen.query_one("#load-failed").display
        assert app.screen.query_one("#compute").display


async def test_read_only_shows_the_settings_without_save(fake: ComputeFake) -> None:
    app = make_app(fake, start="compute", tenant="acme", read_only=True)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert not app.screen.query_one("#save", Button).display
        switch = app.screen.query_one("#enabled-small", OnOff)
        switch.focus()
        await pilot.press("space", "ctrl+s")
        assert switch.value is True
        assert fake.stored == {}


@pytest.mark.parametrize(
    ("settings", "form_change", "problem"),
    [
        pytest.param(
            ComputeSettings(),
            lambda f: f.with_enabled("medium", False),
            "choose a default size",
            id="medium-off-without-a-default-asks-for-one",
        ),
        pytest.param(
            ComputeSettings(),
            lambda f: f.with_spares("small", ""),
            "Enter a number of spare instances",
            id="empty-spares",
        ),
    ],
)
def test_the_form_refuses_what_a_save_would(
    settings: ComputeSettings, form_change: Any, problem: str
) -> None:
    snapshot = ComputeSnapshot("acme", settings)
    ev = evaluate(snapshot, form_change(Form.of(settings)))
    assert not ev.can_save
    assert any(problem in p for p in ev.problems)


def test_only_enabled_sizes_are_default_choices() -> None:
    snapshot = ComputeSnapshot("acme", ComputeSettings())
    ev = evaluate(snapshot, Form.of(snapshot.settings).with_enabled("small", False))
    assert [name for name, _ in ev.default_choices] == ["medium", "large", "xlarge"]
    assert ev.lines[0].credits == "-"
    assert ev.can_save

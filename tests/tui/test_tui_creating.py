"""`n` for what a FleetConfig does not declare: services, webhooks and tokens from a template in
$EDITOR (a fake one), confirmed, then made by the API; a token is shown once, never kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input

from bcfleet.api.auth import LOCAL_OPERATOR as OP
from bcfleet.errors import InvalidInputError
from bcfleet.tui.creating import MAKERS, read_values
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.screens.form import FormScreen
from bcfleet.tui.screens.secret import ShownOnce
from tests.support.tui import local_app, settle, type_ahead
from tests.tui.test_tui_editing import Editor, said

pytestmark = pytest.mark.anyio


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Editor:
    return Editor(tmp_path, monkeypatch)


def test_a_template_with_an_unknown_field_is_refused_at_its_line_and_column() -> None:
    text = "url: https://h.example.com/x\neventTyeps: []\n"
    with pytest.raises(InvalidInputError) as raised:
        read_values(text, "w.yaml", MAKERS["webhook"])
    [error] = raised.value.details["errors"]
    assert (error["line"], error["column"]) == (2, 1)
    assert "unknown field 'eventTyeps'" in error["message"]


async def test_n_on_services_makes_a_service_after_the_confirm(
    fleet_db: Path, editor: Editor
) -> None:
    app, fleet = local_app(fleet_db, start="services")
    editor.will({"replace": [["name: new-service", "name: made-in-console"]]})
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, Confirm)
        assert "made-in-console" in app.screen.question
        await pilot.press("y")
        await settle(pilot)
        assert "Service default/made-in-console is made" in said(app)
    names = {s["name"] for s in fleet.api.services.list(OP)["items"]}
    assert "made-in-console" in names


async def test_new_token_is_shown_once_and_never_kept(fleet_db: Path, editor: Editor) -> None:
    app, fleet = local_app(fleet_db, start="tenants")
    editor.will({"replace": [["name: new-principal", "name: ci-bot"], ["role: member", "rol: x"]]},
                {"replace": [["rol: x", "role: member"]]})  # fmt: skip
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        type_ahead(app, [":", *"new token", "enter"])
        await settle(pilot)
        assert "unknown field 'rol'" in editor.opened[1]
        await pilot.press("y")
        await settle(pilot)
        assert isinstance(app.screen, ShownOnce)
        secret = app.screen.secret
        assert secret.startswith("bcf_")
        await pilot.press("enter")
        await settle(pilot)
        assert not isinstance(app.screen, ShownOnce)
        kept: list[Any] = [n.message for n in app._notifications]
        assert not any(secret in str(m) for m in kept)
    principals = fleet.api.iam.list_principals(OP, tenant_id="acme")["items"]
    assert "ci-bot" in {p["name"] for p in principals}


async def test_n_on_instances_asks_its_fields_in_a_form_then_confirms(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db, start="instances")
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        form = app.screen
        assert isinstance(form, FormScreen)
        assert form.query_one("#field-tenant", Input).value == "acme"
        form.query_one("#field-pool", Input).value = "vps-ams"
        form.query_one("#field-flavor", Input).value = "g1.small"
        await pilot.press("enter", "enter", "enter", *"formed-1", "enter")  # field by field
        await settle(pilot)
        assert isinstance(app.screen, Confirm)
        assert "name: formed-1" in app.screen.question
        await pilot.press("y")
        await settle(pilot)
        assert "Instance formed-1 is " in said(app)
    names = {i["name"] for i in fleet.api.instances.list(OP, tenant_id="acme")["items"]}
    assert "formed-1" in names


async def test_a_reservation_form_cancelled_with_esc_makes_nothing(fleet_db: Path) -> None:
    app, fleet = local_app(fleet_db, start="reservations")
    before = len(fleet.api.reservations.list(OP)["items"])
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("n")
        await settle(pilot)
        assert isinstance(app.screen, FormScreen)
        assert [f.name for f in app.screen.fields] == [
            "tenant", "pool", "gpus", "duration", "start", "spot"
        ]  # fmt: skip
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, FormScreen | Confirm)
    assert len(fleet.api.reservations.list(OP)["items"]) == before

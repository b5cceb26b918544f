"""`fleet tui --server URL` when the server goes away: one plain message, DISCONNECTED on the
Compute tab, a save that says it was not sent, and no tenant's numbers under another's name."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import Input, Static

from bcfleet.http.server import BackgroundServer
from bcfleet.tui.remote_source import RemoteSource
from bcfleet.tui.screens.compute import ComputeView
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.source import Disconnected
from bcfleet.tui.widgets.bars import StatusLine
from tests.support.tui import make_app, screen_text, settle

pytestmark = pytest.mark.anyio

Served = tuple[BackgroundServer, RemoteSource]


def text(app: Any, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def status(app: Any) -> str:
    return str(app.screen.query_one(StatusLine).render())


def test_a_server_that_is_gone_reads_as_one_plain_message(served: Served) -> None:
    server, remote = served
    assert remote.tenants()  # answering
    server.stop()
    for read in (remote.tenants, remote.now, lambda: remote.compute_settings("acme")):
        with pytest.raises(Disconnected) as gone:
            read()
        assert str(gone.value) == f"Can't reach the fleet server at {server.url}."
        assert "Errno" not in str(gone.value)


async def test_compute_save_while_disconnected_says_so_and_keeps_the_edits(
    served: Served,
) -> None:
    server, remote = served
    app = make_app(remote, start="compute", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        view = app.screen
        assert isinstance(view, ComputeView) and view.tenant == "acme"
        server.stop()
        field = view.query_one("#spares-small", Input)
        field.focus()
        await pilot.press("4")
        await pilot.press("ctrl+s")
        await settle(pilot)
        message = text(app, "#message")
        assert message.startswith(f"Not saved: Can't reach the fleet server at {server.url}.")
        assert "Errno" not in message and "Your changes are still here" in message
        assert "DISCONNECTED" in status(app)
        assert field.value == "4" and view.has_unsaved_edits()


async def test_compute_shows_disconnected_when_the_server_is_gone(served: Served) -> None:
    server, remote = served
    app = make_app(remote, start="compute", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        server.stop()
        await pilot.press("r")
        await settle(pilot)
        assert "DISCONNECTED" in status(app)
        assert app.screen.query_one("#load-failed").display
        assert "Can't reach the fleet server" in text(app, "#load-error")


async def test_a_failed_tenant_switch_never_shows_one_tenants_numbers_under_anothers_name(
    served: Served,
) -> None:
    server, remote = served
    app = make_app(remote, start="compute", tenant="acme")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        view = app.screen
        assert isinstance(view, ComputeView)
        acme_total = view.evaluation.total if view.evaluation else None
        server.stop()
        await pilot.press("ctrl+t")
        await settle(pilot)
        assert not isinstance(app.screen, Confirm)  # no edits: nothing to ask
        asked = view.tenant
        assert asked is not None and asked != "acme"
        assert f"Couldn't load {asked}'s compute settings" in text(app, "#load-error")
        assert view.evaluation is None and not view.query_one("#compute").display
        shown = "\n".join(screen_text(app))
        assert f"total {acme_total} credits" not in shown
        assert "acme" not in shown.splitlines()[0]  # the title names the tenant asked for

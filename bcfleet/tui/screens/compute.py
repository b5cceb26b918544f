"""Compute settings: document 004's Compute tab for one tenant, drawn from compute_model's Evaluation.

Loaded when the view opens (the list of what uses each size refreshes only
then, as the document says). The timer reads the stored settings too: when
they differ from what the form was loaded with (a CLI or HTTP save), a form
without edits reloads, and one with edits is marked "changed elsewhere" and
refuses to save over the newer values; a save also compares the stored
settings with the form's before it writes. Credits per month and the Total
follow every keystroke before saving; Save changes answers "Your compute
settings are saved." or names what still uses a size. The serverless pool is
shown and chosen among the vps-host pools (`settings compute set
--serverless-pool`); without one no spare instances are kept, in the CLI's
words. --read-only shows the settings without Save and with the controls off.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Grid, Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import Button, Input, Label, Select, Static

from bcfleet.domain.compute_settings import (
    NO_SERVERLESS_POOL,
    ComputeSettings,
    keeps_spares,
    serverless_pool_text,
)
from bcfleet.domain.policy import ROOT_TENANT
from bcfleet.domain.sizes import SIZE_NAMES, label
from bcfleet.domain.states import PoolKind
from bcfleet.errors import FleetError
from bcfleet.tui.compute_model import Evaluation, Form, evaluate, shapes_text
from bcfleet.tui.screens.base import ViewScreen
from bcfleet.tui.screens.confirm import Confirm
from bcfleet.tui.source import ComputeSnapshot, Disconnected, SaveOutcome
from bcfleet.tui.widgets.onoff import OnOff

NO_DEFAULT = "None chosen (Medium)"
HEADINGS = ("Size", "Enabled", "Spare instances", "Credits per month")
NARROW_HEADINGS = ("Size", "Enabled", "Spare\ninstances", "Credits\nper month")
"""Document 004's words still, on two lines, so the columns fit 80 columns."""
NARROW_BELOW = 100
"""Terminal widths under this get two-line headings and short shapes, so the tab fits 80×24."""
CHANGED_ELSEWHERE = "changed elsewhere: r reloads"
"""The title's mark on a form with edits whose tenant's stored settings changed since it loaded."""


class ChangedElsewhere(Exception):
    """A save found the stored settings no longer those the form was loaded with; none written."""

    def __init__(self, newer: ComputeSnapshot) -> None:
        super().__init__(f"{newer.tenant}'s compute settings changed elsewhere")
        self.newer = newer


class ComputeView(ViewScreen):
    TITLE = "Compute settings"
    ABOUT = (
        "A tenant's Compute tab: which instance sizes it can use (Enabled), how many spare "
        "instances to keep ready for each (0 to 10), what they cost in credits per month "
        "(spares × 720, updated as you type) and the default size for new services. The "
        "default's Enabled switch is locked. A size something still uses cannot be turned "
        "off: the warning names each service and environment. Serverless pool is the vps-host "
        "pool the spares run in; without one no spare instances are kept. Tab moves between "
        "fields, Space flips a switch, Enter leaves a spares field. Refreshing, another tenant "
        "or another view asks before unsaved changes are discarded. A change saved elsewhere "
        "reloads a form without edits, and marks one with edits 'changed elsewhere', which "
        "then does not save over it: r reloads."
    )
    CLOCK_DEPENDENT = False
    MUTATING = frozenset({"save"})

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "save", "Save changes"),
        Binding("ctrl+t", "next_tenant", "Next tenant"),
    ]

    class Saved(Message):
        def __init__(self, outcome: SaveOutcome) -> None:
            super().__init__()
            self.outcome = outcome

    class SaveFailed(Message):
        def __init__(self, error: Exception) -> None:
            super().__init__()
            self.error = error

    def __init__(self) -> None:
        super().__init__()
        self.tenant: str | None = None
        """The tenant whose settings are shown (or, after a failed load, were asked for)."""
        self._asked: str | None = None
        """The tenant a load in progress asked for; shown only once its settings arrive."""
        self.tenants: list[str] = []
        self.snapshot: ComputeSnapshot | None = None
        self.form: Form | None = None
        self.evaluation: Evaluation | None = None
        self._choices: list[tuple[str, str]] = []
        self.pools: dict[str, str] = {}
        """The vps-host pools a serverless pool can be: id → name."""
        self._pool_choices: list[tuple[str, str]] = []
        self.newer: ComputeSnapshot | None = None
        """Stored settings newer than the form's, seen while it held edits: saving is refused."""

    # -- layout -------------------------------------------------------------------------------

    def compose_body(self) -> ComposeResult:
        with VerticalScroll(id="compute"):
            with Horizontal(classes="field-row"):
                yield Label("Tenant", classes="field-label")
                yield Select[str]([], id="tenant", allow_blank=True, prompt="-", compact=True)
            with Grid(id="sizes"):
                for index, heading in enumerate(HEADINGS):
                    yield Label(heading, id=f"heading-{index}", classes="heading")
                for size in SIZE_NAMES:
                    yield Static(id=f"label-{size}", classes="size-label")
                    yield OnOff(id=f"enabled-{size}")
                    yield Input(id=f"spares-{size}", restrict=r"[0-9]*", max_length=3, compact=True)
                    yield Static(id=f"credits-{size}", classes="credits")
                yield Static("")
                yield Static("")
                yield Label("Total", classes="heading")
                yield Static(id="total", classes="credits")
            with Horizontal(classes="field-row"):
                yield Label("Default size", classes="field-label")
                yield Select[str](
                    [], id="default", allow_blank=True, prompt=NO_DEFAULT, compact=True
                )
            with Horizontal(classes="field-row"):
                yield Label("Serverless pool", classes="field-label")
                yield Select[str](
                    [], id="pool", allow_blank=True, prompt=NO_SERVERLESS_POOL, compact=True
                )
            with Horizontal(id="actions"):
                yield Button("Save changes", id="save", variant="primary", compact=True)
                yield Static(id="message")
            yield Static(id="warnings")
        with Vertical(id="load-failed"):
            yield Static(id="load-error")
            yield Button("Retry", id="retry", compact=True)

    def on_mount(self) -> None:
        self.query_one("#load-failed").display = False
        self.query_one("#compute").display = False
        if self.fleet_app.read_only:
            self.query_one("#save", Button).display = False

    def crumbs(self) -> list[str]:
        stale = [CHANGED_ELSEWHERE] if self.newer is not None else []
        return [self.TITLE] + ([self.tenant] if self.tenant else []) + stale

    def summary(self) -> Text:
        ev = self.evaluation
        if ev is None or self.snapshot is None:
            return Text("")
        text = Text(f"tenant {self.tenant} · total {ev.total} credits/month")
        if not keeps_spares(self.snapshot.settings):
            text.append(" · no serverless pool: no spares kept")
        if ev.dirty:
            text.append(" · unsaved changes", style="bold")
        return text

    # -- loading --------------------------------------------------------------------------------

    def reload_on_resume(self) -> bool:
        return self.evaluation is None or not self.evaluation.dirty

    def has_unsaved_edits(self) -> bool:
        """Whether the form holds changes not saved yet (quitting, reloading, leaving ask first)."""
        return self.evaluation is not None and self.evaluation.dirty

    def fetch(self) -> Any:
        tenants = [t["id"] for t in self.source.tenants()]
        tenant = self._asked or self.tenant or self.fleet_app.tenant or _first_tenant(tenants)
        self._asked = tenant
        pools = {p["id"]: p["name"] for p in self.source.pools() if p["kind"] == PoolKind.VPS_HOST}
        return tenants, self.source.compute_settings(tenant), pools, self.forced

    def show(self, data: Any) -> None:
        tenants, snapshot, pools, forced = data
        self.tenants, self.pools = tenants, pools
        self.query_one("#load-failed").display = False  # set_notice(None) showed every part
        self.query_one("#compute").display = True
        if not forced and self._refreshed(snapshot):
            return
        reloaded = not forced and self.snapshot is not None and snapshot.tenant == self.tenant
        self.tenant, self.snapshot, self.newer = snapshot.tenant, snapshot, None
        self._asked = None
        self.form = Form.of(snapshot.settings)
        with self.prevent(Select.Changed, Input.Changed, OnOff.Changed):
            select = self.query_one("#tenant", Select)
            select.set_options((t, t) for t in tenants)
            select.value = snapshot.tenant
            for size in SIZE_NAMES:
                self.query_one(f"#spares-{size}", Input).value = self.form.spares[size]
        self._message("Reloaded: the settings were changed elsewhere." if reloaded else "")
        self.redraw(load=True)
        self.update_title()
        if not reloaded:
            self.offer_focus(self.query_one(f"#enabled-{SIZE_NAMES[0]}", OnOff))

    def _refreshed(self, snapshot: ComputeSnapshot) -> bool:
        """A timed read of the same tenant: handled here (True) unless the form is to reload.

        Stored settings the form was loaded with change nothing; newer ones reload a
        form without edits (False) and mark one with edits stale.
        """
        if self.snapshot is None or snapshot.tenant != self.tenant or self._asked != self.tenant:
            return False
        self._asked = None
        if snapshot.settings == self.snapshot.settings:
            if self.newer is not None:  # changed back to what the form was loaded with
                self.newer = None
                self._message("")
            self.redraw()
            return True
        if not self.has_unsaved_edits():
            return False
        self._mark_stale(snapshot)
        return True

    def _mark_stale(self, newer: ComputeSnapshot) -> None:
        self.newer = newer
        self._message(
            Text(
                f"{newer.tenant}'s compute settings were changed elsewhere: saving would "
                "overwrite them. r reloads them (your edits are discarded).",
                style="bold",
            )
        )
        self.redraw()

    def show_failure(self, error: Exception, *, disconnected: bool, area: str | None) -> None:
        """The form gives way to the error and Retry; no numbers stay under the asked tenant's name."""
        if area is not None or disconnected:
            super().show_failure(error, disconnected=disconnected, area=area)
        if area is not None:
            return
        self.tenant, self._asked = self._asked or self.tenant, None
        self.snapshot = self.form = self.evaluation = None
        self.query_one("#compute").display = False
        self.query_one("#load-failed").display = True
        whose = f"{self.tenant}'s" if self.tenant else "the"
        self.query_one("#load-error", Static).update(
            Text(f"Couldn't load {whose} compute settings: {error}", style="bold")
        )
        self.offer_focus(self.query_one("#retry", Button))
        self.update_title()

    # -- drawing ----------------------------------------------------------------------------------

    def on_resize(self) -> None:
        self.redraw()

    def redraw(self, *, load: bool = False) -> None:
        if self.snapshot is None or self.form is None:
            return
        ev = self.evaluation = evaluate(self.snapshot, self.form)
        read_only = self.fleet_app.read_only
        narrow = self.app.size.width < NARROW_BELOW
        self.set_class(narrow, "-narrow")
        for index, heading in enumerate(NARROW_HEADINGS if narrow else HEADINGS):
            self.query_one(f"#heading-{index}", Label).update(heading)
        with self.prevent(Select.Changed, Input.Changed, OnOff.Changed):
            for line in ev.lines:
                size_text = Text(line.label, style="bold")
                size_text.append(f"\n{shapes_text(line.size, short=narrow)}", style="dim")
                self.query_one(f"#label-{line.size}", Static).update(size_text)
                switch = self.query_one(f"#enabled-{line.size}", OnOff)
                switch.value, switch.locked, switch.disabled = line.enabled, line.locked, read_only
                self.query_one(f"#spares-{line.size}", Input).disabled = read_only
                self.query_one(f"#credits-{line.size}", Static).update(line.credits)
            self.query_one("#total", Static).update(Text(ev.total, style="bold"))
            self._default_select(ev, load)
            self._pool_select(load)
        self.query_one("#save", Button).disabled = not ev.can_save or self.newer is not None
        self.query_one("#warnings", Static).update(_warnings(ev))
        self.update_title()
        self.update_status()

    def _default_select(self, ev: Evaluation, load: bool) -> None:
        select: Select[str] = self.query_one("#default", Select)
        select.disabled = self.fleet_app.read_only
        choices = list(ev.default_choices)
        if load or self._choices != choices:
            select.set_options((text, name) for name, text in choices)
            self._choices = choices
        wanted = self.form.default if self.form is not None else None
        if wanted is not None and any(name == wanted for name, _ in choices):
            select.value = wanted
        else:
            select.clear()
        select.prompt = "Choose a size" if ev.default_problem else NO_DEFAULT

    def _pool_select(self, load: bool) -> None:
        """The vps-host pools by name, the stored one first kept even if no longer listed."""
        select: Select[str] = self.query_one("#pool", Select)
        select.disabled = self.fleet_app.read_only
        stored = self.snapshot.settings.serverless_pool if self.snapshot is not None else None
        names = dict(self.pools)
        if stored is not None and stored not in names:
            names[stored] = stored
        choices = sorted(((name, pool) for pool, name in names.items()), key=lambda c: c[0])
        if load or self._pool_choices != choices:
            select.set_options(choices)
            self._pool_choices = choices
        wanted = self.form.pool if self.form is not None else None
        if wanted is not None:
            select.value = wanted
        else:
            select.clear()
        select.prompt = serverless_pool_text(None)

    def _message(self, text: str | Text) -> None:
        self.query_one("#message", Static).update(text)

    # -- editing --------------------------------------------------------------------------------

    def on_on_off_changed(self, event: OnOff.Changed) -> None:
        if self.form is not None and event.switch.id:
            self.form = self.form.with_enabled(
                event.switch.id.removeprefix("enabled-"), event.value
            )
            self._message("")
            self.redraw()

    def on_on_off_refused(self, event: OnOff.Refused) -> None:
        if self.fleet_app.read_only:
            self._message(Text("Read-only: settings can't be changed here.", style="bold"))
            return
        size = (event.switch.id or "").removeprefix("enabled-")
        self._message(
            Text(
                f"The Enabled switch for the default size {label(size)} is locked. "
                f"To turn {label(size)} off, first choose a different default size.",
                style="bold",
            )
        )

    def on_input_changed(self, event: Input.Changed) -> None:
        input_id = event.input.id or ""
        if self.form is not None and input_id.startswith("spares-"):
            event.stop()
            self.form = self.form.with_spares(input_id.removeprefix("spares-"), event.value)
            self._message("")
            self.redraw()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        """Enter leaves a spares field, so the next key is a view key again, not another digit."""
        if (event.input.id or "").startswith("spares-"):
            event.stop()
            self.focus_next()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if event.select.id == "tenant":
            if isinstance(event.value, str) and event.value != self.tenant:
                self._open_tenant(event.value)
        elif event.select.id == "pool" and self.form is not None and self.snapshot is not None:
            # A blank choice keeps the stored pool: a save names a pool or keeps it, as the CLI.
            chosen = event.value if isinstance(event.value, str) else None
            value = chosen or self.snapshot.settings.serverless_pool
            if value != self.form.pool:
                self.form = self.form.with_pool(value)
                self._message("")
            self.redraw()
        elif event.select.id == "default" and self.form is not None:
            value = event.value if isinstance(event.value, str) else None
            if value != self.form.default:
                self.form = self.form.with_default(value)
                self._message("")
                self.redraw()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "save":
            self.action_save()
        elif event.button.id == "retry":
            self.request_refresh(force=True)

    def commands(self) -> Iterable[SystemCommand]:
        yield from super().commands()
        if not self.fleet_app.read_only:
            yield SystemCommand(
                "Save changes", "Save the compute settings (Ctrl+S)", self.action_save
            )
            if self.tenant:  # tui/editing.py
                yield SystemCommand(
                    "Edit these compute settings as FleetConfig YAML",
                    "In $EDITOR, then plan and apply as fleet apply does",
                    self.action_edit_yaml,
                )
        for tenant in self.tenants:
            yield SystemCommand(
                f"Compute settings of {tenant}",
                "Open this tenant's Compute tab",
                lambda t=tenant: self._open_tenant(t),
            )

    def action_edit_yaml(self) -> None:
        from bcfleet.tui.editing import edit_compute

        if self.tenant:
            edit_compute(self, self.tenant)

    def _open_tenant(self, tenant: str) -> None:
        """Load another tenant's tab; its name shows once its settings have arrived."""

        def load() -> None:
            self._asked = tenant
            self.request_refresh(force=True)

        self.unless_kept(f"Opening {tenant}'s settings", load, kept=self._show_tenant_choice)

    def _show_tenant_choice(self) -> None:
        with self.prevent(Select.Changed):
            if self.tenant is not None:
                self.query_one("#tenant", Select).value = self.tenant

    def action_next_tenant(self) -> None:
        if self.tenants and self.tenant in self.tenants:
            index = (self.tenants.index(self.tenant) + 1) % len(self.tenants)
            self._open_tenant(self.tenants[index])

    def action_reload(self) -> None:
        self.unless_kept("Refreshing", lambda: self.request_refresh(force=True))

    def leave(self, go: Callable[[], None]) -> None:
        self.unless_kept("Leaving the tab", go)

    def unless_kept(
        self, doing: str, then: Callable[[], None], kept: Callable[[], None] | None = None
    ) -> None:
        """Run `then` now, or once the user agrees to discard the unsaved edits (else `kept`)."""
        if not self.has_unsaved_edits():
            then()
            return

        def answer(discard: bool | None) -> None:
            if discard and self.snapshot is not None:
                self._fill(self.snapshot.settings)
                self._message("Changes discarded.")
                then()
            elif kept is not None:
                kept()

        question = f"{self.tenant}'s compute settings have unsaved changes. {doing} discards them."
        self.app.push_screen(Confirm(question, "Discard changes"), answer)

    # -- saving ---------------------------------------------------------------------------------

    def action_save(self) -> None:
        ev = self.evaluation
        if self.snapshot is None or ev is None or self.fleet_app.read_only:
            return
        if self.newer is not None:
            self._mark_stale(self.newer)
            return
        if not ev.can_save or ev.change is None:
            reason = (ev.in_use + ev.problems)[:1] or ("Nothing to save: no changes.",)
            self._message(Text(reason[0], style="bold"))
            warnings = self.query_one("#warnings")  # on a short screen, scroll them into sight
            self.call_after_refresh(warnings.scroll_visible, animate=False)
            return
        self._message("Saving…")
        self.query_one("#save", Button).disabled = True
        self._save(self.snapshot, ev)

    @work(thread=True, exclusive=True, group="save", exit_on_error=False)
    def _save(self, snapshot: ComputeSnapshot, ev: Evaluation) -> None:
        assert ev.change is not None
        try:
            # No revision travels with a save: compare what is stored now with what the form
            # was loaded with, and write nothing over newer settings.
            stored = self.source.compute_settings(snapshot.tenant)
            if stored.settings != snapshot.settings:
                raise ChangedElsewhere(stored)
            outcome = self.source.save_compute_settings(
                snapshot.tenant, snapshot.settings, ev.change
            )
        except Exception as exc:  # noqa: BLE001 - shown in the form; nothing was changed
            self.post_message(self.SaveFailed(exc))
        else:
            self.post_message(self.Saved(outcome))

    def on_compute_view_saved(self, message: Saved) -> None:
        if self.snapshot is None:
            return
        outcome = message.outcome
        self.freshness.disconnected, self.freshness.problem = False, None  # it answered
        self.update_status()
        self.snapshot = ComputeSnapshot(self.snapshot.tenant, outcome.settings, self.snapshot.users)
        self._fill(outcome.settings)
        text = Text(outcome.message, style="bold")
        for notice in outcome.notices:
            text.append(f"\n{notice}")
        self._message(text)

    def _fill(self, settings: ComputeSettings) -> None:
        """The form back to `settings` (saved, or the edits discarded), drawn."""
        self.form = Form.of(settings)
        with self.prevent(Input.Changed):
            for size in SIZE_NAMES:
                self.query_one(f"#spares-{size}", Input).value = self.form.spares[size]
        self.redraw()

    def on_compute_view_save_failed(self, message: SaveFailed) -> None:
        error = message.error
        if isinstance(error, ChangedElsewhere):
            self._mark_stale(error.newer)
            self.update_title()
            return
        if isinstance(error, Disconnected):
            text = Text(f"Not saved: {error}", style="bold")
            text.append("\nYour changes are still here: save again once it answers.")
            super().show_failure(error, disconnected=True, area=None)
            self.update_status()
        else:
            code = error.code if isinstance(error, FleetError) else "ERROR"
            text = Text(f"Not saved ({code}): ", style="bold")
            text.append(str(error))
            text.append("\nYour settings stay as they were.")
        self._message(text)
        if self.evaluation is not None:
            self.query_one("#save", Button).disabled = not self.evaluation.can_save


def _first_tenant(tenants: list[str]) -> str:
    return next((t for t in tenants if t != ROOT_TENANT), tenants[0] if tenants else ROOT_TENANT)


def _warnings(ev: Evaluation) -> Text:
    text = Text()
    for line in ev.in_use:
        text.append("In use: ", style="bold red")
        text.append(line + "\n")
    for line in ev.problems:
        text.append("Can't save: ", style="bold yellow")
        text.append(line + "\n")
    for line in ev.notices:
        text.append("Note: ", style="bold")
        text.append(line + "\n")
    text.rstrip()
    return text

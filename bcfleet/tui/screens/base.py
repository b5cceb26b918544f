"""The base of every view: title bar, body, prompt, status line, footer, and the refresh loop.

A view fetches in a thread worker (`fetch`, never on the UI thread) and shows
the result on the UI thread (`show`). Fetches never overlap: a tick that finds
one still running is skipped. When the source's revision has not moved since
the last fetch, nothing is fetched and the view only redraws what depends on
the clock (ages, countdowns), so an idle dashboard costs next to nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar, cast

from rich.text import Text
from textual import work
from textual.app import ComposeResult, SystemCommand
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, Footer, Input, Select, Static

from bcfleet.errors import DatabaseUnavailableError, FleetError
from bcfleet.tui.source import FleetSource, NotAvailable
from bcfleet.tui.widgets.bars import Freshness, StatusLine, TitleBar
from bcfleet.tui.widgets.onoff import OnOff
from bcfleet.tui.widgets.prompt import Prompt

if TYPE_CHECKING:
    from bcfleet.tui.app import FleetApp

SPACING = 4.0
"""The timer waits this many times the last fetch's duration before fetching again."""


class ViewScreen(Screen[None]):
    """One view of the dashboard; subclasses give `compose_body`, `fetch` and `show`."""

    TITLE: ClassVar[str] = ""
    ABOUT: ClassVar[str] = ""
    AUTO_REFRESH: ClassVar[bool] = True
    CLOCK_DEPENDENT: ClassVar[bool] = True
    MUTATING: ClassVar[frozenset[str]] = frozenset()
    """Actions that change state; --read-only removes them (keys, footer, palette)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("r", "reload", "Refresh"),
        Binding("escape", "back", "Back (leaves a field; clears filter, then marks)", show=False),
        Binding("colon", "command", "Switch view by name (Tab completes)", show=False),
        Binding("y", "copy_id", "Copy the id of the row (or of the object shown)", show=False),
        Binding("left_square_bracket", "app.history(-1)", "Back in history", show=False),
        Binding("right_square_bracket", "app.history(1)", "Forward in history", show=False),
    ]

    class Loaded(Message):
        def __init__(
            self, data: Any, revision: int | None, at: datetime, *, partial: bool = False
        ) -> None:
            super().__init__()
            self.data, self.revision, self.at, self.partial = data, revision, at, partial

    class Fetching(Message):
        """A timed refresh found the state moved and fetches."""

    class Unchanged(Message):
        def __init__(self, at: datetime) -> None:
            super().__init__()
            self.at = at

    class Failed(Message):
        def __init__(self, error: Exception, *, disconnected: bool, area: str | None = None):
            super().__init__()
            self.error, self.disconnected, self.area = error, disconnected, area

    def __init__(self) -> None:
        super().__init__()
        self.data: Any = None
        self.now: datetime | None = None
        self.freshness = Freshness()
        self._revision: int | None = None
        self._busy = False
        self._asked_again = False
        """A forced refresh asked for while a fetch ran; it runs when that fetch ends."""
        self._last_ok = 0.0
        self._fetch_seconds = 0.0
        self._fetched_at = 0.0
        self.forced = False
        """Inside `fetch`: whether this fetch was asked for (r, first load) rather than timed."""

    # -- layout -------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield TitleBar(id="title")
        with Vertical(id="body"):
            yield from self.compose_body()
            yield Static(id="notice", classes="notice")
        yield Prompt(self.fleet_app.view_names())
        yield StatusLine(id="status")
        yield Footer(compact=True)

    def compose_body(self) -> ComposeResult:
        yield from ()

    def crumbs(self) -> list[str]:
        return [self.TITLE]

    def summary(self) -> Text:
        return Text("")

    def on_mount(self) -> None:
        self.fleet_app.opened.add(self)
        for field in self.query(Input):
            field.cursor_blink = self.fleet_app.cursor_blink
        self.query_one(Prompt).close()
        self.query_one("#notice", Static).display = False
        self.update_title()
        self.update_status()

    def update_title(self) -> None:
        where, trouble = self.source.describe(), self.freshness.trouble
        if self.fleet_app.identity:  # whom the console acts as, before where
            where = f"{self.fleet_app.identity} · {where}"
        for bar in self.query(TitleBar):
            bar.show(self.crumbs(), where, self.fleet_app.read_only, trouble)

    @property
    def fleet_app(self) -> FleetApp:
        return cast("FleetApp", self.app)

    @property
    def source(self) -> FleetSource:
        return self.fleet_app.source

    def check_action(self, action: str, _parameters: tuple[object, ...]) -> bool | None:
        return not (action in self.MUTATING and self.fleet_app.read_only)

    # -- the refresh loop ----------------------------------------------------------------------

    def on_screen_resume(self) -> None:
        if self.reload_on_resume():
            self.request_refresh()

    def has_unsaved_edits(self) -> bool:
        """Whether the view holds edits not saved yet (a form); quitting or leaving asks first."""
        return False

    def leave(self, go: Callable[[], None]) -> None:
        """Another view was asked for: `go` there (a form with unsaved edits asks first)."""
        go()

    def reload_on_resume(self) -> bool:
        """Whether coming back to the view fetches again (a form with edits says no)."""
        return True

    def tick(self) -> None:
        """Called by the app's timer while this view is on top.

        A view whose last fetch took T seconds waits SPACING × T after it before the
        timer fetches again, so a slow API never keeps the dashboard busy all the time.
        """
        spaced = time.monotonic() - self._fetched_at >= SPACING * self._fetch_seconds
        if self.AUTO_REFRESH and spaced:
            self.request_refresh()
        if self.AUTO_REFRESH:
            self._check_stale()

    def request_refresh(self, *, force: bool = False) -> None:
        if self._busy:
            # The running fetch may have read before the change that asks (an action's end): fetch
            # once more after it. A timed or resumed check has the running one answer it.
            self._asked_again = self._asked_again or force
            return
        self._busy = True
        force = force or self.data is None
        if force:
            self._show_loading()
        self._fetch_in_thread(force)

    def _show_loading(self) -> None:
        self.freshness.loading = True
        self.update_status()

    # Not exclusive: `_busy` keeps one fetch at a time, and the fetch asked for meanwhile starts
    # while the thread that posted Loaded may still be returning; cancelling it would say so.
    @work(thread=True, group="fetch", exit_on_error=False)
    def _fetch_in_thread(self, force: bool) -> None:
        source = self.source
        started = time.monotonic()
        try:
            revision = source.revision()
            if not force and revision is not None and revision == self._revision:
                self.post_message(self.Unchanged(source.now()))
                return
            if not force:  # a timed refresh says "refreshing…" only once it does fetch
                self.post_message(self.Fetching())
            self.forced = force
            data = self.fetch()
            self._fetch_seconds = time.monotonic() - started
            self._fetched_at = time.monotonic()
            self.post_message(self.Loaded(data, revision, source.now()))
        except NotAvailable as exc:
            self.post_message(self.Failed(exc, disconnected=False, area=exc.area))
        except DatabaseUnavailableError as exc:  # the database, not the view: the rows stay
            self.post_message(self.Failed(exc, disconnected=True))
        except FleetError as exc:
            self.post_message(self.Failed(exc, disconnected=False))
        except Exception as exc:  # noqa: BLE001 - the database or the network went away
            self.post_message(self.Failed(exc, disconnected=True))

    def deliver(self, data: Any) -> None:
        """From inside `fetch`: show what is already fetched while the rest is still coming."""
        self.post_message(self.Loaded(data, None, self.source.now(), partial=True))

    def _fetch_asked_again(self) -> None:
        """The fetch is over and shown; a forced refresh asked for meanwhile starts now."""
        if self._asked_again and not self._busy:
            self._asked_again = False
            self.request_refresh(force=True)

    def on_view_screen_loaded(self, message: Loaded) -> None:
        if not message.partial:
            self._busy = False
            self._revision = message.revision
        self.data, self.now = message.data, message.at
        self._good(message.at)
        self.freshness.loading = message.partial
        self.set_notice(None)
        self.show(message.data)
        self.update_status()
        if not message.partial:
            self.fleet_app.first_load_shown()
            self._fetch_asked_again()

    def on_view_screen_fetching(self, _message: Fetching) -> None:
        if self._busy:
            self._show_loading()

    def on_view_screen_unchanged(self, message: Unchanged) -> None:
        self._busy = False
        self._good(message.at)
        if self.CLOCK_DEPENDENT and self.data is not None:
            self.now = message.at
            self.clock_tick()
        self.update_status()
        self._fetch_asked_again()

    def on_view_screen_failed(self, message: Failed) -> None:
        self._busy = False
        self.freshness.loading = False
        self.show_failure(message.error, disconnected=message.disconnected, area=message.area)
        self.update_status()
        self._fetch_asked_again()

    def show_failure(self, error: Exception, *, disconnected: bool, area: str | None) -> None:
        """Not available in this build, disconnected (rows kept, marked), or an API error."""
        if area is not None:
            self.set_notice(f"{area}: not available in this build.")
            self.freshness = Freshness(unavailable=True)
        elif disconnected:
            self.freshness.disconnected = True
            self.freshness.problem = _one_line(error)
            self.freshness.trouble = database_trouble(error)
            self.update_title()
        else:
            self.freshness.disconnected = False
            self.set_notice(f"{getattr(error, 'code', 'ERROR')}: {error}")

    def _good(self, at: datetime) -> None:
        self._last_ok = time.monotonic()
        troubled = self.freshness.trouble is not None
        self.freshness = Freshness(updated=at)
        if troubled:
            self.update_title()

    def _check_stale(self) -> None:
        interval = self.fleet_app.refresh_seconds
        if self.freshness.updated is None or interval <= 0:
            return
        stale = time.monotonic() - self._last_ok > max(3 * interval, 10.0)
        if stale != self.freshness.stale:
            self.freshness.stale = stale
            self.update_status()

    # -- what subclasses give ------------------------------------------------------------------

    def fetch(self) -> Any:
        """Read what the view shows; runs in a worker thread."""
        return None

    def show(self, data: Any) -> None:
        """Show fetched data; runs on the UI thread."""

    def clock_tick(self) -> None:
        """The state has not changed but time has: redraw what depends on the clock."""
        self.show(self.data)

    def set_notice(self, text: str | None) -> None:
        """A message in place of the body (not available, an error), or None to show the body."""
        notice = self.query_one("#notice", Static)
        notice.update(text or "")
        notice.display = text is not None
        for child in self.query_one("#body").children:
            if child is not notice and text is not None:
                child.display = False
            elif child is not notice:
                child.display = True

    def update_status(self) -> None:
        for line in self.query(StatusLine):
            line.show(self.summary(), self.freshness)

    def commands(self) -> Iterable[SystemCommand]:
        """Command palette entries of this view (the app adds the views themselves)."""
        yield SystemCommand("Refresh", "Fetch this view again now (r)", self.action_reload)

    # -- keys -----------------------------------------------------------------------------------

    def action_reload(self) -> None:
        self.request_refresh(force=True)

    def action_command(self) -> None:
        self.query_one(Prompt).open("command")

    def action_back(self) -> None:
        """Esc: leave a form field (so view keys work again), else go back a screen."""
        if isinstance(self.focused, Input | Select | Button | OnOff):
            self.set_focus(None)
        elif len(self.app.screen_stack) > 1:
            self.app.pop_screen()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if not isinstance(event.input, Prompt) or event.input.mode != "command":
            return
        event.stop()
        prompt = event.input
        prompt.close()
        name = event.value.strip().lstrip(":").lower()
        word, _, rest = event.value.strip().lstrip(":").partition(" ")
        if word.lower() == "plan":  # :plan FILE (tui/editing.py)
            from bcfleet.tui.editing import plan_file

            plan_file(self, rest.strip())
        elif word.lower() == "new" and rest.strip():  # :new KIND (tui/editing.py)
            from bcfleet.tui.editing import create

            create(self, rest.strip().lower().removesuffix("s"))
        elif name in ("q", "quit"):
            self.fleet_app.request_quit()
        elif name:
            self.fleet_app.open_view(name)
        self.focus_body()

    def on_prompt_cancelled(self, _event: Prompt.Cancelled) -> None:
        self.query_one(Prompt).close()
        self.focus_body()

    def offer_focus(self, widget: Widget) -> None:
        """Focus a widget of the view (data came in), unless the prompt is open: what is being
        typed stays the prompt's."""
        if not self.query_one(Prompt).display:
            self.set_focus(widget)

    def focus_body(self) -> None:
        """Give the focus back to the view's main widget, at once (not after the queued keys)."""
        self.focus_next()

    # -- history and copy (app.py keeps the places; history.py) ---------------------------------

    def filter_now(self) -> str:
        """The view's filter, noted in the history when the view is left ("" without one)."""
        return ""

    def restore_filter(self, text: str) -> None:
        """Back at a place of the history, or drilled into: the view filters by `text`."""
        del text

    def id_to_copy(self) -> str | None:
        """What y copies: the id of the row under the cursor, or of the object shown."""
        return None

    def action_copy_id(self) -> None:
        """y: the id to the terminal's clipboard (OSC 52), said in a notice."""
        text = self.id_to_copy()
        if not text:
            self.notify("No id to copy here.", title="Copy", severity="warning")
            return
        self.app.copy_to_clipboard(text)
        self.notify(f"copied {text}", title="Copy")


class DrillDown(ViewScreen):
    """A screen pushed over a view (Enter on a row): q goes back to the view, as Esc does."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("q", "close", "Back")]

    def action_close(self) -> None:
        if len(self.app.screen_stack) > 1:
            self.app.pop_screen()


def _one_line(error: Exception) -> str:
    if isinstance(error, FleetError):  # in the CLI's words: its code first
        return f"{error.code}: {error.message}"[:120]
    text = str(error).strip().splitlines()
    return (text[0] if text else type(error).__name__)[:120]


TROUBLES = {
    "database_file_missing": "FILE DELETED",
    "database_file_replaced": "FILE REPLACED",
    "database_busy": "BUSY, RETRYING",
    "database_read_only": "FILE READ-ONLY",
}
"""The header's words for what stands between the console and its database (details.reason)."""


def database_trouble(error: Exception) -> str | None:
    """What the header says of a database failure: FILE DELETED, BUSY, RETRYING, …; else None."""
    if not isinstance(error, DatabaseUnavailableError):
        return None
    return TROUBLES.get(str(error.details.get("reason")), "DATABASE UNAVAILABLE")
